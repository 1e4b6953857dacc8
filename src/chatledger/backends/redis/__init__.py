"""Redis backends for ``redis://``, ``rediss://`` (TLS) and ``unix://``.

One concept per module:

* :mod:`.keys`: where a session lives (key layout, escaping, SCAN patterns);
* :mod:`.scripts`: the Lua scripts, the whole write (and read) path;
* :mod:`.calls`: each operation as a script call and its reply as a result;
* :mod:`.config`: URL and options as connection settings;
* :mod:`.errors`: which driver errors a retry may fix;
* :mod:`.sync` and :mod:`.aio`: the I/O, with redis-py and ``redis.asyncio``;
* :mod:`.sentinel`: the same behind Sentinel, following the master.

Importing this package registers the backends for their schemes.
"""

from __future__ import annotations

from .aio import AsyncRedisBackend
from .sentinel import AsyncSentinelBackend, SentinelBackend
from .sync import RedisBackend

__all__ = ["AsyncRedisBackend", "AsyncSentinelBackend", "RedisBackend", "SentinelBackend"]
