"""A store URL and its options as redis-py connection settings; no I/O.

URLs::

    redis://[user[:password]@]host[:port][/db]
    rediss://[user[:password]@]host[:port][/db]          TLS
    unix://[user[:password]@]/path/to/redis.sock[?db=N]
    redis+sentinel://[user[:password]@]host:port[,host:port...]/service[/db]
    redis+cluster://[user[:password]@]host:port[,host:port...]     Redis Cluster
    rediss+cluster://[user[:password]@]host:port[,host:port...]    Redis Cluster over TLS

Options (URL query or keyword arguments), besides the common ones:

``db``
    the database number; for ``redis://`` the URL's path may say it instead.
    Redis Cluster has database 0 only: its URLs take no ``db``.
``max_connections``
    the pool's size (default 50). A caller waits up to ``timeout`` for a free
    connection, then gets BackendUnavailable.
``connect_timeout``
    seconds to establish a connection (default: ``timeout``, which bounds
    every read and write on the socket).
``client_name``
    the name each connection gives itself (``CLIENT SETNAME``).
``wait_replicas``
    acknowledge a write only once this many replicas confirm it (``WAIT``, on
    the same connection, right after the script; default 0: do not wait). A
    short count is reported as BackendUnavailable, and the store retries with
    the same ids, which cannot duplicate.
``wait_timeout``
    seconds ``WAIT`` may block (default 1.0); less than ``timeout``.
``ssl_ca_certs``, ``ssl_certfile``, ``ssl_keyfile``, ``ssl_cert_reqs``, ``ssl_check_hostname``
    TLS settings, ``rediss://`` only; ``ssl_cert_reqs`` is ``none``,
    ``optional`` or ``required`` (the default).

redis-py's own retries are switched off: the store's RetryPolicy retries
BackendUnavailable, and two layers of retries would multiply the time a
caller can hang.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..._errors import ConfigError
from ..._options import StoreOptions, bool_option
from ..._url import StoreURL
from ..registry import reject_unknown_options
from .calls import Replication

__all__ = ["CLUSTER_OPTIONS", "OPTIONS", "SENTINEL_OPTIONS", "ClusterSettings",
           "ConnectionSettings", "SentinelSettings", "cluster_settings", "connection_settings",
           "sentinel_settings"]

Transport = Literal["tcp", "tls", "unix"]

TLS_OPTIONS = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile", "ssl_cert_reqs",
               "ssl_check_hostname")
OPTIONS = ("db", "max_connections", "connect_timeout", "client_name", "wait_replicas",
           "wait_timeout", *TLS_OPTIONS)
SENTINEL_OPTIONS = (*(name for name in OPTIONS if name not in TLS_OPTIONS),
                    "sentinel_username", "sentinel_password")
CLUSTER_OPTIONS = tuple(name for name in OPTIONS if name != "db")
_CERT_REQS = ("none", "optional", "required")
_TRANSPORTS: dict[str, Transport] = {"redis": "tcp", "rediss": "tls", "unix": "unix",
                                     "redis+cluster": "tcp", "rediss+cluster": "tls"}
DEFAULT_MAX_CONNECTIONS = 50


@dataclass(frozen=True)
class ConnectionSettings:
    """How to connect: the transport, keyword arguments for its connection class, the pool."""

    transport: Transport
    connection: dict[str, Any]
    max_connections: int
    pool_timeout: float
    replication: Replication


@dataclass(frozen=True)
class SentinelSettings:
    """Where the sentinels are, which master they watch, and how to talk to both."""

    sentinels: list[tuple[str, int]]
    service: str
    sentinel: dict[str, Any]  # keyword arguments for connections to the sentinels
    master: ConnectionSettings  # for connections to the master, wherever it is now


@dataclass(frozen=True)
class ClusterSettings:
    """Where to find the cluster, and how to talk to each of its nodes."""

    nodes: list[tuple[str, int]]  # where to ask for the topology
    node: ConnectionSettings  # for connections to every node (no host, port or db)


def connection_settings(
    url: StoreURL, options: StoreOptions, extra: dict[str, Any]
) -> ConnectionSettings:
    """Check the URL and options; raise ConfigError before any connection is made."""
    reject_unknown_options(url, extra, OPTIONS)
    transport = _TRANSPORTS[url.scheme]
    if transport != "tls" and (tls := sorted(set(extra) & set(TLS_OPTIONS))):
        raise ConfigError(f"option {tls[0]!r} needs a rediss:// URL, not {url.scheme}://")
    path_db = None if transport == "unix" else url.path
    connection = _connection(url, options, extra, _database(url, path_db, extra))
    connection.update(_unix_path(url) if transport == "unix" else _host_port(url))
    if transport == "tls":
        connection.update(_tls(extra))
    return _settings(transport, connection, options, extra)


def sentinel_settings(
    url: StoreURL, options: StoreOptions, extra: dict[str, Any]
) -> SentinelSettings:
    """``redis+sentinel://[user:password@]host:port,host:port/service[/db]``.

    The URL's user and password are the master's; ``sentinel_username`` and
    ``sentinel_password`` are the sentinels' own, when they require one.
    """
    reject_unknown_options(url, extra, SENTINEL_OPTIONS)
    service, _, path_db = url.path.partition("/")
    if not url.hosts or not service:
        raise ConfigError(
            f"{url.redacted()!r} must name its sentinels and the master's service, e.g. "
            "redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/mymaster"
        )
    connection = _connection(url, options, extra, _database(url, path_db or None, extra))
    # The sentinels are asked one after another: share one attempt's time.
    ask = max(0.1, options.timeout / len(url.hosts))
    sentinel = {
        "socket_timeout": ask,
        "socket_connect_timeout": min(ask, connection["socket_connect_timeout"]),
        "username": extra.get("sentinel_username"),
        "password": extra.get("sentinel_password"),
    }  # and no retries: the backend passes a Retry of none
    sentinels = [(host or "localhost", port or 26379) for host, port in url.hosts]
    return SentinelSettings(sentinels, service, sentinel,
                            _settings("tcp", connection, options, extra))


def cluster_settings(
    url: StoreURL, options: StoreOptions, extra: dict[str, Any]
) -> ClusterSettings:
    """``redis+cluster://[user:password@]host:port,host:port`` (``rediss+cluster://``: TLS).

    The nodes named are where the topology is first asked for; the rest is
    found from them. Any one reachable node is enough.
    """
    reject_unknown_options(url, extra, CLUSTER_OPTIONS)
    transport = _TRANSPORTS[url.scheme]
    if not url.hosts or any(not host for host, _ in url.hosts) or url.path:
        raise ConfigError(
            f"{url.redacted()!r} must name one or more nodes and no database (a cluster has "
            "database 0 only), e.g. redis+cluster://10.0.0.1:7000,10.0.0.2:7000"
        )
    if transport != "tls" and (tls := sorted(set(extra) & set(TLS_OPTIONS))):
        raise ConfigError(f"option {tls[0]!r} needs a rediss+cluster:// URL")
    connection = _connection(url, options, extra, 0)
    del connection["db"]  # redis-py's cluster client refuses the argument
    if transport == "tls":
        connection.update(_tls(extra))
    nodes = [(host, port or 6379) for host, port in url.hosts]
    return ClusterSettings(nodes, _settings(transport, connection, options, extra))


def _connection(
    url: StoreURL, options: StoreOptions, extra: dict[str, Any], db: int
) -> dict[str, Any]:
    """Keyword arguments every connection class takes: no driver retries, bytes back."""
    return {
        "db": db,
        "username": url.username,
        "password": url.password,
        "socket_timeout": options.timeout,
        "socket_connect_timeout": _positive(extra, "connect_timeout", options.timeout, float),
        "client_name": extra.get("client_name"),
        "decode_responses": False,
        "retry_on_timeout": False,
        "retry_on_error": [],
    }


def _settings(transport: Transport, connection: dict[str, Any], options: StoreOptions,
              extra: dict[str, Any]) -> ConnectionSettings:
    pool_size = _positive(extra, "max_connections", DEFAULT_MAX_CONNECTIONS, int)
    return ConnectionSettings(transport, connection, pool_size, options.timeout,
                              _replication(extra, options))


def _replication(extra: dict[str, Any], options: StoreOptions) -> Replication:
    replicas = _count("wait_replicas", extra.get("wait_replicas", 0), "number of replicas")
    timeout = _positive(extra, "wait_timeout", min(1.0, options.timeout / 2), float)
    if timeout >= options.timeout:
        raise ConfigError(f"wait_timeout={timeout} must be less than timeout={options.timeout}: "
                          "WAIT blocks the connection, whose reads time out after timeout")
    return Replication(replicas, round(timeout * 1000))


def _host_port(url: StoreURL) -> dict[str, Any]:
    if len(url.hosts) > 1:
        raise ConfigError(
            f"{url.redacted()!r} names {len(url.hosts)} hosts; a {url.scheme}:// URL names "
            "one (for failover use redis+sentinel://, for several masters redis+cluster://)"
        )
    host, port = url.hosts[0] if url.hosts else ("", None)
    return {"host": host or "localhost", "port": port or 6379}


def _unix_path(url: StoreURL) -> dict[str, Any]:
    if any(host for host, _ in url.hosts) or not url.path:
        raise ConfigError(
            f"{url.redacted()!r}: a unix:// URL names a socket by its absolute path, "
            "e.g. unix:///run/redis/redis.sock?db=0"
        )
    return {"path": "/" + url.path}  # the URL parser keeps the path without its first "/"


def _database(url: StoreURL, path: str | None, extra: dict[str, Any]) -> int:
    from_path = None if not path else _count("db", path)
    from_option = None if "db" not in extra else _count("db", extra["db"])
    if from_path is not None and from_option is not None and from_path != from_option:
        raise ConfigError(
            f"{url.redacted()!r} says database {from_path} in its path and {from_option} "
            "in its options"
        )
    return from_path if from_path is not None else from_option or 0


def _tls(extra: dict[str, Any]) -> dict[str, Any]:
    settings = {name: extra[name] for name in TLS_OPTIONS if name in extra}
    cert_reqs = str(settings.get("ssl_cert_reqs", "required")).lower()
    if cert_reqs not in _CERT_REQS:
        raise ConfigError(f"ssl_cert_reqs={cert_reqs!r}: use one of {', '.join(_CERT_REQS)}")
    settings["ssl_cert_reqs"] = cert_reqs
    settings["ssl_check_hostname"] = bool_option(settings, "ssl_check_hostname", True)
    return settings


def _count(name: str, value: object, kind: str = "database number") -> int:
    """A count (a database number, replicas): an int, 0 or more, from URL text or a keyword."""
    try:
        number = int(str(value)) if not isinstance(value, bool) else -1
    except ValueError:
        number = -1
    if number < 0:
        raise ConfigError(f"{name}={value!r} is not a {kind} (0, 1, 2, ...)")
    return number


def _positive(extra: dict[str, Any], name: str, default: Any, kind: type[Any]) -> Any:
    """A positive number option, from URL text or a keyword."""
    value = extra.get(name, default)
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"option {name}={value!r} is not a number") from None
    if isinstance(value, bool) or number <= 0:
        raise ConfigError(f"option {name}={value!r} must be positive")
    return number
