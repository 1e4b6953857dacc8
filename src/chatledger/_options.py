"""Store options, common to every backend, and the retry policy."""

from __future__ import annotations

import importlib.util
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import Any

from ._crypto import Keyring
from ._errors import ConfigError
from ._messages import Message
from ._validation import MAX_NAMESPACE_BYTES, check_key
from ._wording import install_hint

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "URL_OPTIONS", "Clock", "RetryPolicy", "StoreOptions",
           "split_options"]

DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024
Clock = Callable[[], float]
"""Returns the wall-clock time in seconds since the epoch; used for TTLs."""
Redactor = Callable[[Message], Message]
"""Returns the message as it is to be stored (the same id), e.g. with card numbers masked."""


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """Jittered exponential backoff for :class:`~chatledger.BackendUnavailable`.

    Retrying is always safe: writes are idempotent through message ids. A retry
    starts only if an attempt as long as the longest so far can end within
    ``deadline`` seconds of the call's start; the deadline also cuts off the
    attempt under way.
    """

    # Enough attempts for the deadline, not the count, to end the retrying: a
    # failover takes seconds.
    attempts: int = 12
    backoff: float = 0.05
    max_backoff: float = 2.0
    deadline: float = 10.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigError(f"retry attempts must be at least 1, got {self.attempts}")
        if not (self.backoff >= 0 and self.max_backoff >= 0 and self.deadline > 0):
            raise ConfigError(f"retry delays must be positive: {self}")  # NaN fails too
        if not math.isfinite(self.deadline):  # a call to a server that is down never ends
            raise ConfigError(f"the retry deadline must be a finite number of seconds: {self}")

    def delays(self) -> Iterator[float]:
        """The pause before each retry: "full jitter" so that clients spread out."""
        for attempt in range(self.attempts - 1):
            yield random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))

    @classmethod
    def none(cls) -> RetryPolicy:
        """Fail on the first error: for tests that want to see every fault."""
        return cls(attempts=1)


@dataclass(frozen=True, kw_only=True)
class StoreOptions:
    """Options every backend understands.

    ``timeout`` bounds one attempt's I/O (socket timeouts, SQLite's busy wait);
    ``retry.deadline`` bounds a whole call with its retries: by default a call
    that cannot succeed gives up within 10 seconds, whatever the server does.
    """

    namespace: str = "default"
    ttl: float | None = None
    touch_on_read: bool = False
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    timeout: float = 2.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    clock: Clock = time.time
    # Telemetry (docs/observing.md): OpenTelemetry spans and metrics, and the
    # same metrics in a Prometheus registry (True: prometheus_client's default).
    tracing: bool = False
    prometheus: object = False
    encryption: Keyring | None = None
    # Read entries stored in the clear in spite of the keyring: the migration
    # window before rotate-key seals them (a store with a keyring refuses them).
    allow_plaintext: bool = False
    redact: Redactor | None = None

    def __post_init__(self) -> None:
        try:
            check_key(self.namespace, "namespace", most=MAX_NAMESPACE_BYTES)
        except (TypeError, ValueError) as exc:
            raise ConfigError(str(exc)) from None
        if self.ttl is not None:
            _check_seconds("ttl", self.ttl, MAX_TTL)
        _check_seconds("timeout", self.timeout, MAX_TIMEOUT)
        if isinstance(self.max_message_bytes, bool) or not isinstance(
            self.max_message_bytes, int
        ) or self.max_message_bytes < 1:
            raise ConfigError(
                f"max_message_bytes must be a positive int, got {self.max_message_bytes!r}"
            )
        if not isinstance(self.retry, RetryPolicy):
            raise ConfigError(f"retry must be a RetryPolicy, got {self.retry!r}")
        if not callable(self.clock):
            raise ConfigError(f"clock must be a function returning epoch seconds, "
                              f"got {self.clock!r}")
        if self.encryption is not None and not isinstance(self.encryption, Keyring):
            raise ConfigError(f"encryption must be a chatledger.Keyring, got "
                              f"{type(self.encryption).__name__}")
        if self.redact is not None and not callable(self.redact):
            raise ConfigError(f"redact must be a function taking and returning a Message, "
                              f"got {self.redact!r}")
        if not isinstance(self.touch_on_read, bool):
            raise ConfigError(f"touch_on_read must be a bool, got {self.touch_on_read!r}")
        if not isinstance(self.allow_plaintext, bool):
            raise ConfigError(f"allow_plaintext must be a bool, got {self.allow_plaintext!r}")
        _check_telemetry(self.tracing, self.prometheus)

    def expiry(self, now: float) -> float | None:
        """When a session written (or read, with touch_on_read) at ``now`` expires."""
        return None if self.ttl is None else now + self.ttl


def _check_telemetry(tracing: object, prometheus: object) -> None:
    """The switches' types, and their driver installed: a missing one says what to install."""
    if not isinstance(tracing, bool):
        raise ConfigError(f"tracing must be a bool, got {tracing!r}")
    if tracing:
        _require("opentelemetry", "tracing=True", "otel")
    if prometheus is False:
        return
    _require("prometheus_client", "prometheus=", "prometheus")
    from prometheus_client import CollectorRegistry  # noqa: PLC0415 -- an optional extra

    if prometheus is not True and not isinstance(prometheus, CollectorRegistry):
        raise ConfigError(f"prometheus must be a bool or a prometheus_client.CollectorRegistry, "
                          f"got {prometheus!r}")


def _require(module: str, option: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"{option} needs {module}: {install_hint(extra)}")


MAX_TTL = 100 * 365 * 86400.0  # a century: beyond it, datetimes stop working
MAX_TIMEOUT = 3600.0


def _check_seconds(name: str, value: object, most: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{name} must be a number of seconds, got {value!r}")
    if not 0 < value <= most:  # also refuses NaN
        raise ConfigError(f"{name} must be positive and at most {most:g} seconds, got {value}")


_COMMON = frozenset(f.name for f in fields(StoreOptions))
# Options that are Python objects: a URL's text cannot give them.
_OBJECT_OPTIONS = frozenset({"retry", "clock", "encryption", "redact"})
URL_OPTIONS = (*(f.name for f in fields(StoreOptions) if f.name not in _OBJECT_OPTIONS),
               "retry_deadline")
"""The options every backend takes that a URL's query can give, in the docs' order."""


def split_options(
    query: Mapping[str, str], kwargs: Mapping[str, Any]
) -> tuple[StoreOptions, dict[str, Any]]:
    """Merge URL query options and keyword options; return (common, backend-specific)."""
    both = sorted(set(query) & set(kwargs))
    if both:
        raise ConfigError(f"option {both[0]!r} is given both in the URL and as an argument")
    in_url = sorted(set(query) & _OBJECT_OPTIONS)
    if in_url:
        raise ConfigError(f"option {in_url[0]!r} cannot be given in a URL; pass it as a keyword")
    merged: dict[str, Any] = {**query, **kwargs}
    if "retry_deadline" in merged:
        merged["retry"] = _retry_with_deadline(merged)
    common = {k: _coerce(k, v) for k, v in merged.items() if k in _COMMON}
    extra = {k: v for k, v in merged.items() if k not in _COMMON}
    return StoreOptions(**common), extra


def _retry_with_deadline(merged: dict[str, Any]) -> RetryPolicy:
    """``retry_deadline=S``: the default policy with that deadline, writable in a URL."""
    if "retry" in merged:
        raise ConfigError("give retry or retry_deadline, not both")
    text = merged.pop("retry_deadline")
    try:
        deadline = float(text)
    except (TypeError, ValueError):
        raise ConfigError(f"option retry_deadline={text!r} is not a number of seconds") from None
    if not 0 < deadline <= MAX_TIMEOUT:
        raise ConfigError(f"retry_deadline must be positive and at most {MAX_TIMEOUT:g} "
                          f"seconds, got {text}")
    return RetryPolicy(deadline=deadline)


def _coerce(name: str, value: Any) -> Any:
    """Turn URL text (or a timedelta) into the option's type; keywords keep theirs."""
    if isinstance(value, timedelta) and name in ("ttl", "timeout"):
        return value.total_seconds()
    if not isinstance(value, str):
        return value  # checked by StoreOptions itself
    try:
        if name in ("ttl", "timeout"):
            return float(value)
        if name == "max_message_bytes":
            return int(value)
    except ValueError:
        kind = "a positive int" if name == "max_message_bytes" else "a number of seconds"
        raise ConfigError(f"{name} must be {kind}, got {value!r}") from None
    if name in ("touch_on_read", "allow_plaintext", "tracing", "prometheus"):
        return parse_bool(name, value)
    return value


def bool_option(extra: Mapping[str, Any], name: str, default: bool) -> bool:
    """A backend's boolean option: URL text read by :func:`parse_bool`, a keyword's value
    as given."""
    value = extra.get(name, default)
    return parse_bool(name, value) if isinstance(value, str) else bool(value)


def parse_bool(name: str, text: str) -> bool:
    """Read a boolean URL option."""
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"option {name}={text!r} is not a boolean (use true or false)")
