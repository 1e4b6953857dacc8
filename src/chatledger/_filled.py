"""Frozen dataclasses filled in directly, on the hot paths that build them per call.

A frozen dataclass's generated ``__init__`` sets each field through
``object.__setattr__`` (and runs its default factories), and
``dataclasses.replace`` first reads every field back through ``fields()``: a
saver's put builds messages for its entries and its checkpoint entry at its seq,
and they cost it more than the logic around them. :func:`filled` makes the same
instance with one dict, as :mod:`chatledger._codec` fills in the messages it
reads. The append's own records (``Batch``, ``RawInfo``, ``Growth``, ``Ack``)
have constructors that set their fields at once instead.
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["filled"]

R = TypeVar("R")


def filled(cls: type[R], fields: dict[str, Any]) -> R:
    """An instance of the frozen dataclass ``cls`` (not slotted, no ``__post_init__``)
    whose own dict is ``fields``: every field, in the class's order."""
    record: R = _new(cls)
    _set(record, "__dict__", fields)
    return record


_new = object.__new__
_set = object.__setattr__  # a frozen dataclass refuses its own __setattr__
