"""A list's items serialized at the previous put, kept so a put serializes only what is new.

A ``messages`` channel is the previous step's list plus a message or two: the
same message objects, in the same order (``add_messages`` copies the list, not
its messages), and at the start of a run the ones ``get_tuple`` just read.
Serializing every item at every put costs O(thread) per step; this keeps, per
session and channel, each item of the last list put or read with its
serialized bytes and its state, and reuses the bytes for an item that is the
same object in the same state.

"The same state" is decided exactly, and four times cheaper than serializing:
an item's state is its ``marshal`` bytes (version 2, without references),
which tell 1 from 1.0 and True, 0.0 from -0.0, a dict's key order, and take
only plain data (str, int, float, bool, None, bytes, tuple, list, dict, set;
an object with a buffer, such as a bytearray, inside one counts as its bytes).
An item edited in place (``message.content = ...``, a key added to
``additional_kwargs``) so no longer matches its state and is serialized, and
checked (``_exact.py``), again. Only items whose serialization follows from
that state are kept: plain data, and langchain_core's own messages (their
fields and extra fields; a subclass of the user's may serialize more); any
other item is serialized at every put, as before.

Bounded: ``LIMIT`` sessions, least recently used dropped first, and at most
``BUDGET`` bytes of serialized items and states over all of them.
"""

from __future__ import annotations

import marshal
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from ._entries import Typed

__all__ = ["BUDGET", "LIMIT", "UnchangedItems"]

LIMIT = 1024
"""Sessions whose lists are kept."""

BUDGET = 64 * 1024 * 1024
"""Bytes of serialized items and states kept, over every session."""

_MESSAGES = "langchain_core.messages."
_PLAIN = frozenset({str, int, float, bool, type(None), bytes, tuple, list, dict, set, frozenset})
_MARSHAL = 2  # no references: the bytes do not depend on who else holds a part


class _Known:
    """An item (held, so that its id is not reused while known), its state, its bytes."""

    __slots__ = ("item", "size", "state", "typed")

    def __init__(self, item: Any, state: bytes, typed: Typed) -> None:
        self.item = item
        self.state = state
        self.typed = typed
        self.size = len(typed[1]) + len(state)

    def holds(self, item: Any) -> bool:
        return item is self.item and _state(item) == self.state


_Lists = dict[str, dict[int, _Known]]  # per channel, by the item's id


class UnchangedItems:
    """Per session and channel, the items of the last list serialized; thread-safe."""

    def __init__(self, budget: int = BUDGET) -> None:
        self._budget = budget
        self._lock = threading.Lock()
        self._held: OrderedDict[str, tuple[_Lists, int]] = OrderedDict()
        self._size = 0

    def serialize(self, session: str, channel: str, value: Sequence[Any],
                  dumps: Callable[[Any, int], Typed]) -> list[Typed]:
        """The items of ``value`` serialized: ``dumps(item, index)`` for each item
        that is new or changed since the last list of ``channel`` in ``session``."""
        with self._lock:
            lists, _ = self._held.get(session, ({}, 0))
        known = lists.get(channel, {})
        typed: list[Typed] = []
        kept: dict[int, _Known] = {}
        for index, item in enumerate(value):
            held = known.get(id(item))
            if held is None or not held.holds(item):
                bytes_ = dumps(item, index)
                typed.append(bytes_)
                held = _known(item, bytes_)
            else:
                typed.append(held.typed)
            if held is not None:
                kept[id(item)] = held
        self._keep(session, channel, kept)
        return typed

    def remember(self, session: str, channel: str, value: Sequence[Any],
                 typed: Sequence[Typed]) -> None:
        """``value`` was just read from ``typed``, item by item: the next put's list holds them."""
        kept = {}
        for item, bytes_ in zip(value, typed, strict=True):
            held = _known(item, bytes_)
            if held is not None:
                kept[id(item)] = held
        self._keep(session, channel, kept)

    def forget(self, prefix: str) -> None:
        """Drop every session whose id starts with ``prefix``."""
        with self._lock:
            for session in [s for s in self._held if s.startswith(prefix)]:
                self._drop(session)

    def _keep(self, session: str, channel: str, kept: dict[int, _Known]) -> None:
        size = sum(k.size for k in kept.values())
        with self._lock:
            lists, held_size = self._held.get(session, ({}, 0))
            size += held_size - sum(k.size for k in lists.get(channel, {}).values())
            lists = {**lists, channel: kept}
            self._drop(session)
            if size > self._budget:
                return
            self._held[session] = (lists, size)
            self._size += size
            while self._size > self._budget or len(self._held) > LIMIT:
                self._drop(next(iter(self._held)))

    def _drop(self, session: str) -> None:
        held = self._held.pop(session, None)
        if held is not None:
            self._size -= held[1]


def _known(item: Any, typed: Typed) -> _Known | None:
    state = _state(item)
    return None if state is None else _Known(item, state, typed)


def _state(item: Any) -> bytes | None:
    """What the serializer reads of ``item``, as bytes; None: not plain data."""
    kind = type(item)
    if kind in _PLAIN:
        value = item
    elif _ours(kind):
        value = (kind.__module__, kind.__qualname__, item.__dict__, item.__pydantic_extra__)
    else:  # e.g. a numpy array: marshal would take its buffer alone
        return None
    try:
        return marshal.dumps(value, _MARSHAL)
    except ValueError:  # not plain data (or nested past marshal's depth)
        return None


def _ours(kind: type) -> bool:
    """langchain_core's own message classes (a subclass of the user's may serialize more)."""
    ours = _CLASSES.get(kind)
    if ours is None:
        ours = _CLASSES[kind] = (issubclass(kind, BaseMessage)
                                 and kind.__module__.startswith(_MESSAGES))
    return ours


_CLASSES: dict[type, bool] = {}  # a few classes; a race only computes one twice
