"""Exact or refused: a state value the serializer would alter is not stored.

LangGraph's serializer (``JsonPlusSerializer``, msgpack with
``OPT_REPLACE_SURROGATES``) stores a lone surrogate (``"hi \\ud83d"``, half of a
UTF-16 pair, what a broken client sends) as ``"?"``, at any depth of any str
value, and raises a bare ``TypeError`` for one in a dict key. A put or
put_writes holding one raises :class:`InvalidStateValue` instead, naming the
channel and where in the value, before anything is stored.

Cost: the serialized bytes are scanned for ``?`` (a replaced surrogate is one);
only a value holding one is walked, and a value found exact is remembered by
its bytes' digest, so an unchanged message is not walked again at the next put.
With another serializer, whose bytes cannot be read, every value is walked, and
one holding a surrogate is refused only if it does not come back equal.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

from .._errors import InvalidMessage
from ._entries import Typed

__all__ = ["ExactValues", "InvalidStateValue"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_REMEMBERED = 4096  # digests of values found exact
_DEPTH = 200  # deeper than any state; a deeper value is left to the serializer

Step = str | int
_Found = tuple[tuple[Step, ...], list[str], str]


class InvalidStateValue(InvalidMessage):
    """A state value holds what LangGraph's serializer would store altered: nothing stored.

    ``channel``: the channel whose value (or write) it is, ``""`` for the checkpoint's
    metadata (``config["metadata"]``, and the keys of ``configurable`` LangGraph copies
    there); ``path``: where inside the value, a tuple of list positions (from 0), dict
    keys and attribute names (``(3, "content")``: the content of the fourth message);
    ``()``: the value itself.
    """

    def __init__(self, channel: str, path: tuple[Step, ...], where: str, char: str) -> None:
        super().__init__(where, f"holds a lone surrogate {char!a} (half of a UTF-16 pair, "
                                "what a broken client sends), which LangGraph's serializer "
                                "cannot store exactly (it writes '?' instead); nothing was "
                                "stored. Decode the text "
                                "with errors='replace', or drop the character, before it "
                                "enters the state")
        self.channel = channel
        self.path = path


class ExactValues:
    """Serializes values as a saver stores them, refusing what would not come back
    exact (thread-safe; remembers at most 4,096 values found exact)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._exact: OrderedDict[bytes, None] = OrderedDict()

    def dumps(self, serde: SerializerProtocol, channel: str, value: Any,
              index: int | None = None) -> Typed:
        """``serde.dumps_typed(value)``, or InvalidStateValue (``index``: the value
        is that item of the list in ``channel``; channel ``""``: the checkpoint's
        metadata)."""
        try:
            typed = serde.dumps_typed(value)
        except TypeError as exc:
            # msgpack raises for a surrogate in a dict key (only there: in a
            # str it writes "?"); any other TypeError is the serializer's own.
            found = _surrogate(value, _start(index, value), keys_only=True)
            if found is None:  # the serializer's own refusal: say whose value it was
                where = _where(channel, _start(index, value)[1])
                raise TypeError(f"{where}: LangGraph's serializer cannot store it: {exc}; "
                                "nothing was stored") from exc
            raise _refused(channel, found) from exc
        self._check(serde, channel, value, typed, index)
        return typed

    def _check(self, serde: SerializerProtocol, channel: str, value: Any, typed: Typed,
               index: int | None) -> None:
        replaces = isinstance(serde, JsonPlusSerializer)
        if replaces and b"?" not in typed[1]:
            return  # a replaced surrogate is a "?": none, nothing was replaced
        key = hashlib.blake2b(typed[1], digest_size=16, person=typed[0].encode()[:16]).digest()
        with self._lock:
            if key in self._exact:
                self._exact.move_to_end(key)
                return
        found = _surrogate(value, _start(index, value))
        if found is not None and (replaces or not _round_trips(serde, value, typed)):
            raise _refused(channel, found)
        with self._lock:
            self._exact[key] = None
            while len(self._exact) > _REMEMBERED:
                self._exact.popitem(last=False)


def _round_trips(serde: SerializerProtocol, value: Any, typed: Typed) -> bool:
    try:
        return bool(serde.loads_typed(typed) == value)
    except Exception:
        return False


def _refused(channel: str, found: _Found) -> InvalidStateValue:
    path, words, char = found
    return InvalidStateValue(channel, path, _where(channel, words), char)


def _start(index: int | None, value: Any) -> tuple[tuple[Step, ...], list[str]]:
    return ((), []) if index is None else ((index,), [_item(index, value)])


def _surrogate(value: Any, at: tuple[tuple[Step, ...], list[str]],
               seen: set[int] | None = None, *, keys_only: bool = False) -> _Found | None:
    """Where the first lone surrogate in ``value`` is (``keys_only``: in a dict
    key): its path, the words for it, the char."""
    path, words = at
    if isinstance(value, str):
        match = None if keys_only else _SURROGATE.search(value)
        return None if match is None else (path, words, match.group())
    if isinstance(value, (bytes, bytearray, int, float)) or value is None:
        return None
    seen = set() if seen is None else seen
    if id(value) in seen or len(path) > _DEPTH:
        return None
    seen.add(id(value))
    for step, word, part in _parts(value):
        found = _key(step, path, words) if word is None else _surrogate(
            part, ((*path, step), [*words, word]), seen, keys_only=keys_only)
        if found is not None:
            return found
    return None


def _key(key: Step, path: tuple[Step, ...], words: list[str]) -> _Found | None:
    """A dict key itself holding a surrogate."""
    match = _SURROGATE.search(key) if isinstance(key, str) else None
    return None if match is None else ((*path, key), [*words, f"the key {key!a}"], match.group())


def _parts(value: Any) -> list[tuple[Step, str | None, Any]]:
    """What a value holds: ``(step, words, part)``; words None: the step is a dict key."""
    if isinstance(value, Mapping):
        return [part for k, v in value.items()
                for part in ((k, None, k), (k, f"key {k!r}", v))]
    if isinstance(value, (list, tuple)):
        return [(i, _item(i, item), item) for i, item in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        return [(i, f"item {i + 1}", item) for i, item in enumerate(value)]
    return [(name, f"its {name}", part) for name, part in _attributes(value)]


def _attributes(value: Any) -> list[tuple[str, Any]]:
    """The fields a serializer stores of an object: a pydantic model's or a
    dataclass's fields, else its ``__dict__``."""
    names: Callable[[], Any]
    if isinstance(value, BaseModel):
        names = type(value).model_fields.keys
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = lambda: [f.name for f in dataclasses.fields(value)]  # noqa: E731
    elif hasattr(value, "__dict__") and not isinstance(value, type):
        names = vars(value).keys
    else:
        return []
    return [(name, getattr(value, name, None)) for name in names()]


def _item(index: int, item: Any) -> str:
    return f"{'message' if isinstance(item, BaseMessage) else 'item'} {index + 1}"


def _where(channel: str, words: list[str]) -> str:
    """``message 4 of channel 'messages', its content``: words a user reads."""
    if not channel:
        return ", ".join(["the checkpoint's metadata", *words])
    if not words:
        return f"channel {channel!r}"
    return ", ".join([f"{words[0]} of channel {channel!r}", *words[1:]])
