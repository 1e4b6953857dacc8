"""What LedgerStore cannot hold exactly is refused in LangGraph's terms (the
namespace label, the key, the value's path), never the store's session ids, and
nothing is written: a NaN is refused rather than read back as None."""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from decimal import Decimal
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
    ({"t": [0.5, float("inf")]}, r"value.t\[1\]"),
])
def test_a_value_json_cannot_hold_exactly_is_refused_and_the_item_kept(
        store: LedgerStore, value: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidMessage, match=rf"item 'k'.*{path} is not a finite number"):
        store.put(("kept",), "k", value)
    item = store.get(("kept",), "k")
    assert item is not None and item.value == {"v": 1}


class _Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class _Point:
    x: int


@pytest.mark.parametrize(("value", "words"), [
    ({"when": datetime(2020, 1, 1, tzinfo=timezone.utc)},
     r"value.when is a datetime, which JSON would return as a str"),
    ({"pair": (1, 2)}, r"value.pair is a tuple, which JSON would return as a list"),
    ({"a": [1, {"id": uuid.UUID(int=1)}]}, r"value.a\[1\].id is a UUID, which JSON would"),
    ({"c": _Colour.RED}, r"value.c is a _Colour, which JSON would return as a str"),
    ({"p": _Point(1)}, r"value.p is a _Point, which JSON would return as a dict"),
    ({"d": Decimal("1.5")}, r"value.d is a Decimal, which JSON cannot hold"),
    ({"s": f"a{LONE}"}, r"value.s contains a lone surrogate"),
    ({"m": {1: 2}}, r"value.m has the key 1 \(int\): keys must be str"),
    ({"n": 2**70}, r"value.n is 1180591620717411303424, outside JSON's 64-bit integers"),
])
def test_a_value_that_would_come_back_different_is_refused_naming_its_path(
        store: LedgerStore, value: dict[str, Any], words: str) -> None:
    with pytest.raises(InvalidMessage, match=words):
        store.put(("kept",), "k", value)
    item = store.get(("kept",), "k")
    assert item is not None and item.value == {"v": 1}


def test_null_and_finite_numbers_come_back_equal(store: LedgerStore) -> None:
    store.put(("kept",), "k", {"x": None, "y": [1.5, None], "z": {"w": -0.0}})
    item = store.get(("kept",), "k")
    assert item is not None and item.value == {"x": None, "y": [1.5, None], "z": {"w": -0.0}}
