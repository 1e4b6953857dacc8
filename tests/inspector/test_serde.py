"""Threads written with another serializer (LangGraph's encrypting one): the inspector
reads them with the serializer it is given (``chatledger serve --serde``); without it,
each checkpoint is shown as not loading with the serializer it was read with."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from click.testing import CliRunner
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from starlette.testclient import TestClient

from chatledger._cli import main
from chatledger._inspector.app import inspector_app

from ._data import CHAT_THREAD, NAMESPACE, run_chat_thread

KEY = b"0123456789abcdef0123456789abcdef"  # AES-256
FACTORY = "langgraph.checkpoint.serde.encrypted:EncryptedSerializer.from_pycryptodome_aes"
ANSWER = "Order 123 has shipped"


@pytest.fixture
def encrypted(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'encrypted.db'}"
    run_chat_thread(url, serde=EncryptedSerializer.from_pycryptodome_aes(key=KEY))
    return url


def _thread_page(app: Any) -> str:
    with TestClient(app, base_url="http://127.0.0.1:8484") as client:  # as served: loopback
        page = client.get("/thread", params={"id": CHAT_THREAD})
    assert page.status_code == 200
    return html.unescape(page.text)


def test_an_encrypted_thread_reads_with_its_serializer(encrypted: str) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=KEY)
    text = _thread_page(inspector_app(encrypted, namespace=NAMESPACE, serde=serde))
    assert ANSWER in text
    assert 'class="msg damaged"' not in text


def test_without_it_each_checkpoint_does_not_load_with_langgraph_s_own(encrypted: str) -> None:
    text = _thread_page(inspector_app(encrypted, namespace=NAMESPACE))
    reasons = re.findall(r"cannot be decoded: checkpoint '[^']+': ([^<\n]*)", text)
    assert reasons and set(reasons) == {
        "its checkpoint does not load with the serializer JsonPlusSerializer"}
    assert ANSWER not in text


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What ``chatledger serve`` would serve: the thread page of the app it made,
    instead of listening (the listening itself is tests/cli/test_serve.py's)."""
    pages: list[str] = []

    def run(server: uvicorn.Server, sockets: Any = None) -> None:
        for listening in sockets or ():
            listening.close()
        pages.append(_thread_page(server.config.app))

    monkeypatch.setattr(uvicorn.Server, "run", run)
    return pages


def test_a_serializer_class_is_made_not_used_as_one(tmp_path: Path, served: list[str]) -> None:
    url = f"sqlite:///{tmp_path / 'plain.db'}"
    run_chat_thread(url)
    result = CliRunner().invoke(main, [
        "serve", url, "--namespace", NAMESPACE, "--port", "0",
        "--serde", "langgraph.checkpoint.serde.jsonplus:JsonPlusSerializer"])
    assert result.exit_code == 0, result.output
    [page] = served
    assert ANSWER in page and 'class="msg damaged"' not in page


def test_serve_reads_threads_with_the_serializer_it_names(
        encrypted: str, served: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGGRAPH_AES_KEY", KEY.decode())
    result = CliRunner().invoke(main, ["serve", encrypted, "--namespace", NAMESPACE,
                                       "--port", "0", "--serde", FACTORY])
    assert result.exit_code == 0, result.output
    [page] = served
    assert ANSWER in page and 'class="msg damaged"' not in page


@pytest.mark.parametrize(("spec", "said"), [
    ("no_such_module:serde", "cannot find no_such_module:serde: No module named"),
    ("json:no_such_name", "cannot find json:no_such_name: module 'json' has no attribute"),
    ("json", "'json' names no object: give module:name"),
    ("os:getcwd", "os:getcwd is not a LangGraph serializer (it has no dumps_typed and "
                  "loads_typed), nor a callable that returns one"),
    (FACTORY, f"cannot make the serializer {FACTORY}: ValueError: "),
])
def test_a_serializer_that_cannot_be_had_is_refused_before_serving(
        encrypted: str, served: list[str], monkeypatch: pytest.MonkeyPatch, spec: str,
        said: str) -> None:
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)  # the factory's key: missing
    result = CliRunner().invoke(main, ["serve", encrypted, "--port", "0", "--serde", spec])
    assert result.exit_code == 2
    assert said in result.output
    assert served == []
