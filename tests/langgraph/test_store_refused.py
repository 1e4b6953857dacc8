"""What LedgerStore cannot hold exactly is refused in LangGraph's terms (the
namespace label, the key, the value's path), never the store's session ids, and
nothing is written: a NaN is refused rather than read back as None."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chatledger import InvalidMessage
from chatledger.langgraph import LedgerStore

LONE = "\ud83d"


@pytest.fixture
def store() -> Iterator[LedgerStore]:
    with LedgerStore.from_url("memory://") as opened:
        opened.put(("kept",), "k", {"v": 1})
        yield opened


@pytest.mark.parametrize(("call", "words"), [
    (lambda s: s.put((f"a{LONE}",), "k", {}), r"^namespace label 'a\\ud83d' contains a lone"),
    (lambda s: s.put(("a",), f"k{LONE}", {}), r"^key 'k\\ud83d' contains a lone surrogate"),
    (lambda s: s.get(("a",), f"k{LONE}"), r"^key 'k\\ud83d' contains a lone surrogate"),
    (lambda s: s.delete((f"a{LONE}",), "k"), r"^namespace label 'a\\ud83d'"),
    (lambda s: s.search((f"a{LONE}",)), r"^namespace label 'a\\ud83d'"),
    (lambda s: s.list_namespaces(prefix=(f"a{LONE}",)), r"^namespace label 'a\\ud83d'"),
])
def test_labels_and_keys_that_are_not_text_are_refused_by_name(
        store: LedgerStore, call: Callable[[LedgerStore], Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        call(store)
    assert [i.key for i in store.search(())] == ["k"]


@pytest.mark.parametrize(("value", "path"), [
    ({"x": float("nan")}, "value.x"),
    ({"a": [1, {"b": float("-inf")}]}, r"value.a\[1\].b"),
    ({"t": (0.5, float("inf"))}, r"value.t\[1\]"),
])
def test_a_value_json_cannot_hold_exactly_is_refused_and_the_item_kept(
        store: LedgerStore, value: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidMessage, match=rf"item 'k'.*{path} is not a finite number"):
        store.put(("kept",), "k", value)
    item = store.get(("kept",), "k")
    assert item is not None and item.value == {"v": 1}


def test_null_and_finite_numbers_come_back_equal(store: LedgerStore) -> None:
    store.put(("kept",), "k", {"x": None, "y": [1.5, None], "z": {"w": -0.0}})
    item = store.get(("kept",), "k")
    assert item is not None and item.value == {"x": None, "y": [1.5, None], "z": {"w": -0.0}}
