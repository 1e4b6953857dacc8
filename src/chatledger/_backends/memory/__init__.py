"""The in-process backend for ``memory://``.

* :mod:`.state`: the memories, shared by name within the process;
* :mod:`._async.backend`: the backend, written for asyncio; :mod:`._sync` is
  generated from it.

:data:`..registry.BUILTIN` names the backend modules, imported on the scheme's first use.
"""
