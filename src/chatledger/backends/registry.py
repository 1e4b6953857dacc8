"""Backends declare the URL schemes they serve; defining the class registers it."""

from __future__ import annotations

from typing import Any, ClassVar

from ..errors import ConfigError
from ..options import StoreOptions
from ..url import StoreURL

__all__ = ["Registered", "reject_unknown_options"]


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
        is_async = any(base.__name__ == "AsyncBackend" for base in cls.__mro__)
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
    """Fail on an option this backend does not know: a typo must not pass silently."""
    unknown = sorted(set(extra) - set(known))
    if unknown:
        accepted = ", ".join(known) or "none besides the common ones"
        raise ConfigError(
            f"unknown option {unknown[0]!r} for {url.scheme}:// (backend options: {accepted})"
        )
