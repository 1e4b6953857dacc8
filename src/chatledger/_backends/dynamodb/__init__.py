"""The DynamoDB backend for ``dynamodb://``.

One concept per module, none with I/O:

* :mod:`.layout`: the items of a session and of the user index;
* :mod:`.items`: those items as requests of one table and namespace;
* :mod:`.transactions`: what one transaction holds, and batches cut to fit;
* :mod:`.conditions`: what a cancelled transaction says (a value, not an exception);
* :mod:`.races`: how long a writer that lost a race pauses, and when it gives up;
* :mod:`.known`: the meta items a backend remembers between appends;
* :mod:`.leases`: the lease of a large append;
* :mod:`.checks`: what ``chatledger doctor`` checks.

The requests: :mod:`.aio` (aiobotocore), the seam the async source calls, and
:mod:`.io` (boto3, with the settings and DynamoDB's errors in our terms). The
backend itself is :mod:`._async` (see :mod:`._async.backend` for its parts),
written for asyncio; :mod:`._sync` is generated from it.

:data:`..registry.BUILTIN` names the backend modules, imported on the scheme's first use.
"""
