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


def _nested(levels: int, leaf: Any) -> Any:
    for _ in range(levels):
        leaf = {"a": leaf}
    return leaf


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
    with pytest.raises(InvalidMessage,
                       match=rf"item 'k'.*{path}: (nan|-?inf) is not a finite number"):
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
     r"value.when: datetime is not JSON \(use an ISO 8601 string\), so it would not "
     r"come back equal"),
    ({"pair": (1, 2)},
     r"value.pair: tuple is not JSON \(use a list\), so it would not come back equal"),
    ({"a": [1, {"id": uuid.UUID(int=1)}]},
     r"value.a\[1\].id: UUID is not JSON \(use str\(uuid\)\)"),
    ({"c": _Colour.RED},
     r"value.c: _Colour is not JSON \(use str, int, float, bool, None, list or dict\)"),
    ({"p": _Point(1)},
     r"value.p: _Point is not JSON \(use str, int, float, bool, None, list or dict\)"),
    ({"d": Decimal("1.5")}, r"value.d: Decimal is not JSON \(use a string to keep every digit\)"),
    ({"s": f"a{LONE}"}, r"value.s: contains a lone surrogate"),
    ({"m": {1: 2}}, r"value.m: has an int key 1; JSON keys are plain str"),
    ({"n": 2**70}, r"value.n: integer 1180591620717411303424 is outside the range JSON values "
                   r"are stored in, -2\*\*63 to 2\*\*64 - 1"),
    # The first part JSON cannot hold is named, not one the value may hold.
    ({"a": 2**63, "b": -(2**63) - 1}, r"value.b: integer -9223372036854775809 is outside"),
    ({"a": _nested(100, 1), "b": float("nan")}, r"value.b: nan is not a finite number"),
    ({"deep": _nested(254, 1)}, r"value\.deep(\.a){254}: nests deeper than 255 levels"),
])
def test_a_value_that_would_come_back_different_is_refused_naming_its_path(
        store: LedgerStore, value: dict[str, Any], words: str) -> None:
    with pytest.raises(InvalidMessage, match=words):
        store.put(("kept",), "k", value)
    item = store.get(("kept",), "k")
    assert item is not None and item.value == {"v": 1}


def test_what_json_holds_beyond_a_messages_metadata_comes_back_equal(
        store: LedgerStore) -> None:
    value = {"unsigned": 2**64 - 1, "least": -(2**63), "deep": _nested(253, 1)}
    store.put(("kept",), "k", value)
    item = store.get(("kept",), "k")
    assert item is not None and item.value == value


def test_null_and_finite_numbers_come_back_equal(store: LedgerStore) -> None:
    store.put(("kept",), "k", {"x": None, "y": [1.5, None], "z": {"w": -0.0}})
    item = store.get(("kept",), "k")
    assert item is not None and item.value == {"x": None, "y": [1.5, None], "z": {"w": -0.0}}


class _Half(float):
    """A float subclass: orjson does not write it."""


def test_a_float_subclass_is_refused_naming_its_path(store: LedgerStore) -> None:
    with pytest.raises(InvalidMessage, match=r"item 'k': value.x: is a float subclass _Half; "
                                             r"convert it to float first"):
        store.put(("kept",), "k", {"x": _Half(0.5)})
    item = store.get(("kept",), "k")
    assert item is not None and item.value == {"v": 1}
