"""Redis backends for ``redis://``, ``rediss://`` (TLS), ``unix://`` and
``redis+sentinel://`` and ``redis+cluster://`` (``rediss+cluster://``: TLS).

One concept per module:

* :mod:`.keys`: where a session lives (key layout, escaping, SCAN patterns);
* :mod:`.scripts`: the Lua scripts, the whole write (and read) path;
* :mod:`.calls`: each operation as a script call and its reply as a result;
* :mod:`.config`: URL and options as connection settings;
* :mod:`.errors`: which driver errors a retry may fix;
* :mod:`.transport`: the connection classes (sync reads bounded by the call's deadline);
* :mod:`.health`: what the server says about safety, for ``chatledger doctor``;
* :mod:`.failover`: following the master behind Sentinel;
* :mod:`.topology`: which Cluster node owns a session (redis-py's cluster map);
* :mod:`._async.client`, :mod:`._async.sentinel` and :mod:`._async.cluster`: the
  I/O, written for asyncio; :mod:`._sync` is generated from them.

Importing this package registers the backends for their schemes.
"""

from __future__ import annotations

from ._async.client import AsyncRedisBackend
from ._async.cluster import AsyncClusterBackend
from ._async.sentinel import AsyncSentinelBackend
from ._sync.client import RedisBackend
from ._sync.cluster import ClusterBackend
from ._sync.sentinel import SentinelBackend

__all__ = ["AsyncClusterBackend", "AsyncRedisBackend", "AsyncSentinelBackend", "ClusterBackend",
           "RedisBackend", "SentinelBackend"]
