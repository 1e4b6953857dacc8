"""Where the plugin's stores live: the configured URLs, resolved once per test session.

A URL is used as given, except three shorthands: ``memory://`` becomes one
named memory per test session (so code that opens the test's URL itself
reaches the same memory), ``sqlite://`` a file in the session's temporary
directory, the word ``redis`` a private ``redis-server`` and the word
``postgres`` a private PostgreSQL (``initdb`` and ``postgres``, its schema
made) and the word ``dynamodb`` a private DynamoDB emulator (moto in server
mode, a table made), each on a free loopback port, started on first use and stopped with
the session. Every test gets a
namespace of its own (unique per test and per xdist worker) and its sessions
are purged when it ends, even when it fails.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from ..._sync.store import Store, open_store
from ..._url import parse_url, redact
from .._redis_server import RedisServer

__all__ = ["DEFAULT_URLS", "DYNAMODB_WORD", "POSTGRES_WORD", "REDIS_WORD", "SERVER_WORDS",
           "Servers", "Target", "backend_id", "test_namespace"]

REDIS_WORD = "redis"
POSTGRES_WORD = "postgres"
DYNAMODB_WORD = "dynamodb"
SERVER_WORDS = (REDIS_WORD, POSTGRES_WORD, DYNAMODB_WORD)
DEFAULT_URLS = ("memory://", "sqlite://")


def backend_id(url: str) -> str:
    """A short test id for a configured URL: memory, sqlite, redis, postgres, dynamodb, or
    the URL."""
    if url in (*SERVER_WORDS, "memory://", "sqlite://"):
        return url.split(":", 1)[0]
    return redact(url)


def test_namespace(nodeid: str, worker: str) -> str:
    """A namespace no other test (or xdist worker, or run) uses."""
    digest = hashlib.sha1(nodeid.encode()).hexdigest()[:8]
    return f"pytest-{worker}-{digest}-{uuid.uuid4().hex[:6]}"


@dataclass
class Servers:
    """What the session resolved URLs to, and the servers it started for them."""

    tmp_dir: Path
    _redis: RedisServer | None = None
    _postgres: Any = None  # a PostgresServer, imported only when used (it needs psycopg)
    _dynamodb: Any = None  # a DynamoDBServer and its table's URL (it needs moto and boto3)
    _memory: str = field(default_factory=lambda: f"memory://chatledger-pytest-{uuid.uuid4().hex}")

    def resolve(self, url: str) -> str:
        if url == "memory://":
            return self._memory
        if url == "sqlite://":
            return f"sqlite:///{self.tmp_dir / 'chatledger.db'}"
        if url == REDIS_WORD:
            return self.redis().url
        if url == POSTGRES_WORD:
            return self.postgres()
        if url == DYNAMODB_WORD:
            return self.dynamodb()
        parse_url(url)  # a bad URL fails here, loudly, naming itself
        return url

    def redis(self) -> RedisServer:
        """The session's private server; a failure to start fails the test, never skips it."""
        if self._redis is None:
            self._redis = RedisServer().start()
        return self._redis

    def postgres(self) -> str:
        """The URL of the session's private PostgreSQL, its schema made; never a skip."""
        if self._postgres is None:
            from .._postgres_server import PostgresServer  # noqa: PLC0415 -- needs psycopg

            self._postgres = PostgresServer().start()
            with open_store(f"{self._postgres.url}?migrate=true"):
                pass
        url: str = self._postgres.url
        return url

    def dynamodb(self) -> str:
        """The URL of a table on the session's private DynamoDB emulator; never a skip."""
        if self._dynamodb is None:
            from .._dynamodb_server import DynamoDBServer  # noqa: PLC0415 -- needs moto

            server = DynamoDBServer().start()
            self._dynamodb = (server, server.table_url("chatledger-pytest"))
        url: str = self._dynamodb[1]
        return url

    def stop(self) -> None:
        if self._redis is not None:
            self._redis.stop()
        if self._postgres is not None:
            self._postgres.stop()
        if self._dynamodb is not None:
            self._dynamodb[0].stop()


@dataclass(frozen=True)
class Target:
    """One test's store: a URL, its own namespace, and the options of the plugin."""

    url: str
    namespace: str
    options: dict[str, Any] = field(default_factory=dict)
    disposable: bool = False  # a server of the test's own: nothing to purge
    @property
    def url_with_namespace(self) -> str:
        """The URL that code under test can open to reach this test's store."""
        in_url = {"namespace": self.namespace}
        in_url.update({k: _in_url(v) for k, v in self.options.items()
                       if k in ("ttl", "timeout", "touch_on_read", "max_message_bytes",
                                "allow_plaintext")})
        if "retry" in self.options:  # a policy is an object; its deadline fits in a URL
            in_url["retry_deadline"] = str(self.options["retry"].deadline)
        separator = "&" if "?" in self.url else "?"
        return f"{self.url}{separator}{urlencode(in_url)}"

    def open(self, **options: Any) -> Store:
        return open_store(self.url, namespace=self.namespace, **{**self.options, **options})

    @contextmanager
    def purged(self) -> Iterator[None]:
        """Remove every session of the test's namespace when the block ends."""
        try:
            yield
        finally:
            if not self.disposable:
                with self.open() as store:
                    store.purge()


def _in_url(value: Any) -> str:
    """An option as a URL's query writes it: a timedelta as its seconds (its str,
    ``1:00:00``, is no number), a bool as ``true``/``false``."""
    if isinstance(value, timedelta):
        return repr(value.total_seconds())
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
