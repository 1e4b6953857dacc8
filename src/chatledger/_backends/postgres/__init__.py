"""The PostgreSQL backend for ``postgresql://`` (``postgres://``).

One concept per module:

* :mod:`.sql`: the schema and its migrations, and every statement;
* :mod:`.config`: URL and options as connection settings;
* :mod:`.io`: driver errors in our terms, and the deadline of a call;
* :mod:`.checks`: what ``chatledger doctor`` checks (role, privileges, schema);
* :mod:`._async.backend` and :mod:`._async.schema`: the I/O and ``migrate-schema``,
  written for asyncio; :mod:`._sync` is generated from them.

:data:`..registry.BUILTIN` names the backend modules, imported on the scheme's first use.
"""
