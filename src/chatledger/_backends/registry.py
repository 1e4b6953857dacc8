"""Backends declare the URL schemes they serve; defining the class registers it.

The built-in backends' schemes are listed once, in :data:`BUILTIN`, which
says where their classes are without importing them; each built-in class
takes its ``schemes`` from there (:func:`builtin_schemes`).
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from typing import Any, ClassVar

from .._errors import ConfigError
from .._options import URL_OPTIONS, StoreOptions
from .._url import StoreURL

__all__ = ["BUILTIN", "Builtin", "Registered", "builtin_schemes", "reject_unknown_options"]


@dataclass(frozen=True)
class Builtin:
    """Where a built-in scheme's classes are, and the pip extra that brings its driver."""

    modules: tuple[str, ...]  # imported on the scheme's first use: a driver not
    extra: str | None = None  # installed only matters to those who use it


def _redis(module: str) -> Builtin:
    return Builtin((f"chatledger._backends.redis._async.{module}",
                    f"chatledger._backends.redis._sync.{module}"), "redis")


_POSTGRES = Builtin(("chatledger._backends.postgres._async.backend",
                     "chatledger._backends.postgres._sync.backend"), "postgres")
_MEMORY = Builtin(("chatledger._backends.memory._async.backend",
                   "chatledger._backends.memory._sync.backend"))

BUILTIN: dict[str, Builtin] = {
    "memory": _MEMORY,
    "sqlite": Builtin(("chatledger._backends.sqlite.backend",)),
    "redis": _redis("client"),
    "rediss": _redis("client"),
    "unix": _redis("client"),
    "redis+sentinel": _redis("sentinel"),
    "redis+cluster": _redis("cluster"),
    "rediss+cluster": _redis("cluster"),
    "postgresql": _POSTGRES,
    "postgres": _POSTGRES,
    "dynamodb": Builtin(("chatledger._backends.dynamodb._async.backend",
                          "chatledger._backends.dynamodb._sync.backend"), "dynamodb"),
}
"""Every built-in scheme: the one list, read by the registry and by the classes."""


def builtin_schemes(module: str) -> tuple[str, ...]:
    """The schemes of the backend class in built-in ``module``.

    A built-in class says ``schemes = builtin_schemes(__name__)``.
    """
    return tuple(scheme for scheme, where in BUILTIN.items() if module in where.modules)


class Registered:
    """Subclassing with ``schemes = (...)`` registers a backend class for them."""

    schemes: ClassVar[tuple[str, ...]] = ()
    # The largest stored entry the storage accepts (None: as much as memory
    # holds). A larger max_message_bytes is refused at open: otherwise the
    # server would refuse the entry mid-append, often by dropping the connection,
    # which looks like an outage and is retried until the deadline.
    max_entry_bytes: ClassVar[int | None] = None
    # (scheme, is_async) -> backend class
    registry: ClassVar[dict[tuple[str, bool], type[Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Async is what the class is, not what it is called: its operations are coroutines.
        is_async = inspect.iscoroutinefunction(getattr(cls, "append", None))
        for scheme in cls.__dict__.get("schemes", ()):
            Registered.registry[scheme, is_async] = cls

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        self.url = url
        self.options = options
        limit = self.max_entry_bytes
        if limit is not None and options.max_message_bytes > limit:
            raise ConfigError(
                f"max_message_bytes={options.max_message_bytes:,} is over the {limit:,} bytes "
                f"one {url.scheme}:// entry can hold; use at most that"
            )


def reject_unknown_options(url: StoreURL, extra: dict[str, Any], known: tuple[str, ...]) -> None:
    """Fail on an option this backend does not know: a typo must not pass silently.

    The message lists every option the scheme takes, the common ones too (a
    typo of ``timeout`` must not make ``timeout`` look unsupported), and the
    closest one to the typo.
    """
    unknown = sorted(set(extra) - set(known))
    if unknown:
        accepted = (*URL_OPTIONS, *known)
        close = difflib.get_close_matches(unknown[0], accepted, n=1)
        guess = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"unknown option {unknown[0]!r} for {url.scheme}://{guess} (options: "
            f"{', '.join(accepted)}; keyword only: retry, clock, encryption, redact)"
        )
