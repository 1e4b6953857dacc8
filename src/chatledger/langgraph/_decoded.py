"""A list's items as decoded before, kept so a read decodes only what is new.

``get_tuple`` of a chat thread returns its ``messages`` list: 2,000 messages at
1,000 turns, each rebuilt by LangGraph's serializer (a module import, then
pydantic's validation: some 16 µs a message), although only the last step's
are new. SqliteSaver pays the same, for its one blob holds every message.
This keeps, per session and channel, what each item of the last list read
was decoded into, by its bytes, and builds the same object again from that:
the serializer is deterministic for langchain_core's own messages (the same
bytes give equal fields), so an item read before is copied, not decoded.

The copy is exact and shares nothing: the object's fields and extra fields
are kept as their ``marshal`` bytes (plain data only; the bytes tell 1 from
1.0 and True, a tuple from a list, a dict's key order), loaded afresh for
every copy, with the set of fields the decoder set. Kept are only items of
langchain_core's own message classes holding plain data and no private
attributes, read by LangGraph's own ``JsonPlusSerializer``; any other item is
decoded at every read. The state kept is the one ``_unchanged.py`` compares:
a run's next put reuses these items' bytes without taking it again.

Bounded: ``LIMIT`` sessions, least recently used dropped first, and at most
``BUDGET`` bytes of states over all of them; per channel only the last list read.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Sequence
from typing import Any

from ._entries import Typed
from ._held import HeldLists
from ._unchanged import is_own_message

__all__ = ["BUDGET", "LIMIT", "DecodedItems"]

LIMIT = 1024
"""Sessions whose lists are kept."""

BUDGET = 64 * 1024 * 1024
"""Bytes of states kept, over every session."""

_MARSHAL = 2  # as _unchanged.py takes states: no references
_OVERHEAD = 64  # what a kept item costs beyond its state's bytes

# An item's bytes -> (its class, the marshal bytes of (__dict__,
# __pydantic_extra__), its fields set).
_Shape = tuple[type, bytes, frozenset[str]]


class _Kept:
    """A channel's items as last read: their shapes by their bytes, and what they weigh."""

    __slots__ = ("shapes", "size")

    def __init__(self, shapes: dict[bytes, _Shape], size: int) -> None:
        self.shapes = shapes
        self.size = size


class DecodedItems(HeldLists[_Kept]):
    """Per session and channel, the items of the last list read, by their bytes; thread-safe."""

    def __init__(self, budget: int = BUDGET) -> None:
        super().__init__(budget, LIMIT)

    def loads(self, session: str, channel: str, items: Sequence[Typed],
              decode: Callable[[list[Typed]], list[Any]]) -> tuple[list[Any], list[bytes | None]]:
        """The list whose items are ``items``, and each item's state (None: not
        kept); ``decode`` decodes the items not read before, in one call."""
        known = self.get(session, channel)
        shapes = known.shapes if known is not None else {}
        found = [shapes.get(data) if kind == "msgpack" else None for kind, data in items]
        missing = [typed for typed, shape in zip(items, found, strict=True) if shape is None]
        fresh = iter(decode(missing) if missing else ())
        value: list[Any] = []
        states: list[bytes | None] = []
        added: dict[bytes, _Shape] = {}
        loads, new, set_ = marshal.loads, object.__new__, object.__setattr__
        for (kind, data), shape in zip(items, found, strict=True):
            if shape is None:
                item = next(fresh)
                taken = _shape(item) if kind == "msgpack" else None
                value.append(item)
                states.append(None if taken is None else taken[1])
                if taken is not None:
                    added[data] = taken
                continue
            # The object ``_shape`` was taken from, again (a loop, not a call per item).
            cls, state, fields_set = shape
            fields, extra = loads(state)
            item = new(cls)
            set_(item, "__dict__", fields)
            set_(item, "__pydantic_extra__", extra)
            set_(item, "__pydantic_fields_set__", set(fields_set))
            set_(item, "__pydantic_private__", None)
            value.append(item)
            states.append(state)
        if added or known is None or len(shapes) > len(items):
            self.keep(session, channel, _kept(known, added, items, found))
        return value, states

def _kept(known: _Kept | None, added: dict[bytes, _Shape], items: Sequence[Typed],
          found: list[_Shape | None]) -> _Kept:
    """What to keep after a read: the shapes known and those ``added``, while they
    are no more than the list's items (the usual read: the list grew); else only
    the items of this list."""
    if known is not None and len(known.shapes) + len(added) <= len(items):
        return _Kept({**known.shapes, **added}, known.size + _weight(added))
    shapes = {data: shape for (_, data), shape in zip(items, found, strict=True)
              if shape is not None}
    shapes.update(added)
    return _Kept(shapes, _weight(shapes))


def _weight(shapes: dict[bytes, _Shape]) -> int:
    return sum(len(data) + len(shape[1]) + _OVERHEAD for data, shape in shapes.items())


def _shape(item: Any) -> _Shape | None:
    """What rebuilds ``item``: None unless it is one of langchain_core's own
    messages holding plain data and no private attributes."""
    kind = type(item)
    if not is_own_message(kind) or item.__pydantic_private__ is not None:
        return None
    try:
        state = marshal.dumps((item.__dict__, item.__pydantic_extra__), _MARSHAL)
    except ValueError:  # not plain data
        return None
    return kind, state, frozenset(item.__pydantic_fields_set__)
