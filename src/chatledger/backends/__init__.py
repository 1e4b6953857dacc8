"""Backends, chosen by URL scheme.

Built-in backends are imported lazily, the first time their scheme is used,
so that a driver that is not installed only matters to those who use it.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import ConfigError
from ..options import StoreOptions
from ..url import StoreURL
from .base import AsyncBackend, Backend, ThreadedAsyncBackend, _Registered

__all__ = ["AsyncBackend", "Backend", "build_async_backend", "build_backend"]

# scheme -> (module, pip extra that brings its driver)
_BUILTIN: dict[str, tuple[str, str | None]] = {
    "memory": ("chatledger.backends.memory", None),
    "sqlite": ("chatledger.backends.sqlite", None),
    "redis": ("chatledger.backends.redis", "redis"),
    "rediss": ("chatledger.backends.redis", "redis"),
    "unix": ("chatledger.backends.redis", "redis"),
    "redis+sentinel": ("chatledger.backends.redis", "redis"),
}


def build_backend(url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> Backend:
    """The sync backend for ``url``."""
    cls = _backend_class(url, sync=True)
    backend: Backend = cls(url, options, extra)
    return backend


def build_async_backend(
    url: StoreURL, options: StoreOptions, extra: dict[str, Any]
) -> AsyncBackend:
    """The async backend for ``url``: native, or the sync one in worker threads."""
    cls = _backend_class(url, sync=False)
    if issubclass(cls, AsyncBackend):
        backend: AsyncBackend = cls(url, options, extra)
        return backend
    return ThreadedAsyncBackend(cls(url, options, extra))


def _backend_class(url: StoreURL, *, sync: bool) -> type[Any]:
    _import_builtin(url.scheme)
    registry = _Registered.registry
    cls = registry.get((url.scheme, False)) if sync else (
        registry.get((url.scheme, True)) or registry.get((url.scheme, False)))
    if cls is None:
        known = ", ".join(sorted({scheme for scheme, _ in registry} | set(_BUILTIN)))
        raise ConfigError(f"unknown store URL scheme {url.scheme!r} in {url.redacted()!r}; "
                          f"known schemes: {known}")
    return cls


def _import_builtin(scheme: str) -> None:
    if scheme not in _BUILTIN:
        return
    module, extra = _BUILTIN[scheme]
    try:
        importlib.import_module(module)
    except ImportError as exc:
        hint = f"pip install 'chatledger[{extra}]'" if extra else "reinstall chatledger"
        raise ConfigError(f"the {scheme}:// backend needs a driver that is not installed "
                          f"({exc.name}); {hint}") from exc
