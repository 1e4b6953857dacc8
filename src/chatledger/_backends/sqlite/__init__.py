"""The SQLite backend for ``sqlite://`` (sync only: async callers are served from threads).

One concept per module:

* :mod:`.backend`: the backend, its reads and its transactions;
* :mod:`.connections`: the connection pool (one writer, readers per thread);
* :mod:`.writes`: group commit, the writes of the moment in one transaction;
* :mod:`.schema`: the schema and its migrations (``user_version``).

:data:`..registry.BUILTIN` names the backend module, imported on the scheme's first use.
"""
