"""Stores that break one promise each, to prove every clause of ``check_store`` can
fail: InMemoryStore behind a wrapper that gets one thing wrong on purpose."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

FLAWS = ("raising", "amnesiac", "accepts_dots", "loses_puts", "full_after_20", "ignores_ttl",
         "joined_namespaces", "merging_puts", "first_write_wins", "appending_puts",
         "limit_before_filter", "truncating")
_JOIN = ":"
_ROW = "~"
_TRUNCATED_AT = 64 * 1024


class FlawedStore(BaseStore):
    """InMemoryStore with one flaw (one of ``FLAWS``):

    - ``raising``: every put raises;
    - ``amnesiac``: acknowledges every put and stores nothing (TTL too);
    - ``accepts_dots``: its put takes labels holding ``.`` and NUL, which
      ``BaseStore``'s reads refuse;
    - ``loses_puts``: every 7th put is acknowledged and dropped;
    - ``full_after_20``: a thread's puts raise after its 20th (a quota);
    - ``ignores_ttl``: says it supports TTL, and keeps every item forever;
    - ``joined_namespaces``: matches a search prefix as text, the labels
      joined with ``:`` (``("a",)`` finds ``("ab",)`` and ``("a:b",)``);
    - ``merging_puts``: a put updates the stored value's fields instead of
      replacing the value (two writers' fields mix);
    - ``first_write_wins``: a put to a key that holds a value is acknowledged
      and dropped;
    - ``appending_puts``: each put adds a row; ``search`` lists every row;
    - ``limit_before_filter``: ``search`` takes its page, then filters it;
    - ``truncating``: text over 64 KiB is cut, as a too-small column would.
    """

    def __init__(self, flaw: str) -> None:
        if flaw not in FLAWS:
            raise ValueError(f"unknown flaw {flaw!r}")
        self.flaw = flaw
        self.supports_ttl = flaw in ("ignores_ttl", "amnesiac")
        self.inner = InMemoryStore()
        self._lock = threading.Lock()
        self._rows: dict[tuple[tuple[str, ...], str], int] = {}
        self._puts = 0
        self._mine = threading.local()

    def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any],
            index: Any = None, *, ttl: Any = None) -> None:
        if self.flaw != "accepts_dots":
            super().put(namespace, key, value, index, ttl=ttl)
            return
        self.batch([PutOp(namespace, key, value)])  # no namespace validation

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        with self._lock:
            return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return self.batch(ops)

    def _run(self, op: Op) -> Result:
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        assert isinstance(op, ListNamespacesOp)
        return self._list(op)

    def _one(self, op: Op) -> Any:
        return self.inner.batch([op])[0]

    def _put(self, op: PutOp) -> None:
        self._puts += 1
        self._mine.puts = getattr(self._mine, "puts", 0) + 1
        if self.flaw == "raising" or (self.flaw == "full_after_20" and self._mine.puts > 20):
            raise RuntimeError("disk full")
        if self.flaw == "amnesiac" or (self.flaw == "loses_puts" and self._puts % 7 == 0):
            return
        value, key, namespace = op.value, op.key, op.namespace
        existing = self._lookup(namespace, key)
        if self.flaw == "first_write_wins" and existing is not None:
            return
        if self.flaw == "merging_puts" and existing is not None and value is not None:
            value = {**existing.value, **value}
        if self.flaw == "truncating" and value is not None:
            value = {k: v[:_TRUNCATED_AT] if isinstance(v, str) else v for k, v in value.items()}
        if self.flaw == "appending_puts" and value is not None:
            row = self._rows[(namespace, key)] = self._rows.get((namespace, key), 0) + 1
            self._one(PutOp(namespace, f"{key}{_ROW}{row}", value))
        self._one(PutOp(namespace, key, value))

    def _get(self, op: GetOp) -> Item | None:
        return self._lookup(op.namespace, op.key)

    def _lookup(self, namespace: tuple[str, ...], key: str) -> Item | None:
        """The item, found without InMemoryStore's get (which makes an absent
        namespace listed: a flaw these stores do not share)."""
        if namespace not in self.inner._data:
            return None
        return self._one(GetOp(namespace, key))

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if self.flaw == "joined_namespaces":  # the parent's items, matched as text
            text = _JOIN.join(op.namespace_prefix)
            every = self._one(SearchOp(op.namespace_prefix[:-1], op.filter, 100_000, 0))
            return [i for i in every
                    if _JOIN.join(i.namespace).startswith(text)][op.offset:op.offset + op.limit]
        if self.flaw == "limit_before_filter":
            page = self._one(SearchOp(op.namespace_prefix, None, op.limit, op.offset))
            matching = {(tuple(i.namespace), i.key) for i in self._one(
                SearchOp(op.namespace_prefix, op.filter, 100_000, 0))}
            return [i for i in page if (tuple(i.namespace), i.key) in matching]
        found: list[SearchItem] = self._one(op)
        if self.flaw == "appending_puts":
            return [_moved(i, i.namespace, i.key.split(_ROW)[0]) for i in found]
        return found

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        return self._one(op)


def _moved(item: Any, namespace: tuple[str, ...], key: str) -> SearchItem:
    return SearchItem(namespace=namespace, key=key, value=item.value,
                      created_at=item.created_at, updated_at=item.updated_at,
                      score=getattr(item, "score", None))


def flawed(flaw: str) -> FlawedStore:
    return FlawedStore(flaw)


def only_here(target: str) -> FlawedStore:
    """A store the checking process opens and its spawned writers cannot."""
    if multiprocessing.parent_process() is not None:
        raise RuntimeError(f"no store here: {target}")
    return FlawedStore("ignores_ttl")
