"""Where a LedgerStore item lives: one ledger session per (namespace, key).

A namespace is a tuple of labels, never joined text: each label is written
with ``%``, ``/``, ``=`` and NUL escaped as ``%XX``, and ended by ``/``; the
key follows a ``=``. So the id of item ``key`` in ``(l1, ..., ln)`` is
``lgs/<l1>/.../<ln>/=<key>``, and

- no two (namespace, key) pairs share an id: the labels hold no raw ``/`` or
  ``=``, so the first ``=`` ends the namespace, and each ``/`` ends one label;
- the items under a namespace prefix ``(l1, ..., lk)`` are exactly the
  sessions whose id starts with ``lgs/<l1>/.../<lk>/`` (``("a",)`` is no
  prefix of ``("ab",)``), which ``store.sessions(prefix=...)`` lists;
- labels holding ``.``, ``:``, ``*``, ``%`` or any Unicode come back equal.

The checkpointer's sessions start with ``lg:``, never with ``lgs/``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .._validation import MAX_KEY_BYTES, check_key

__all__ = ["ITEM_PREFIX", "checked_item_id", "item_session_id", "item_words",
           "namespace_prefix_id", "split_item_session_id"]

ITEM_PREFIX = "lgs/"
"""Every item session's id starts with this."""

_ESCAPED = re.compile(r"[%/=\x00]")
_ESCAPED_IN_KEY = re.compile(r"[%\x00]")  # the key is last: its / and = are plain
_ESCAPE = re.compile(r"%([0-9A-F]{2})")


def _escape(text: str, pattern: re.Pattern[str]) -> str:
    # Most labels and keys hold nothing to escape: four substring tests cost far
    # less than a regex pass (the pattern's characters are a subset of these).
    if "%" not in text and "/" not in text and "=" not in text and "\x00" not in text:
        return text
    return pattern.sub(lambda m: f"%{ord(m[0]):02X}", text)


def _unescape(text: str) -> str:
    if "%" not in text:  # most labels and keys: nothing escaped
        return text
    return _ESCAPE.sub(lambda m: chr(int(m[1], 16)), text)


def namespace_prefix_id(prefix: tuple[str, ...]) -> str:
    """The id prefix of every item under the namespace prefix ``prefix``."""
    return _prefix_id(tuple(prefix))


@lru_cache(maxsize=4096)  # puts and searches name few namespaces, again and again
def _prefix_id(prefix: tuple[str, ...]) -> str:
    for label in prefix:  # named in LangGraph's terms before the id would be
        check_key(label, "namespace label", empty=True, most=None, nul=True)
    return ITEM_PREFIX + "".join(_escape(label, _ESCAPED) + "/" for label in prefix)


def item_session_id(namespace: tuple[str, ...], key: str) -> str:
    """The session holding item ``key`` of ``namespace``."""
    if not isinstance(key, str):
        raise TypeError(f"an item key must be a str, got {type(key).__name__}")
    check_key(key, "key", empty=True, most=None, nul=True)  # its NUL is escaped
    found = namespace_prefix_id(namespace) + "=" + _escape(key, _ESCAPED_IN_KEY)
    size = len(found.encode("utf-8", "surrogatepass"))
    if size > MAX_KEY_BYTES:
        raise ValueError(f"namespace {namespace!r} and key {key[:40]!r}... take "
                         f"{size} bytes of UTF-8 together, over {MAX_KEY_BYTES}")
    return found


def checked_item_id(namespace: tuple[str, ...], key: str) -> str:
    """:func:`item_session_id`, checked as every session id is (``check_key``)."""
    if not isinstance(key, str):  # a TypeError of ours, never the cache's "unhashable"
        return item_session_id(namespace, key)
    return _checked_item_id(namespace, key)


@lru_cache(maxsize=4096)  # a get names its item again and again: escape and check once
def _checked_item_id(namespace: tuple[str, ...], key: str) -> str:
    return check_key(item_session_id(namespace, key), "session id")


def split_item_session_id(session: str) -> tuple[tuple[str, ...], str] | None:
    """The (namespace, key) an item session holds; None for another session."""
    if not session.startswith(ITEM_PREFIX):
        return None
    labels, separator, key = session[len(ITEM_PREFIX):].partition("=")
    if not separator or (labels and not labels.endswith("/")):
        return None
    return _namespace_of(labels), _unescape(key)


def item_words(namespace: tuple[str, ...], key: str) -> str:
    """An item as users of LedgerStore name it, in errors and reports: the namespace
    as a tuple, so that ``('a/b',)`` and ``('a', 'b')`` read apart."""
    return f"namespace {namespace!r} key {key!r}"


@lru_cache(maxsize=4096)  # a search splits the ids of many items of few namespaces
def _namespace_of(labels: str) -> tuple[str, ...]:
    return tuple(_unescape(label) for label in labels.split("/")[:-1])
