"""The one-store clauses of ``check_store``: each puts items under its own namespace
``(root, clause)`` through ``BaseStore``'s public API, reads them back and says
what it found.

A clause returns ``(verdict, reason)``; it never sweeps, so what it reads is
what a caller would read between sweeps. Every clause checks its reads found
something (an item it put comes back), so a store that returns nothing never
passes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import BaseStore, PutOp

from ._records import describe_error
from ._store_report import Verdict

__all__ = ["Context", "Finding", "expiry", "filter_then_limit", "large_values", "namespaces",
           "retried_put"]

Finding = tuple[Verdict, str]
Namespace = tuple[str, ...]
# Past this many problems, a reason says how many more there are.
_SHOWN = 3
# Margin past an item's expiry before it is read: stores stamp times at a
# second's resolution (SQLite's CURRENT_TIMESTAMP) and on another clock (a
# server's NOW()).
_EXPIRY_MARGIN = 1.5

LABELS: tuple[Namespace, ...] = (
    ("a",), ("a", "b"), ("ab",), ("a:b",), ("a/b",), ("a*",), ("a%",), ("a_",), ("a\\b",),
    ("a b",), ("A",), ("=a",), ("a", "*"), ("é",), ("e\u0301",), ("日本語",), ("🙂",),
    ("\u2028",), ("a\"b",), ("a'b",),
)
"""Namespaces (under the clause's own) that joined text, a LIKE pattern, an escape,
a case-folding or normalizing collation, or a wildcard would confuse."""

REFUSED_LABELS: tuple[Namespace, ...] = (("a.b",), ("a\x00b",))
"""Labels BaseStore refuses (``.`` and NUL): its ``get`` and ``search`` refuse them,
so a store whose put took one would keep an item no read can reach."""

KEYS = ("k", "K", "k.x", "k/x", "k:x", "k*", "k%", "k_", "é", "e\u0301", "k ", " k")


@dataclass(frozen=True)
class Context:
    """What every clause of one check shares."""

    root: Namespace
    ttl_seconds: float
    large_value_bytes: int

    def namespace(self, clause: str, *labels: str) -> Namespace:
        return (*self.root, clause, *labels)


def expiry(store: BaseStore, context: Context) -> Finding:
    """An item past its TTL is never returned by ``get``, ``search`` (with and
    without a filter) or ``list_namespaces`` (a namespace whose only item expired
    is not listed), whether or not a sweep ran; items without a TTL, or with a
    long one, still are."""
    if not store.supports_ttl:
        return "n/a", f"{type(store).__name__}.supports_ttl is False: put(ttl=...) is refused"
    base = context.namespace("expiry")
    gone, kept = (*base, "gone"), (*base, "kept")
    minutes = context.ttl_seconds / 60.0
    store.put(gone, "short", {"tag": "x"}, ttl=minutes)
    store.put(kept, "short", {"tag": "x"}, ttl=minutes)
    store.put(kept, "forever", {"tag": "x"}, ttl=None)
    store.put(kept, "long", {"tag": "x"}, ttl=24 * 60.0)
    time.sleep(context.ttl_seconds + _EXPIRY_MARGIN)  # the clause is about time passing
    seen = _expired_reads(store, base, gone, kept)
    live = {item.key for item in store.search(kept, limit=10)}
    if seen:
        return "fail", ("an item put with a TTL of "
                        f"{context.ttl_seconds:g} s (key 'short') returned "
                        f"{context.ttl_seconds + _EXPIRY_MARGIN:g} s later by "
                        + ", ".join(seen))
    if live != {"forever", "long"}:
        return "fail", f"search of {_show(kept)} gave {sorted(live)}, not the two live items"
    return "pass", (f"not returned by {', '.join(_EXPIRY_READS)} "
                    f"{context.ttl_seconds + _EXPIRY_MARGIN:g} s after a "
                    f"{context.ttl_seconds:g} s TTL, unswept; live items kept")


_EXPIRY_READS = ("get", "search", "search with a filter", "list_namespaces")


def _expired_reads(store: BaseStore, base: Namespace, gone: Namespace,
                   kept: Namespace) -> list[str]:
    seen = []
    if store.get(gone, "short", refresh_ttl=False) is not None:
        seen.append(f"get of key 'short' in {_show(gone)}")
    if store.get(kept, "short", refresh_ttl=False) is not None:
        seen.append(f"get of key 'short' in {_show(kept)}")
    found = store.search(base, limit=100, refresh_ttl=False)
    if any(item.key == "short" for item in found):
        seen.append("search")
    filtered = store.search(base, filter={"tag": "x"}, limit=100, refresh_ttl=False)
    if any(item.key == "short" for item in filtered):
        seen.append("search with a filter")
    if gone in store.list_namespaces(prefix=base, limit=100):
        seen.append(f"list_namespaces (lists {_show(gone)}, whose only item expired)")
    return seen


def namespaces(store: BaseStore, context: Context) -> Finding:
    """Namespaces are tuples: labels that joined text, patterns, escapes or collations
    would confuse (``:``, ``/``, ``*``, ``%``, ``_``, ``\\``, case, NFC and NFD
    forms of one letter, ...) stay distinct and come back equal from ``get``,
    ``search`` and ``list_namespaces``; ``search(prefix)`` returns exactly the
    items under that tuple prefix; keys likewise; a ``get`` or ``search`` of a
    namespace never put does not make it listed. A put under a label with
    ``.`` or NUL is refused, as ``BaseStore``'s reads refuse them."""
    base = context.namespace("namespaces")
    spaces = [(*base, *labels) for labels in LABELS]
    taken = [labels for labels in REFUSED_LABELS if _stored(store, (*base, *labels))]
    for space in spaces:
        store.put(space, "k", {"ns": list(space)})
    holder = (*base, "keys")
    for key in KEYS:
        store.put(holder, key, {"key": key})
    problems = [f"put took the label {labels[0]!r}, which BaseStore's reads refuse"
                for labels in taken]
    problems += [p for space in spaces for p in _namespace_problems(store, spaces, space)]
    problems += _key_problems(store, holder)
    unread = (*base, "never put")  # a read must not make a namespace appear
    store.get(unread, "k")
    store.search(unread)
    listed = store.list_namespaces(prefix=base, limit=1000)
    if unread in listed:
        problems.append(f"list_namespaces lists {_show(unread)}, which only a get and a "
                        f"search named")
    elif sorted(listed) != sorted([*spaces, holder, *((*base, *t) for t in taken)]):
        problems.append(f"list_namespaces gave {_diff(_shown(listed), _shown([*spaces, holder]))}")
    if problems:
        return "fail", _listed("", problems)
    return "pass", (f"{len(spaces)} namespaces and {len(KEYS)} keys distinct, each "
                    f"round-trips through get, search and list_namespaces; labels with . "
                    f"and NUL refused")


def _stored(store: BaseStore, space: Namespace) -> bool:
    """Put the item; False when the store refused the namespace (nothing stored)."""
    try:
        store.put(space, "k", {"ns": list(space)})
    except ValueError:  # InvalidNamespaceError is one
        return False
    return True


def _namespace_problems(store: BaseStore, spaces: Sequence[Namespace],
                        space: Namespace) -> list[str]:
    problems = []
    item = store.get(space, "k")
    if item is None or item.value != {"ns": list(space)} or tuple(item.namespace) != space:
        problems.append(f"get {_show(space)} gave {_show_item(item)}")
    found = sorted(tuple(i.namespace) for i in store.search(space, limit=1000))
    under = sorted(s for s in spaces if s[:len(space)] == space)
    if found != under:
        problems.append(f"search {_show(space)} gave {_diff(_shown(found), _shown(under))}")
    return problems


def _key_problems(store: BaseStore, holder: Namespace) -> list[str]:
    problems = [f"get key {key!r} gave {_show_item(item)}" for key in KEYS
                if (item := store.get(holder, key)) is None or item.value != {"key": key}
                or item.key != key]
    keys = sorted(item.key for item in store.search(holder, limit=1000))
    if keys != sorted(KEYS):
        problems.append(f"search of the keys gave {_diff(keys, KEYS)}")
    return problems


def retried_put(store: BaseStore, context: Context) -> Finding:
    """What a caller's retry of a put whose reply was lost relies on (a black-box
    check cannot lose a reply; chatledger's own retries are checked under real
    faults in its test suite): a put repeated with the same value leaves one
    item with that value (``search`` lists it once, ``list_namespaces`` its
    namespace once); puts of one key apply in the order they were acknowledged
    (after ``put(A)`` then ``put(B)``, every read gives B, also when A is put
    again before B, and within one ``batch``); a delete then a put leave the
    put."""
    space = context.namespace("retried")
    problems: list[str] = []
    for _ in range(2):  # the put and its retry
        store.put(space, "once", {"v": "A"})
    _expect(store, space, "once", {"v": "A"}, after="a put retried with the same value",
            problems=problems)
    for step in range(8):
        store.put(space, "order", {"v": step})
        store.put(space, "order", {"v": step})  # retried, then the next put
        _expect(store, space, "order", {"v": step}, after=f"put {step} and its retry",
                problems=problems)
    store.batch([PutOp(space, "batched", {"v": "A"}), PutOp(space, "batched", {"v": "B"})])
    _expect(store, space, "batched", {"v": "B"}, after="batch [put A, put B]",
            problems=problems)
    store.batch([PutOp(space, "revived", {"v": "A"}), PutOp(space, "revived", None),
                 PutOp(space, "revived", {"v": "B"})])
    _expect(store, space, "revived", {"v": "B"}, after="batch [put A, delete, put B]",
            problems=problems)
    listed = store.list_namespaces(prefix=space)
    if listed != [space]:
        problems.append(f"list_namespaces gave {_shown(listed)[:_SHOWN]}, not "
                        f"[{_show(space)}] once")
    if problems:
        return "fail", _listed("", problems)
    return "pass", ("a repeated put leaves one item; each read gives the last acknowledged "
                    "put (8 put pairs, 2 batches)")


def _expect(store: BaseStore, space: Namespace, key: str, value: dict[str, Any], *,
            after: str, problems: list[str]) -> None:
    got = store.get(space, key)
    rows = [item for item in store.search(space, limit=1000) if item.key == key]
    if got is None or got.value != value:
        problems.append(f"after {after}, get gave {_show_item(got)}, not {value}")
    if [row.value for row in rows] != [value]:
        problems.append(f"after {after}, search listed {[r.value for r in rows]}, "
                        f"not {value} once")


def filter_then_limit(store: BaseStore, context: Context) -> Finding:
    """``search`` applies its ``filter`` before ``limit`` and ``offset``: a page of
    ``limit`` holds ``limit`` matches while more exist, and paging through
    ``offset`` gives every match once, however many newer items do not match."""
    space = context.namespace("filters")
    # One match in four, spread out: a page taken before filtering holds one
    # match however the store orders items (by time either way, or by key).
    matches = {f"i{n:02}" for n in range(40) if n % 4 == 3}
    for n in range(40):
        kind = "match" if f"i{n:02}" in matches else "other"
        store.put(space, f"i{n:02}", {"kind": kind, "n": n if kind == "match" else 100 + n})
    problems = []
    first = store.search(space, filter={"kind": "match"}, limit=4)
    if len(first) != 4 or any(item.key not in matches for item in first):
        problems.append(f"search(filter, limit=4) gave {sorted(i.key for i in first)}")
    paged = _paged(store, space, {"kind": "match"}, 3)
    if sorted(paged) != sorted(matches):
        problems.append(f"paging 3 at a time gave {_diff(paged, matches)}")
    compared = store.search(space, filter={"n": {"$lt": 100}}, limit=4, offset=4)
    if len(compared) != 4 or any(item.key not in matches for item in compared):
        problems.append(f"search(n < 100, limit=4, offset=4) gave {[i.key for i in compared]}")
    if problems:
        return "fail", _listed("", problems)
    return "pass", "10 matches among 40 items: pages of 4 and 3, and $lt with an offset of 4"


def _paged(store: BaseStore, space: Namespace, where: dict[str, Any], size: int) -> list[str]:
    keys: list[str] = []
    for offset in range(0, 60, size):
        page = store.search(space, filter=where, limit=size, offset=offset)
        keys += [item.key for item in page]
        if not page:
            break
    return keys


def large_values(store: BaseStore, context: Context) -> Finding:
    """A value whose compact JSON is ``large_value_bytes`` long (1 MiB by default: text
    mixing ASCII, accents, CJK, emoji, quotes, backslashes and line separators,
    and a long list of numbers) comes back equal from ``get`` and ``search``. A
    put that raises fails the clause (the reason says whether anything was
    stored): a value refused is not a value kept."""
    space = context.namespace("large")
    value = large_value(context.large_value_bytes)
    size = _json_size(value)
    try:
        store.put(space, "big", value)
    except Exception as exc:
        kept = "nothing stored" if store.get(space, "big") is None else "yet an item is stored"
        return "fail", f"put of {size:,} bytes raised {describe_error(exc)}"[:240] + f"; {kept}"
    got = store.get(space, "big")
    found = [item for item in store.search(space, limit=10) if item.key == "big"]
    problems = []
    if got is None or got.value != value:
        problems.append(f"get gave {_compared(got.value if got else None, value)}")
    if len(found) != 1:
        problems.append(f"search listed it {len(found)} times")
    elif found[0].value != value:
        problems.append(f"search gave {_compared(found[0].value, value)}")
    if problems:
        return "fail", _listed("", problems)
    return "pass", f"a value of {size:,} bytes of compact JSON round-trips through get and search"


def large_value(size: int) -> dict[str, Any]:
    """A value whose compact JSON is at least ``size`` bytes (exactly, past a few hundred),
    the same on every call: three quarters text, a quarter numbers."""
    piece = "chatledger é 日本 🙂 \"q\" \\ \u2028 tab\t|"
    per_piece = len(json.dumps(piece, ensure_ascii=False).encode()) - 2
    text = piece * max(1, 3 * size // 4 // per_piece)
    value: dict[str, Any] = {"text": text, "numbers": [i + 0.5 for i in range(size // 4 // 9)],
                             "nested": {"deep": [[True, None, -1, 2**53 + 1]]}}
    value["text"] = text + "x" * max(0, size - _json_size(value))
    return value


def _json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON, as stores keep it."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _compared(got: Any, want: dict[str, Any]) -> str:
    if not isinstance(got, dict):
        return repr(got)[:60]
    text = got.get("text")
    if isinstance(text, str) and text != want["text"]:
        at = next((i for i, (a, b) in enumerate(zip(text, want["text"], strict=False))
                   if a != b), min(len(text), len(want["text"])))
        return (f"text of {len(text)} characters (written: {len(want['text'])}), "
                f"differing from character {at}")
    return "a value that differs from the one written"


def _show(space: Namespace) -> str:
    return repr(space[2:])  # past the run's root and the clause's label


def _shown(spaces: Sequence[Namespace]) -> list[Namespace]:
    return [space[2:] for space in spaces]


def _show_item(item: Any) -> str:
    if item is None:
        return "nothing"
    return f"{tuple(item.namespace)[2:]!r}/{item.key!r} = {item.value!r}"[:120]


def _diff(got: Sequence[Any], want: Any) -> str:
    missing = [w for w in want if w not in got]
    extra = [g for g in got if g not in want]
    twice = sorted({g for g in got if list(got).count(g) > 1})
    parts = [f"{name} {items[:_SHOWN]}" + (f" (+{len(items) - _SHOWN})"
                                           if len(items) > _SHOWN else "")
             for name, items in (("missing", missing), ("extra", extra), ("twice", twice))
             if items]
    return "; ".join(parts) or "the same items in another order"


def _listed(head: str, problems: Sequence[str]) -> str:
    shown = "; ".join(problems[:_SHOWN])
    more = f"; and {len(problems) - _SHOWN} more" if len(problems) > _SHOWN else ""
    return f"{head} {shown}{more}".strip()

