"""The DynamoDB backend for ``dynamodb://``.

One concept per module:

* :mod:`.layout`: the items of a session and of the user index;
* :mod:`.io`: URL and options as settings, errors in our terms, the table's
  spec, and the sync requests (boto3);
* :mod:`.aio`: the async requests (aiobotocore), the seam the async source calls;
* :mod:`.checks`: what ``chatledger doctor`` checks;
* :mod:`._async.backend`: the backend, written for asyncio; :mod:`._sync` is
  generated from it.

:data:`..registry.BUILTIN` names the backend modules, imported on the scheme's first use.
"""
