"""TLS with client certificates: a redis-server that asks every client for a
certificate signed by a CA made here, and rediss:// URLs that give one."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from chatledger import BackendError, open_async_store, user
from chatledger.testing._redis_server import RedisServer, free_port
from tests.redis.conftest import OpenRedis


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout", key,
             "-out", cert, "-subj", f"/CN={name}")
    return cert, key


def _signed(directory: Path, name: str, ca: tuple[Path, Path], *extra: str) -> tuple[Path, Path]:
    """A certificate for ``name`` signed by ``ca``, and its key."""
    cert, key, request = (directory / f"{name}.pem", directory / f"{name}.key",
                          directory / f"{name}.csr")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", request,
             "-subj", f"/CN={name}")
    extfile = directory / f"{name}.ext"
    extfile.write_text("\n".join(extra) + "\n", encoding="utf-8")
    _openssl("x509", "-req", "-in", request, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
             "-days", "1", "-out", cert, "-extfile", extfile)
    return cert, key


@pytest.fixture(scope="module")
def mutual_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path | int]]:
    if shutil.which("openssl") is None:  # pragma: no cover - depends on the machine
        pytest.fail("the TLS test needs the openssl command to make certificates")
    directory = tmp_path_factory.mktemp("mtls")
    ca, stranger_ca = _ca(directory, "ca"), _ca(directory, "stranger-ca")
    server = _signed(directory, "server", ca, "subjectAltName=IP:127.0.0.1")
    client = _signed(directory, "client", ca, "extendedKeyUsage=clientAuth")
    stranger = _signed(directory, "stranger", stranger_ca, "extendedKeyUsage=clientAuth")
    port = free_port()
    args = ("--tls-port", str(port), "--tls-cert-file", str(server[0]), "--tls-key-file",
            str(server[1]), "--tls-ca-cert-file", str(ca[0]), "--tls-auth-clients", "yes")
    with RedisServer(extra_args=args):
        yield {"port": port, "ca": ca[0], "cert": client[0], "key": client[1],
               "stranger_cert": stranger[0], "stranger_key": stranger[1]}


def _url(tls: dict[str, Path | int], cert: str = "cert", key: str = "key") -> str:
    return (f"rediss://127.0.0.1:{tls['port']}/0?ssl_ca_certs={tls['ca']}"
            f"&ssl_certfile={tls[cert]}&ssl_keyfile={tls[key]}")


def test_a_client_certificate_signed_by_the_ca_is_let_in(
    open_redis: OpenRedis, mutual_tls: dict[str, Path | int],
) -> None:
    store = open_redis(_url(mutual_tls))
    store.session("s").append([user("over mutual TLS")])
    assert store.session("s").read().messages[0].text == "over mutual TLS"


def test_the_async_store_gives_its_certificate_too(mutual_tls: dict[str, Path | int]) -> None:
    async def scenario() -> int:
        async with await open_async_store(_url(mutual_tls), namespace="mtls-async") as store:
            await store.session("s").append([user("over mutual TLS")])
            return (await store.session("s").read()).version

    assert asyncio.run(scenario()) == 1


@pytest.mark.parametrize("certificate", ["none", "stranger"])
def test_a_client_without_a_certificate_of_the_ca_is_refused(
    open_redis: OpenRedis, mutual_tls: dict[str, Path | int], certificate: str,
) -> None:
    url = (f"rediss://127.0.0.1:{mutual_tls['port']}/0?ssl_ca_certs={mutual_tls['ca']}"
           if certificate == "none" else _url(mutual_tls, "stranger_cert", "stranger_key"))
    store = open_redis(url)
    with pytest.raises(BackendError) as caught:
        store.session("s").append([user("let me in")])
    assert "ssl" in str(caught.value).lower() or "reset" in str(caught.value), caught.value
