"""How LedgerStore reads many items: search and the sweep read the newest entries
of a page of items in one backend call (``heads``), never one read per item;
list_namespaces reads the first item of each namespace (``group_heads``); all
keep every promise a read keeps (expiry, tuples, the keyring)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, MatchCondition, PutOp

from chatledger import CorruptEntryError, EncryptionKeyError, Keyring, Message, open_store
from chatledger import _events as events
from chatledger.langgraph import LedgerStore
from chatledger.langgraph._item_entries import expired_entry
from chatledger.langgraph._item_layout import item_session_id
from chatledger.langgraph._item_queries import literal_prefix
from tests.conftest import FakeClock
from tests.langgraph.conftest import backend_url


@pytest.fixture(params=["memory", "sqlite", "redis", "postgres", "dynamodb"])
def any_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, request, tmp_path)


def _memory() -> str:
    return f"memory://{uuid.uuid4().hex}"


def _names(made: list[Any]) -> list[str]:
    return [operation.name for operation in made]


def test_search_and_list_namespaces_read_a_page_of_items_per_call(any_url: str) -> None:
    with LedgerStore.from_url(any_url) as store:
        for i in range(30):
            store.put(("users", f"u{i % 3}"), f"k{i}", {"i": i})
        made: list[events.Operation] = []
        with events.listening(made.append):
            found = store.search(("users",), filter={"i": {"$gte": 10}}, limit=50)
            namespaces = store.list_namespaces(prefix=("users",))
            swept = store.sweep_ttl()
        assert sorted(item.value["i"] for item in found) == list(range(10, 30))
        assert namespaces == [("users", "u0"), ("users", "u1"), ("users", "u2")]
        assert swept == 0
        assert "read" not in _names(made)  # not one read per item
        assert set(_names(made)) == {"heads", "group_heads"}  # 30 items: a page each
        assert len(made) <= 3 * 4  # (Cluster: a page per primary), whatever the number of items


def test_list_namespaces_reads_a_head_per_namespace_not_one_per_item(
        any_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With an ordered index of session ids (memory, SQLite, PostgreSQL, DynamoDB) one
    call reads the first item of each namespace; Redis reads one per namespace and
    SCAN page. Never the 2,000 items. On moto's slower DynamoDB, 150 items and pages
    of 7 (as the contract's small_pages): a walk of every id a page at a time would
    take 22 calls, as 600 items took 2 at the page of 500, in a quarter of the writes."""
    count = 2000
    if "dynamodb" in any_url:
        monkeypatch.setattr("chatledger._backends.dynamodb.layout.PAGE", 7)
        count = 150
    with LedgerStore.from_url(any_url) as store:
        store.batch([PutOp(("users", f"u{i % 3}"), f"k{i:04d}", {"i": i}) for i in range(count)])
        store.put(("users", "u1", "deeper"), "k", {})
        made: list[events.Operation] = []
        with events.listening(made.append):
            namespaces = store.list_namespaces(prefix=("users",))
        assert namespaces == [("users", "u0"), ("users", "u1"), ("users", "u1", "deeper"),
                              ("users", "u2")]
        assert set(_names(made)) == {"group_heads"}
        read = sum(len(operation.result.heads) for operation in made)  # type: ignore[attr-defined]
        if any_url.startswith(("redis", "unix")):
            assert read <= 4 * len(made) < count / 20
        else:
            assert (len(made), read) == (1, 4)


def test_an_item_that_expired_is_not_searched_or_listed(clock: FakeClock) -> None:
    with LedgerStore(open_store(_memory(), clock=clock), owns_store=True) as store:
        store.put(("a", "old"), "k", {"v": 1}, ttl=1)
        store.put(("a", "new"), "k", {"v": 2})
        store.put(("a", "new"), "j", {"v": 3}, ttl=1)
        clock.advance(61)
        assert [item.value for item in store.search(("a",))] == [{"v": 2}]
        assert store.list_namespaces(prefix=("a",)) == [("a", "new")]
        assert store.sweep_ttl() == 2


def test_sealed_items_are_searched_and_listed_with_the_keyring_and_refused_without(
        tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sealed.db'}"
    keyring = Keyring({"k1": Keyring.new_key()}, current="k1")
    with LedgerStore.from_url(url, encryption=keyring) as store:
        store.put(("secret", "x"), "k", {"card": "4111"})
        assert [item.value for item in store.search(("secret",))] == [{"card": "4111"}]
        assert store.list_namespaces() == [("secret", "x")]
    other = Keyring({"k2": Keyring.new_key()}, current="k2")
    with LedgerStore.from_url(url, encryption=other) as store:
        with pytest.raises(EncryptionKeyError):
            store.search(("secret",))
        with pytest.raises(EncryptionKeyError):
            store.list_namespaces()


def test_list_namespaces_reads_only_under_the_literal_labels_of_its_prefix() -> None:
    with LedgerStore.from_url(_memory()) as store:
        store.put(("a", "b", "c"), "k", {})
        store.put(("z",), "k", {})
        # An entry that is no item, outside the prefix: read, it would raise.
        store.store.session(item_session_id(("z",), "bad")).append(
            [Message(role="user", content="not an item")])
        assert store.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c")]
        assert store.list_namespaces(prefix=("a",), max_depth=1) == [("a",)]


def test_the_literal_prefix_of_match_conditions() -> None:
    assert literal_prefix(None) == ()
    assert literal_prefix([MatchCondition("suffix", ("x",))]) == ()
    assert literal_prefix([MatchCondition("suffix", ("x",)),
                           MatchCondition("prefix", ("a", "b"))]) == ("a", "b")
    assert literal_prefix([MatchCondition("prefix", ("a", "*", "c"))]) == ("a",)
    assert literal_prefix([MatchCondition("prefix", ("*",))]) == ()


def test_a_key_that_is_not_text_is_refused_by_get() -> None:
    with LedgerStore.from_url(_memory()) as store, \
            pytest.raises(TypeError, match="key must be a str"):
        store.batch([GetOp(("n",), 5)])  # type: ignore[arg-type]


def test_a_search_over_more_items_than_a_page_sees_them_all() -> None:
    with LedgerStore.from_url(_memory()) as store:
        store.batch([PutOp(("many", f"n{i % 7}"), f"k{i:04d}", {"i": i}) for i in range(520)])
        made: list[events.Operation] = []
        with events.listening(made.append):
            found = store.search(("many",), limit=1000)
        assert sorted(item.value["i"] for item in found) == list(range(520))
        assert _names(made) == ["heads", "heads"]  # pages of 500
        assert len(store.list_namespaces(prefix=("many",))) == 7


def test_list_namespaces_refuses_an_entry_that_is_no_item_and_skips_an_emptied_one() -> None:
    with LedgerStore.from_url(_memory()) as store:
        store.put(("kept",), "k", {})
        store.put(("emptied",), "k", {})
        store.store.session(item_session_id(("emptied",), "k")).trim(keep_last=0)
        assert store.list_namespaces() == [("kept",)]
        store.store.session(item_session_id(("bad",), "k")).append(
            [Message(role="user", content="not an item")])
        with pytest.raises(CorruptEntryError, match="no LedgerStore item"):
            store.list_namespaces()


def test_an_entry_with_a_damaged_expiry_is_refused_by_its_expiry_check() -> None:
    entry = Message(role="system", content="", metadata={"item": 1, "exp": "soon"}, data=b"{}")
    with pytest.raises(CorruptEntryError, match="a damaged item"):
        expired_entry(entry, "lgs/a/=k", 0.0)
    assert expired_entry(Message(role="system", content="", metadata={"item": 1, "exp": 5}),
                         "lgs/a/=k", 5.0)
