"""Frozen dataclasses filled in directly, on the hot paths that build them per call.

A frozen dataclass's generated ``__init__`` sets each field through
``object.__setattr__`` (and runs its default factories), and
``dataclasses.replace`` first reads every field back through ``fields()``: a
saver's put builds messages for its entries and its checkpoint entry at its seq,
and they cost it more than the logic around them. :func:`filled` makes the same
instance with one dict, as :mod:`chatledger._codec` fills in the messages it
reads. The append's own records (``Batch``, ``RawInfo``, ``Growth``, ``Ack``,
``StoredItem``) keep their constructors, made by :func:`set_at_once`: the
generated signature, the fields set in one ``__dict__`` update.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, TypeVar

__all__ = ["filled", "set_at_once"]

R = TypeVar("R")


def filled(cls: type[R], fields: dict[str, Any]) -> R:
    """An instance of the frozen dataclass ``cls`` (not slotted, no ``__post_init__``)
    whose own dict is ``fields``: every field, in the class's order."""
    record: R = _new(cls)
    _set(record, "__dict__", fields)
    return record


_new = object.__new__
_set = object.__setattr__  # a frozen dataclass refuses its own __setattr__


def set_at_once(cls: type[R]) -> type[R]:
    """Give the frozen dataclass ``cls`` (not slotted, no ``__post_init__``, every field
    in ``__init__``) an ``__init__`` of the generated one's signature that sets every
    field in one ``__dict__`` update, rather than an ``object.__setattr__`` a field."""
    scope: dict[str, Any] = {"MISSING": MISSING}
    positional: list[str] = []
    keywords: list[str] = []
    made: list[str] = []  # fields with a default_factory, made when not given
    for f in fields(cls):  # type: ignore[arg-type]
        param = f.name
        if f.default is not MISSING:
            scope[f"_default_{f.name}"] = f.default
            param = f"{f.name}=_default_{f.name}"
        elif f.default_factory is not MISSING:
            scope[f"_factory_{f.name}"] = f.default_factory
            param = f"{f.name}=MISSING"
            made.append(f"    if {f.name} is MISSING: {f.name} = _factory_{f.name}()\n")
        (keywords if f.kw_only else positional).append(param)
    signature = ", ".join(["self", *positional, *(["*", *keywords] if keywords else [])])
    update = ", ".join(f"{f.name}={f.name}" for f in fields(cls))  # type: ignore[arg-type]
    exec(f"def __init__({signature}):\n{''.join(made)}"
         f"    self.__dict__.update({update})\n", scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    setattr(cls, "__init__", init)  # noqa: B010 -- a class made, not an instance
    return cls
