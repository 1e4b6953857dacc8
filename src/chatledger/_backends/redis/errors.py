"""Which Redis failures a retry may fix: the driver's exceptions as chatledger's.

``BackendUnavailable`` (retried by the store) for a server that is down,
unreachable, hung past the timeout, loading its data, busy with a script,
failing over or refusing writes (read-only, out of memory, unable to persist);
``BackendError`` for everything else, which a retry would only repeat: a wrong
password, a missing permission, a bug.
"""

from __future__ import annotations

import re
from types import TracebackType

from redis import exceptions as redis_errors

from ..._errors import BackendError, BackendUnavailable

__all__ = ["DRIVER_ERRORS", "classify", "translated"]

# Error replies that mean "not now": a script is running, the data set is
# loading, this node is a replica or has no master, the cluster is resharding
# or down, persistence or replication cannot keep up with writes.
UNAVAILABLE_REPLIES = (
    "BUSY", "LOADING", "READONLY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "MISCONF",
    "NOREPLICAS",
)
# redis-py strips the prefix of the replies it has a class for; match the class then.
_UNAVAILABLE_CLASSES: tuple[type[Exception], ...] = (
    redis_errors.ConnectionError,  # refused, reset, closed mid-reply, pool exhausted
    redis_errors.TimeoutError,
    redis_errors.BusyLoadingError,
    redis_errors.ReadOnlyError,
    redis_errors.TryAgainError,
    redis_errors.ClusterDownError,  # MasterDownError is one
    redis_errors.OutOfMemoryError,  # full under noeviction: refusing writes until keys go
    OSError,  # a socket error the driver did not wrap
)
# Connection errors that no retry fixes: the credentials are wrong.
_REFUSED_CLASSES = (redis_errors.AuthenticationError, redis_errors.AuthorizationError)


def classify(exc: Exception, where: str) -> BackendError:
    """The chatledger error for a driver exception; raise it ``from exc``."""
    message = f"redis {where}: {type(exc).__name__}: {_text(exc)}"
    if isinstance(exc, redis_errors.RedisClusterException):
        return _cluster_error(exc, message, where)
    if isinstance(exc, _REFUSED_CLASSES):
        return BackendError(message)
    if isinstance(exc, _UNAVAILABLE_CLASSES):
        return BackendUnavailable(message)
    if isinstance(exc, redis_errors.ResponseError) and _code(exc) in UNAVAILABLE_REPLIES:
        return BackendUnavailable(message)
    return BackendError(message)


def _cluster_error(exc: Exception, message: str, where: str) -> BackendError:
    """The cluster client's own errors: asking for the topology failed, or a slot has no owner.

    It says why in its cause: no node reachable (a retry may fix it), a wrong
    password, or nodes that are not in cluster mode (no retry fixes those).
    """
    cause = exc.__cause__
    if isinstance(cause, (redis_errors.RedisError, OSError)):
        return type(classify(cause, where))(message)
    if isinstance(cause, redis_errors.RedisClusterException) or "not enabled" in str(exc):
        return BackendError(f"{message} (is it a Redis Cluster? for one server use redis://)")
    return BackendUnavailable(message)  # e.g. a slot not covered while a failover runs


# How redis-py's Sentinel lists the sentinels that failed in "No master found for
# 'svc' : <client repr> - <error repr>, ...": the client's whole repr (~1 KB of
# connection settings) with its host and port somewhere inside.
_SENTINEL_FAILURE = re.compile(r"<redis\.[\w.]*Redis\((.*?)\)> - (.+?)(?=, <redis\.|$)", re.DOTALL)
_HOST_PORT = re.compile(r"\bhost=([^,]+),port=(\d+)")


def _text(exc: Exception) -> str:
    """The driver's message; Sentinel's "No master found" made one short line."""
    text = str(exc)
    if type(exc).__name__ != "MasterNotFoundError" or " : <redis." not in text:
        return text
    head, _, failures = text.partition(" : ")
    said = []
    for client, error in _SENTINEL_FAILURE.findall(failures):
        address = _HOST_PORT.search(client)
        who = f"{address[1]}:{address[2]}" if address else "a sentinel"
        said.append(f"{who} does not answer as a Sentinel ({error.strip()})")
    return f"{head}: {'; '.join(said)}" if said else text


def _code(exc: Exception) -> str:
    """The error code of a reply: its first word, e.g. BUSY in "BUSY Redis is busy..."."""
    return str(exc).split(" ", 1)[0]


# What translated() (or a backend's own ``except``) turns into chatledger's errors.
DRIVER_ERRORS = (redis_errors.RedisError, redis_errors.RedisClusterException, OSError)


def translated(where: str) -> _Translated:
    """Raise the driver's exceptions as chatledger's, keeping the original as the cause."""
    return _Translated(where)


class _Translated:
    """A class, not a generator: it wraps every call on the hot path."""

    __slots__ = ("where",)

    def __init__(self, where: str) -> None:
        self.where = where

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if isinstance(exc, DRIVER_ERRORS):
            raise classify(exc, self.where) from exc
