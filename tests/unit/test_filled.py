"""Records filled in directly (``_filled``) are the records their constructors make."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field, fields, replace
from typing import Any

import pytest

from chatledger._backends.contract import Batch, Growth, RawInfo, plan_append
from chatledger._core import make_own_batch
from chatledger._filled import set_at_once
from chatledger._messages import Message, system
from chatledger._results import Ack
from chatledger.langgraph._chain import Put
from chatledger.langgraph._entries import CheckpointEntry, ValueEntry, own_message


def _same(record: object, expected: object) -> None:
    assert record == expected
    assert repr(record) == repr(expected)
    assert list(vars(record)) == [f.name for f in fields(expected)]  # type: ignore[arg-type]


def test_an_own_batch_is_the_batch_its_constructor_makes() -> None:
    batch = make_own_batch([system("hi", id="a")], 3, "L", 1 << 20, "u")
    _same(batch, Batch(ids=["a"], blobs=batch.blobs, expect_version=3, ledger="L", user="u"))
    assert replace(batch, ledger=None).ledger is None


def test_a_planned_growth_and_its_ack_are_what_their_constructors_make() -> None:
    state = RawInfo(3, 1, 1.0, 1.5, None, "L", "u")
    batch = make_own_batch([system("hi", id="a")], 3, "L", 1 << 20, "u")
    growth = plan_append("s", batch, state, {}, now=2.0, expires=9.0)
    assert isinstance(growth, Growth)
    _same(growth, Growth(4, RawInfo(4, 1, 1.0, 2.0, 9.0, "L", "u"), created=False))
    _same(growth.state, RawInfo(4, 1, 1.0, 2.0, 9.0, "L", "u"))
    _same(growth.ack, Ack(4, 4, 4, ledger="L"))
    assert hash(growth.ack) == hash(Ack(4, 4, 4, ledger="L"))


def test_an_entry_message_is_the_message_its_constructor_makes() -> None:
    message = own_message("value of x", "v/1/0", {"langgraph": 2}, b"data")
    _same(message, Message(role="system", content="value of x", id="v/1/0",
                           metadata={"langgraph": 2}, data=b"data",
                           created_at=message.created_at))
    assert message.created_at.tzinfo is not None and message.seq is None
    assert replace(message, data=None).data is None


def test_a_stored_put_fills_in_its_checkpoint_at_its_seq() -> None:
    entry = CheckpointEntry("c", "p", ("msgpack", b"c"), ("msgpack", b"m"), ["x"], {"y": 2})
    value = ValueEntry("x", ("msgpack", b"v"))
    stored, values = Put([], entry, [value]).stored(9)
    _same(stored, replace(entry, seq=9))
    assert values == {8: ValueEntry("x", ("msgpack", b"v"), 8)}
    assert stored.value_seqs() == {"y": 2, "x": 8}


def _record() -> Any:
    @dataclass(frozen=True)
    class Record:
        a: int
        b: str = "b"
        c: list[int] = field(default_factory=list)
        d: int = field(default=4, kw_only=True)
    return Record


@pytest.mark.parametrize(("args", "kwargs"), [
    ((1,), {}), ((1, "x", [2]), {"d": 5}), ((), {"a": 1, "c": [3]})])
def test_set_at_once_makes_what_the_generated_constructor_makes(
        args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    plain, quick = _record(), set_at_once(_record())
    assert list(inspect.signature(quick).parameters) == list(
        inspect.signature(plain).parameters)
    made, expected = quick(*args, **kwargs), plain(*args, **kwargs)
    assert repr(made) == repr(expected) and list(vars(made)) == ["a", "b", "c", "d"]
    assert quick(1).c is not quick(1).c  # a fresh list each, as default_factory makes


@pytest.mark.parametrize("args", [(), (1, "x", [], 5)])  # a field missing; d by position
def test_set_at_once_refuses_what_the_generated_constructor_refuses(
        args: tuple[Any, ...]) -> None:
    with pytest.raises(TypeError):
        _record()(*args)
    with pytest.raises(TypeError):
        set_at_once(_record())(*args)
