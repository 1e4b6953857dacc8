"""redis://, rediss:// and unix:// URLs and options: what connects, what is refused."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from chatledger import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    open_async_store,
    open_store,
    user,
)
from chatledger._backends.redis import AsyncRedisBackend, RedisBackend
from chatledger._backends.redis.config import ConnectionSettings, connection_settings
from chatledger._options import split_options
from chatledger._url import parse_url
from chatledger.testing._proxy import FaultProxy
from chatledger.testing._redis_server import RedisServer, free_port
from tests.redis.conftest import OpenRedis


def _settings(url: str, **options: Any) -> ConnectionSettings:
    parsed = parse_url(url)
    common, extra = split_options(parsed.query, {"timeout": 2.5, **options})
    return connection_settings(parsed, common, extra)


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        ("redis://127.0.0.1:6390/0", {"pool_size": 3}, "unknown option 'pool_size'"),
        ("redis://127.0.0.1:6390/0?colour=red", {}, "unknown option 'colour'"),
        ("redis://127.0.0.1:6390/zero", {}, "'zero' is not a database number"),
        ("redis://127.0.0.1:6390/-1", {}, "'-1' is not a database number"),
        ("redis://127.0.0.1:6390/0/extra", {}, "not a database number"),
        ("redis://127.0.0.1:6390/1?db=2", {}, "database 1 in its path and 2"),
        ("redis://127.0.0.1:6390", {"db": True}, "not a database number"),
        ("redis://a:6390,b:6391/0", {}, "names 2 hosts"),
        ("redis://127.0.0.1:6390/0", {"ssl_ca_certs": "ca.pem"}, "needs a rediss:// URL"),
        ("unix:///tmp/r.sock?ssl_certfile=c.pem", {}, "needs a rediss:// URL"),
        ("rediss://127.0.0.1:6390/0?ssl_cert_reqs=maybe", {}, "ssl_cert_reqs='maybe'"),
        ("rediss://127.0.0.1:6390/0?ssl_check_hostname=perhaps", {}, "not a boolean"),
        ("redis://127.0.0.1:6390/0?max_connections=0", {}, "must be positive"),
        ("redis://127.0.0.1:6390/0?max_connections=many", {}, "is not a number"),
        ("redis://127.0.0.1:6390/0", {"max_connections": True}, "must be positive"),
        ("redis://127.0.0.1:6390/0?connect_timeout=-1", {}, "must be positive"),
        ("unix://", {}, "absolute path"),
        ("unix://localhost/tmp/r.sock", {}, "absolute path"),
    ],
)
def test_bad_urls_and_options_raise_config_error_before_connecting(
    url: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        open_store(url, **options)


def test_the_async_store_checks_the_same_way() -> None:
    with pytest.raises(ConfigError, match="unknown option 'pool_size'"):
        asyncio.run(open_async_store("redis://127.0.0.1:6390/0", pool_size=3))


def test_url_parts_become_connection_settings() -> None:
    settings = _settings("redis://alice:p%40ss@cache.local:6380/4?max_connections=7")
    assert settings.transport == "tcp"
    assert settings.max_connections == 7
    assert settings.pool_timeout == 2.5
    assert {k: settings.connection[k] for k in ("host", "port", "db", "username", "password")} \
        == {"host": "cache.local", "port": 6380, "db": 4, "username": "alice", "password": "p@ss"}
    # One attempt's I/O is bounded by the store's timeout; redis-py must not retry on its own.
    assert settings.connection["socket_timeout"] == 2.5
    assert settings.connection["socket_connect_timeout"] == 2.5
    assert settings.connection["retry_on_timeout"] is False
    assert settings.connection["retry_on_error"] == []
    assert settings.connection["decode_responses"] is False


def test_defaults_and_the_other_transports() -> None:
    plain = _settings("redis://")
    assert (plain.connection["host"], plain.connection["port"], plain.connection["db"]) == \
        ("localhost", 6379, 0)
    assert plain.max_connections == 50
    unix = _settings("unix:///run/redis.sock?db=3&connect_timeout=0.5")
    assert unix.transport == "unix"
    assert (unix.connection["path"], unix.connection["db"]) == ("/run/redis.sock", 3)
    assert unix.connection["socket_connect_timeout"] == 0.5
    assert "host" not in unix.connection
    tls = _settings("rediss://h/0?ssl_cert_reqs=NONE&ssl_check_hostname=false")
    assert tls.transport == "tls"
    assert (tls.connection["ssl_cert_reqs"], tls.connection["ssl_check_hostname"]) == \
        ("none", False)
    assert _settings("rediss://h/0").connection["ssl_cert_reqs"] == "required"
    assert _settings("redis://h/2", db="2").connection["db"] == 2


def test_both_classes_serve_the_three_schemes() -> None:
    assert RedisBackend.schemes == AsyncRedisBackend.schemes == ("redis", "rediss", "unix")
    with open_store("unix:///nonexistent/redis.sock") as store:
        assert isinstance(store._backend, RedisBackend)


def test_database_number_and_client_name_reach_the_server(
    open_redis: OpenRedis, redis_server: RedisServer
) -> None:
    store = open_redis(f"redis://{redis_server.host}:{redis_server.port}/3",
                       client_name="ledger-test")
    store.session("s").append([user("in db 3")])
    on_db3 = redis.Redis(host=redis_server.host, port=redis_server.port, db=3)
    on_db0 = redis.Redis(host=redis_server.host, port=redis_server.port, db=0)
    with on_db3, on_db0:
        pattern = f"chatledger:{{{store.namespace}:*"
        assert len(list(on_db3.scan_iter(match=pattern))) == 3
        assert list(on_db0.scan_iter(match=pattern)) == []
        names = [client["name"] for client in on_db3.client_list()]
        assert "ledger-test" in names


def test_redis_py_does_not_retry_behind_the_store(open_redis: OpenRedis,
                                                  redis_server: RedisServer) -> None:
    with FaultProxy(redis_server.host, redis_server.port) as proxy:
        store = open_redis(f"redis://{proxy.url_netloc}/0", timeout=0.3)
        store.session("s").append([user("a")])
        before = proxy.connections_accepted
        proxy.blackhole()
        with pytest.raises(BackendUnavailable):
            store.session("s").read()
        # One attempt on the pooled connection: a driver-level retry would reconnect.
        assert proxy.connections_accepted == before


def test_a_unix_socket_url_connects(open_redis: OpenRedis, tmp_path: Path) -> None:
    socket_path = tmp_path / "redis.sock"
    args = ("--unixsocket", str(socket_path), "--unixsocketperm", "700")
    with RedisServer(extra_args=args):
        store = open_redis(f"unix://{socket_path}?db=2")
        store.session("s").append([user("over a unix socket")])
        assert store.session("s").read().messages[0].text == "over a unix socket"


@pytest.fixture
def acl_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        server.command("ACL", "SETUSER", "ledger", "on", ">s3cret", "~chatledger:*", "+@all")
        server.command("ACL", "SETUSER", "stranger", "on", ">pw", "~other:*", "+@all")
        yield server


def test_acl_user_and_password(open_redis: OpenRedis, acl_server: RedisServer) -> None:
    address = f"{acl_server.host}:{acl_server.port}"
    store = open_redis(f"redis://ledger:s3cret@{address}/0")
    store.session("s").append([user("authorized")])
    assert store.session("s").read().version == 1
    assert "s3cret" not in store.url


@pytest.mark.parametrize(("credentials", "reason"), [
    ("ledger:wrong", "AuthenticationError"),  # a retry would only fail again
    ("stranger:pw", "NoPermissionError"),  # this user may not touch chatledger keys
])
def test_refused_credentials_are_a_backend_error_not_unavailable(
    open_redis: OpenRedis, acl_server: RedisServer, credentials: str, reason: str
) -> None:
    store = open_redis(f"redis://{credentials}@{acl_server.host}:{acl_server.port}/0")
    with pytest.raises(BackendError) as caught:
        store.session("s").append([user("x")])
    assert not isinstance(caught.value, BackendUnavailable)
    assert reason in str(caught.value)
    assert isinstance(caught.value.__cause__, redis.RedisError)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RedisServer, int, Path]]:
    if shutil.which("openssl") is None:  # pragma: no cover - depends on the machine
        pytest.fail("the TLS test needs the openssl command to make a certificate")
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    tls_port = free_port()
    args = ("--tls-port", str(tls_port), "--tls-cert-file", str(cert), "--tls-key-file",
            str(key), "--tls-ca-cert-file", str(cert), "--tls-auth-clients", "no")
    with RedisServer(extra_args=args) as server:
        yield server, tls_port, cert


def test_rediss_speaks_tls(open_redis: OpenRedis,
                           tls_server: tuple[RedisServer, int, Path]) -> None:
    _, port, cert = tls_server
    store = open_redis(f"rediss://127.0.0.1:{port}/0", ssl_ca_certs=str(cert))
    store.session("s").append([user("encrypted")])
    assert store.session("s").read().messages[0].text == "encrypted"


def test_rediss_refuses_an_unknown_certificate(
    open_redis: OpenRedis, tls_server: tuple[RedisServer, int, Path]
) -> None:
    _, port, _ = tls_server
    store = open_redis(f"rediss://127.0.0.1:{port}/0")  # the self-signed CA is not trusted
    with pytest.raises(BackendUnavailable, match="certificate"):
        store.session("s").read()


def test_async_rediss_speaks_tls(tls_server: tuple[RedisServer, int, Path]) -> None:
    _, port, cert = tls_server

    async def scenario() -> int:
        url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={cert}"
        async with await open_async_store(url, namespace="tls-async") as store:
            await store.session("s").append([user("encrypted")])
            return (await store.session("s").read()).version

    assert asyncio.run(scenario()) == 1
