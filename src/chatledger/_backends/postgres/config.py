"""A ``postgresql://`` URL and its options as psycopg settings; no I/O.

URLs::

    postgresql://[user[:password]@]host[:port][,host[:port]...]/dbname[?option=value...]
    postgres://...                                   the same

Options (URL query or keyword arguments), besides the common ones:

``schema``
    the schema that holds chatledger's tables (default ``chatledger``): any
    name of 1 to 63 bytes of UTF-8 but one holding NUL or ``%`` (quoted in
    every statement, so case, spaces and quotes are kept as given).
``migrate``
    create or upgrade the tables when the store opens (default false:
    ``chatledger migrate-schema URL`` does it, with rights the application's
    role need not have). Without it, opening a database whose schema is
    missing or older fails with ConfigError saying what to run.
``max_connections``
    the pool's size (default 20). A caller waits up to ``timeout`` for a free
    connection, then gets BackendUnavailable.
``application_name``
    what the connections call themselves in ``pg_stat_activity`` (default
    ``chatledger``).
``sslmode``, ``sslrootcert``, ``sslcert``, ``sslkey``, ``sslpassword``, ``sslcrl``, ...
    TLS and the other libpq connection parameters of :data:`LIBPQ_OPTIONS`,
    passed to libpq as they are.

The connect timeout is the store's ``timeout`` (libpq counts whole seconds, at
least 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from psycopg.conninfo import make_conninfo

from ..._errors import ConfigError
from ..._options import StoreOptions, bool_option
from ..._url import StoreURL
from ..registry import reject_unknown_options

__all__ = ["LIBPQ_OPTIONS", "OPTIONS", "PostgresSettings", "postgres_settings", "quote_name"]

LIBPQ_OPTIONS = (
    "sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword", "sslcrl", "sslcrldir",
    "sslnegotiation", "sslsni", "channel_binding", "gssencmode", "target_session_attrs",
    "application_name", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "passfile", "options", "host", "port",
)
OPTIONS = ("schema", "migrate", "max_connections", *LIBPQ_OPTIONS)
DEFAULT_SCHEMA = "chatledger"
DEFAULT_MAX_CONNECTIONS = 20
_NAME_BYTES = 63  # PostgreSQL's longest identifier (NAMEDATALEN - 1)


@dataclass(frozen=True)
class PostgresSettings:
    """How to connect (a libpq conninfo string), where the tables are, the pool."""

    conninfo: str
    schema: str
    migrate: bool
    max_connections: int
    timeout: float


def postgres_settings(url: StoreURL, options: StoreOptions,
                      extra: dict[str, Any]) -> PostgresSettings:
    """Check the URL and options; the settings to connect with."""
    reject_unknown_options(url, extra, OPTIONS)
    schema = _schema(str(extra.get("schema", DEFAULT_SCHEMA)))
    return PostgresSettings(
        conninfo=_conninfo(url, options, extra),
        schema=schema,
        migrate=bool_option(extra, "migrate", False),
        max_connections=_max_connections(extra),
        timeout=options.timeout,
    )


def _schema(name: str) -> str:
    """A schema name every statement can hold, quoted (:func:`quote_name`): any text
    but NUL, of at most 63 bytes (PostgreSQL would cut a longer name short), and
    without ``%``: the name is part of statements run with parameters and without,
    and psycopg reads ``%`` as a placeholder's start in the former only, so no one
    spelling of it is right in both."""
    size = len(name.encode("utf-8", "surrogatepass"))
    if not name or "\x00" in name or size > _NAME_BYTES:
        raise ConfigError(f"schema={name!r}: name a schema of 1 to {_NAME_BYTES} bytes of "
                          f"UTF-8 without NUL (this one is {size} bytes)")
    if "%" in name:
        raise ConfigError(f"schema={name!r}: a schema name cannot hold '%' (psycopg reads it "
                          "as the start of a placeholder); name one without it")
    return name


def quote_name(name: str) -> str:
    """``name`` as a quoted SQL identifier: data, never SQL."""
    return '"' + name.replace('"', '""') + '"'


def _conninfo(url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> str:
    params: dict[str, Any] = {"application_name": "chatledger"}
    hosts = [host for host, _ in url.hosts if host]
    if hosts:
        params["host"] = ",".join(hosts)
        params["port"] = ",".join(str(port or 5432) for _, port in url.hosts)
    if url.path:
        params["dbname"] = url.path
    if url.username:
        params["user"] = url.username
    if url.password is not None:
        params["password"] = url.password
    params.update({k: str(v) for k, v in extra.items() if k in LIBPQ_OPTIONS})
    params["connect_timeout"] = max(2, math.ceil(options.timeout))
    return make_conninfo("", **params)  # every key is one libpq knows: it cannot refuse


def _max_connections(extra: dict[str, Any]) -> int:
    value = extra.get("max_connections", DEFAULT_MAX_CONNECTIONS)
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if isinstance(value, bool) or count < 1:
        raise ConfigError(f"max_connections={value!r}: give a positive number of connections")
    return count
