"""LedgerStore's arguments are checked in LangGraph's terms before anything runs:
a TTL of 0 minutes would store items already expired (every put lost without a
word), a negative limit would slice from the end; each is refused by name and
the store keeps what it held."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chatledger.langgraph import LedgerStore


def _embed(texts: list[str]) -> list[list[float]]:
    return [[1.0, 0.0, 0.0] for _ in texts]


@pytest.mark.parametrize(("options", "error", "words"), [
    ({"ttl": {"default_ttl": 0}}, ValueError, r"ttl\['default_ttl'\] must be a positive"),
    ({"ttl": {"default_ttl": -1}}, ValueError, r"ttl\['default_ttl'\] must be a positive"),
    ({"ttl": {"default_ttl": float("inf")}}, ValueError, r"ttl\['default_ttl'\].*got inf"),
    ({"ttl": {"default_ttl": 1e300}}, ValueError,
     r"ttl\['default_ttl'\] must be a positive number of minutes, at most 5\.256e\+07 "
     r"\(a century\), or None, got 1e\+300"),
    ({"ttl": {"sweep_interval_minutes": float("nan")}}, ValueError,
     r"ttl\['sweep_interval_minutes'\].*got nan"),
    ({"ttl": {"default_ttl": "5"}}, TypeError, r"ttl\['default_ttl'\] must be a number"),
    ({"ttl": {"refresh_on_read": "yes"}}, TypeError, r"ttl\['refresh_on_read'\] must be a bool"),
    ({"ttl": 5}, TypeError, r"ttl must be a TTLConfig .* got int"),
    ({"index": {"embed": _embed}}, ValueError, r"index\['dims'\] must be a positive int"),
    ({"index": {"dims": "3", "embed": _embed}}, ValueError, r"index\['dims'\].*got '3'"),
    ({"index": {"dims": True, "embed": _embed}}, ValueError, r"index\['dims'\].*got True"),
    ({"index": {"dims": 3}}, ValueError, r"index\['embed'\] is required"),
    ({"index": [3]}, TypeError, r"index must be an IndexConfig"),
])
def test_a_store_opened_with_a_config_it_cannot_keep_is_refused(
        options: dict[str, Any], error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        LedgerStore.from_url("memory://", **options).__enter__()


@pytest.fixture
def store() -> Iterator[LedgerStore]:
    with LedgerStore.from_url("memory://", ttl={"default_ttl": 5}) as opened:
        opened.put(("a",), "k", {"v": 1})
        yield opened


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda s: s.put(("a",), "k", {}, ttl=0), ValueError, r"^ttl must be a positive"),
    (lambda s: s.put(("a",), "k", {}, ttl=-5), ValueError, r"^ttl must be a positive"),
    (lambda s: s.put(("a",), "k", {}, ttl=float("nan")), ValueError, r"^ttl .* got nan"),
    (lambda s: s.put(("a",), "k", {}, ttl=1e300), ValueError,
     r"^ttl must be a positive number of minutes, at most 5\.256e\+07 \(a century\)"),
    (lambda s: s.put(("a",), "k", {}, ttl=100 * 525_600 + 1), ValueError, r"^ttl .* got 52560001"),
    (lambda s: s.put(("a",), "k", [1, 2]), TypeError, r"value of item 'k' must be a dict"),
    (lambda s: s.put(("a",), "k", {}, index=5), TypeError, r"^index must be False, None"),
    (lambda s: s.search(("a",), limit=-1), ValueError, r"^limit must be 0 or more, got -1"),
    (lambda s: s.search(("a",), offset=-1), ValueError, r"^offset must be 0 or more"),
    (lambda s: s.search(("a",), limit="2"), TypeError, r"^limit must be an int, got str"),
    (lambda s: s.search(("a",), filter=[1]), TypeError, r"^filter must be a dict"),
    (lambda s: s.search(("a",), query=5), TypeError, r"^query must be a str"),
    (lambda s: s.list_namespaces(max_depth=0), ValueError, r"^max_depth must be at least 1"),
    (lambda s: s.list_namespaces(limit=-1), ValueError, r"^limit must be 0 or more"),
    (lambda s: s.list_namespaces(offset=True), TypeError, r"^offset must be an int"),
])
def test_an_operation_with_arguments_it_cannot_keep_is_refused_and_nothing_changes(
        store: LedgerStore, call: Callable[[LedgerStore], Any], error: type[Exception],
        words: str) -> None:
    with pytest.raises(error, match=words):
        call(store)
    item = store.get(("a",), "k")
    assert item is not None and item.value == {"v": 1}


@pytest.mark.parametrize(("embed", "words"), [
    (lambda texts: None, r"index\['embed'\] returned NoneType for 2 texts"),
    (lambda texts: [[1.0, 0.0, 0.0]], r"index\['embed'\] returned 1 vectors for 2 texts"),
    (lambda texts: [[1.0, 0.0] for _ in texts], r"an embedding has 2 dimensions, "
                                                 r"index\['dims'\] is 3"),
])
def test_an_embed_that_answers_wrongly_is_named_and_the_item_not_stored(
        embed: Callable[[list[str]], Any], words: str) -> None:
    with LedgerStore.from_url("memory://", index={"dims": 3, "embed": embed}) as store:
        with pytest.raises(ValueError, match=words):
            store.put(("a",), "k", {"a": "x", "b": "y"}, index=["a", "b"])
        assert store.get(("a",), "k") is None


def test_a_tuple_of_vectors_is_taken_as_a_list_is() -> None:
    with LedgerStore.from_url("memory://", index={
            "dims": 3, "embed": lambda texts: tuple([1.0, 0.0, 0.0] for _ in texts)}) as store:
        store.put(("a",), "k", {"text": "x"})
        assert [i.key for i in store.search(("a",), query="x")] == ["k"]
