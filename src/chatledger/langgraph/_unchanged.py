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
fields and extra fields, and their class, compared apart); any other item
(a subclass of the user's may serialize more) is serialized at every put.
A list's states are taken in one pass, one ``marshal`` call per item and no
object per item: a run's ``get_tuple`` records them for every item it read.

Bounded: ``LIMIT`` sessions, least recently used dropped first, and at most
``BUDGET`` bytes of serialized items and states over all of them.
"""

from __future__ import annotations

import marshal
import operator
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, cast

from langchain_core.messages import BaseMessage

from ._entries import Typed
from ._held import HeldLists

__all__ = ["BUDGET", "LIMIT", "UnchangedItems", "is_own_message"]

LIMIT = 1024
"""Sessions whose lists are kept."""

BUDGET = 64 * 1024 * 1024
"""Bytes of serialized items and states kept, over every session."""

_MESSAGES = "langchain_core.messages."
_PLAIN = frozenset({str, int, float, bool, type(None), bytes, tuple, list, dict, set, frozenset})
_MARSHAL = 2  # no references: the bytes do not depend on who else holds a part


class _List:
    """The last list of a channel: its items (held, so that their ids are not
    reused while known), their classes and states (None: not plain data) and
    their bytes."""

    __slots__ = ("items", "kinds", "size", "states", "typed")

    def __init__(self, items: list[Any], states: list[bytes | None], typed: list[Typed]) -> None:
        self.items = items
        self.kinds = list(map(type, items))
        self.states = states
        self.typed = typed
        self.size = (sum(map(len, map(itemgetter(1), typed)))
                     + sum(map(len, filter(None, states))))

    def reused(self, value: Sequence[Any], states: list[bytes | None]) -> list[Typed | None]:
        """Per item of ``value`` (whose states are ``states``): its bytes when it is
        one of these items in the same state, else None."""
        count = len(self.items)
        if (len(value) >= count and None not in self.states  # the usual step: it grew
                and all(map(operator.is_, value, self.items)) and states[:count] == self.states
                and list(map(type, value[:count])) == self.kinds):
            return [*self.typed, *[None] * (len(value) - count)]
        where = {id(item): i for i, item in enumerate(self.items)}
        found: list[Typed | None] = []
        for item, state in zip(value, states, strict=True):
            i = where.get(id(item))
            same = (state is not None and i is not None and self.states[i] == state
                    and self.kinds[i] is type(item))
            found.append(self.typed[i] if same and i is not None else None)
        return found


class UnchangedItems(HeldLists[_List]):
    """Per session and channel, the items of the last list serialized; thread-safe."""

    def __init__(self, budget: int = BUDGET) -> None:
        super().__init__(budget, LIMIT)

    def serialize(self, session: str, channel: str, value: Sequence[Any],
                  dumps: Callable[[Any, int], Typed]) -> list[Typed]:
        """The items of ``value`` serialized: ``dumps(item, index)`` for each item
        that is new or changed since the last list of ``channel`` in ``session``."""
        known = self.get(session, channel)
        states = _states(value)
        reused = known.reused(value, states) if known else [None] * len(value)
        typed = [dumps(item, i) if bytes_ is None else bytes_
                 for i, (item, bytes_) in enumerate(zip(value, reused, strict=True))]
        self.keep(session, channel, _List(list(value), states, typed))
        return typed

    def remember(self, session: str, channel: str, value: Sequence[Any],
                 typed: Sequence[Typed], states: list[bytes | None] | None = None) -> None:
        """``value`` was just read from ``typed``, item by item: the next put's list holds them.

        An item read from the bytes this channel's last list held for an item of
        its class takes that item's state, not one taken anew (a ``marshal`` per
        item): read back, it is that item again. Should it come back in another
        state, the next put finds it changed and serializes it again: a cost,
        never wrong bytes, for equal states of one class give equal bytes (what
        every reuse here rests on). Any item of another class (a tuple read back
        as a list), or not known: every state is taken anew. ``states``: the
        items' states, taken by the reader (``_decoded.py``), when it took them all.
        """
        if states is not None and None not in states:
            self.keep(session, channel, _List(list(value), states, list(typed)))
            return
        known = self.get(session, channel)
        states = _known_states(known, value, typed) if known is not None else None
        self.keep(session, channel, _List(list(value), states or _states(value), list(typed)))

def _known_states(known: _List, value: Sequence[Any],
                  typed: Sequence[Typed]) -> list[bytes | None] | None:
    """The states ``known`` holds for the items of ``value``, read from ``typed``;
    None unless each item's bytes are some known item's, of the same class and
    in a known state (a list read back from what this saver put, or read, last)."""
    where = dict(zip(known.typed, range(len(known.typed)), strict=True))
    found = list(map(where.get, typed))
    if None in found:
        return None
    at = cast(list[int], found)
    states = [known.states[i] for i in at]
    if None in states or [known.kinds[i] for i in at] != list(map(type, value)):
        return None
    return states


def _states(items: Sequence[Any]) -> list[bytes | None]:
    """The state of each item (``_state``); for a list of langchain_core's own
    messages, the common case, in one pass without a call per item."""
    if all(map(is_own_message, set(map(type, items)))):
        try:
            return [marshal.dumps((item.__dict__, item.__pydantic_extra__), _MARSHAL)
                    for item in items]
        except ValueError:  # some message holds what is not plain data: item by item
            pass
    return [_state(item) for item in items]


def _state(item: Any) -> bytes | None:
    """What the serializer reads of ``item``, as bytes; None: not plain data."""
    kind = type(item)
    if kind in _PLAIN:
        value = item
    elif is_own_message(kind):
        value = (item.__dict__, item.__pydantic_extra__)  # its class: compared apart
    else:  # e.g. a numpy array: marshal would take its buffer alone
        return None
    try:
        return marshal.dumps(value, _MARSHAL)
    except ValueError:  # not plain data (or nested past marshal's depth)
        return None


def is_own_message(kind: type) -> bool:
    """langchain_core's own message classes (a subclass of the user's may serialize more)."""
    ours = _CLASSES.get(kind)
    if ours is None:
        ours = _CLASSES[kind] = (issubclass(kind, BaseMessage)
                                 and kind.__module__.startswith(_MESSAGES))
    return ours


_CLASSES: dict[type, bool] = {}  # a few classes; a race only computes one twice
