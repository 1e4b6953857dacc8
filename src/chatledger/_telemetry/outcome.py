"""What telemetry says about a store call, the same for every exporter.

Attributes are OpenTelemetry's database client conventions (``db.system.name``,
``db.operation.name``, ``db.namespace``, ``server.address``, ``server.port``,
``error.type``) plus a few ``chatledger.*`` ones. Nothing here reads a
message, and a URL is reduced to its host and port: no content, no password.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import ConflictError, MemoryLostError
from .._events import Operation
from .._results import Ack, History
from .._url import StoreURL

__all__ = ["Where", "appended_bytes", "outcome", "retries", "system_of"]

# db.system.name by URL scheme (OpenTelemetry's well-known values where one exists).
_SYSTEMS = {"rediss": "redis", "unix": "redis", "postgres": "postgresql",
            "dynamodb": "aws.dynamodb", "memory": "chatledger.memory"}

_OUTCOMES = {"ConflictError": "conflict", "MemoryLostError": "memory_lost",
             "InvalidMessage": "invalid", "CorruptEntryError": "corrupt",
             "BackendUnavailable": "unavailable"}


def system_of(scheme: str) -> str:
    """``redis+sentinel`` -> ``redis``, ``sqlite`` -> ``sqlite``, ..."""
    base = scheme.partition("+")[0]
    return _SYSTEMS.get(base, base)


@dataclass(frozen=True)
class Where:
    """The store's side of every span and metric: low cardinality, no secret."""

    system: str
    namespace: str
    address: str | None = None
    port: int | None = None

    @classmethod
    def of(cls, url: StoreURL, namespace: str) -> Where:
        # A cluster or Sentinel URL lists several hosts: the first is named, as
        # the one the client starts from.
        if url.hosts:
            host, port = url.hosts[0]
            return cls(system_of(url.scheme), namespace, host, port)
        if url.scheme == "unix":  # the parser keeps the socket's path without its "/"
            return cls("redis", namespace, "/" + url.path)
        return cls(system_of(url.scheme), namespace)

    def attributes(self) -> dict[str, str | int]:
        found: dict[str, str | int] = {"db.system.name": self.system, "db.system": self.system,
                                       "db.namespace": self.namespace}
        if self.address:
            found["server.address"] = self.address
        if self.port is not None:
            found["server.port"] = self.port
        return found


def outcome(operation: Operation) -> str:
    """``ok``, ``deduplicated``, ``conflict``, ``memory_lost``, ``invalid``,
    ``corrupt``, ``unavailable`` or ``error``."""
    if operation.error is not None:
        # By the nearest class named: a subclass (EncryptionKeyError is a
        # CorruptEntryError) keeps its parent's outcome.
        return next((_OUTCOMES[kind.__name__] for kind in type(operation.error).__mro__
                     if kind.__name__ in _OUTCOMES), "error")
    if isinstance(operation.result, Ack) and operation.result.deduplicated:
        return "deduplicated"
    return "ok"


def retries(operation: Operation) -> int:
    """Attempts after the first (none for a call refused before any attempt)."""
    return max(operation.attempts - 1, 0)


def appended_bytes(operation: Operation) -> int:
    """Bytes an append stored: none when it failed or every id was already there."""
    return operation.sent if outcome(operation) == "ok" else 0


def details(operation: Operation) -> dict[str, str | int | bool]:
    """The result's or the error's numbers: versions, counts; never content."""
    result, error = operation.result, operation.error
    if isinstance(result, Ack):
        return {"chatledger.version": result.version,
                "chatledger.append.deduplicated": result.deduplicated,
                "chatledger.append.bytes": operation.sent}
    if isinstance(result, History):
        return {"chatledger.version": result.version,
                "chatledger.read.messages": len(result.messages)}
    if isinstance(error, ConflictError):
        return {"chatledger.conflict.expected": error.expected,
                "chatledger.conflict.current": error.current}
    if isinstance(error, MemoryLostError):
        return {"chatledger.memory_lost.expected": error.expected,
                "chatledger.memory_lost.found": error.found}
    return {}
