"""``bytea[]`` parameters in PostgreSQL's binary form, built here.

An append sends its message ids and entries as two ``bytea[]``. Given a
``list[bytes]``, psycopg finds the array's dumper by looking into the list
(its element type, its nesting) on every call, which cost an append more
client CPU than anything else psycopg does for it. A :class:`ByteaArray` is
already the array's binary form (``array_send``'s layout: one dimension, no
NULL, element type ``bytea``), which its dumper hands over as it is.
"""

from __future__ import annotations

import struct
from typing import Any

from psycopg import adapt, pq

__all__ = ["ByteaArray", "bytea_array", "register"]

_BYTEA, _BYTEA_ARRAY = 17, 1001  # PostgreSQL's type oids
_EMPTY = struct.pack("!iiI", 0, 0, _BYTEA)  # no dimension
_HEAD = struct.Struct("!iiIii")  # one dimension, no NULL, bytea; its length, from 1
_LENGTH = struct.Struct("!i")


class ByteaArray:
    """A ``bytea[]`` in binary form (a wrapper, not a ``bytes``: no copy of it)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def bytea_array(items: list[bytes]) -> ByteaArray:
    """``items`` as a ``bytea[]`` parameter."""
    if not items:
        return ByteaArray(_EMPTY)
    chunks = [_HEAD.pack(1, 0, _BYTEA, len(items), 1)]
    for item in items:
        chunks += (_LENGTH.pack(len(item)), item)
    return ByteaArray(b"".join(chunks))


class _Dumper(adapt.Dumper):
    format = pq.Format.BINARY
    oid = _BYTEA_ARRAY

    def dump(self, obj: Any) -> bytes:
        return obj.data  # type: ignore[no-any-return]


def register(connection: Any) -> None:
    """Let ``connection`` send :class:`ByteaArray` parameters."""
    connection.adapters.register_dumper(ByteaArray, _Dumper)
