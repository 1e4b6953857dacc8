"""Backends, chosen by URL scheme.

A backend is one folder (``memory/``, ``sqlite/``, ``postgres/``, ``redis/``,
``dynamodb/``) whose backend classes declare the schemes they serve (see
:mod:`.registry`); beside the folders is what they share: the contract, the
base classes, the registry. Built-in ones are imported lazily, the first time
their scheme is used, so that a driver that is not installed only matters to
those who use it. A backend with a sync class only is served to async callers from
worker threads (:class:`.threaded.ThreadedAsyncBackend`).
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any

from .._errors import ConfigError
from .._options import StoreOptions
from .._url import StoreURL
from .._wording import install_hint
from ._async.base import AsyncBackend
from ._sync.base import Backend
from .registry import BUILTIN, Registered
from .threaded import ThreadedAsyncBackend

__all__ = ["AsyncBackend", "Backend", "build_async_backend", "build_backend", "known_schemes"]

def known_schemes() -> list[str]:
    """Every URL scheme a store can be opened on: the built-in ones and those registered."""
    return sorted({scheme for scheme, _ in Registered.registry} | set(BUILTIN))


def build_backend(url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> Backend:
    """The sync backend for ``url``."""
    cls = _backend_class(url, sync=True)
    backend: Backend = cls(url, options, extra)
    return backend


async def build_async_backend(
    url: StoreURL, options: StoreOptions, extra: dict[str, Any]
) -> AsyncBackend:
    """The async backend for ``url``: native, or the sync one in worker threads.

    The first use of a scheme imports its module and driver on the caller's
    thread (a worker thread here made async callers that must stay on the loop
    use a thread pool).
    """
    cls = _backend_class(url, sync=False)
    if issubclass(cls, AsyncBackend):
        backend: AsyncBackend = cls(url, options, extra)
        return backend
    return ThreadedAsyncBackend(cls(url, options, extra))


def _backend_class(url: StoreURL, *, sync: bool) -> type[Any]:
    _import_builtin(url.scheme)
    registry = Registered.registry
    cls = registry.get((url.scheme, False)) if sync else (
        registry.get((url.scheme, True)) or registry.get((url.scheme, False)))
    if cls is None:
        known = known_schemes()
        close = difflib.get_close_matches(url.scheme, known, n=1)
        guess = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(f"unknown store URL scheme {url.scheme!r} in {url.redacted()!r}; "
                          f"{guess}known schemes: {', '.join(known)}")
    return cls


def _import_builtin(scheme: str) -> None:
    builtin = BUILTIN.get(scheme)
    if builtin is None:
        return
    try:
        for module in builtin.modules:
            importlib.import_module(module)
    except ImportError as exc:
        extra = builtin.extra
        hint = install_hint(extra) if extra else "reinstall chatledger"
        raise ConfigError(f"the {scheme}:// backend needs a driver that is not installed "
                          f"({exc.name}); {hint}") from exc
