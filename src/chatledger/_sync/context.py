# Generated from src/chatledger/_async/context.py by scripts/unasync.py: edit that file, not this one.
"""Context that fits, with I/O: budgeted reads and compaction of a session.

The decisions live in :mod:`chatledger._context` (no I/O); this module feeds
them pages read with the backend's ordinary windowed read, from the newest end
backwards: the first page is ``last=64`` (fewer for a budget under 1,024
tokens), each next one the seqs just below, twice as many (at most 1,024).

Costs. A read with ``max_tokens`` stops as soon as the budget is spent: it
touches O(window) entries on every backend. A read with ``with_summary`` goes
back to the latest summary's cursor: it touches the entries appended since the
latest summary (one page when compaction keeps that tail short; a session
never summarized is read to its start).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Sequence
from typing import Any

from .. import _core
from .._backends.contract import RawHistory, ReadQuery
from .._context import (
    SUMMARIZER_IS_ASYNC,
    Walk,
    count_with,
    cursor_fault,
    plan_compaction,
    reply_text,
    split_unit,
    summary_entry,
    summary_prompt,
    summary_through,
    unanswered_call,
)
from .._errors import ConflictError, MemoryLostError
from .._messages import Message
from .._results import Ack, History
from .handles import SessionHandle

__all__ = ["compact", "read_fitting", "write_summary"]

FIRST_PAGE = 64
LARGEST_PAGE = 1024
STORE_ATTEMPTS = 10  # conflicts a summary's write survives before it is given up


def read_fitting(session: SessionHandle, walk: Walk, floor: int,
                       ledger: str | None) -> History:
    """Feed ``walk`` pages from the newest end until it has its window."""
    backend, options = session._backend, session.store.options
    size = walk.first_page(FIRST_PAGE)
    query = ReadQuery(last=size)
    raw = backend.read(session.id, query)
    session._seen(raw.ledger, raw.version)
    newest = _core.to_history(session.id, raw, floor, ledger, options,
                               query=query)  # loss checked once
    walk.feed(newest.messages, raw.first_seq)
    lowest = _lowest(newest.messages, raw)
    first_seq = raw.first_seq
    while walk.wants_more():
        size = min(size * 2, LARGEST_PAGE)
        # A limit counts from the oldest entry kept: asked from below a trim, a
        # page would run on into seqs already taken.
        after = max(lowest - 1 - size, first_seq - 1, 0)
        query = ReadQuery(after=after, limit=lowest - 1 - after)
        page = backend.read(session.id, query)
        if page.ledger != raw.ledger:  # deleted and written again between two pages
            raise MemoryLostError(session.id, raw.version, page.version, ledger=raw.ledger,
                                  found_ledger=page.ledger)
        _core.check_window(session.id, page, query)
        # A trim between two pages moves the oldest entry up: what it returns at
        # or above ``lowest`` was taken already.
        messages = [message for message in _core.decode_entries(session.id, page, options)
                    if (message.seq or 0) < lowest]
        first_seq = max(first_seq, page.first_seq)
        walk.feed(messages, page.first_seq)
        lowest = _lowest(messages, page)
    window = walk.window()
    return History(messages=window.messages, version=raw.version, first_seq=raw.first_seq,
                   ledger=raw.ledger, summary=walk.summary,
                   tokens=None if walk.budget is None else window.tokens,
                   cut_seq=window.cut_seq, over_budget=window.over_budget)


def _lowest(messages: Sequence[Message], raw: RawHistory) -> int:
    return (messages[0].seq or 0) if messages else raw.first_seq


def compact(
    session: SessionHandle, summarize: Any, *, trigger_tokens: int, keep_tokens: int,
    count_tokens: Any = None,
) -> Ack | None:
    """Summarize the oldest unsummarized messages when they exceed ``trigger_tokens``.

    See :meth:`chatledger.Session.maybe_compact`.
    """
    _core.check_count(trigger_tokens, "trigger_tokens")
    _core.check_count(keep_tokens, "keep_tokens")
    count = count_with(count_tokens)
    history = session.read(with_summary=True, count_tokens=count)
    plan = plan_compaction(history.messages, count, trigger_tokens, keep_tokens)
    if plan is None:
        return None
    folded, through_seq = plan
    previous = [] if history.summary is None else [history.summary]
    text = _summarized(summarize, [*previous, *folded])
    return _store_summary(session, text, through_seq, history)


def _summarized(summarize: Any, messages: list[Message]) -> str:
    """The summarizer's text: a LangChain chat model's reply, or a callable's result."""
    if hasattr(summarize, "invoke"):
        return reply_text(summarize.invoke(summary_prompt(messages)))
    result = summarize(messages)
    if inspect.isawaitable(result):  # an async summarizer
        return _text(result)
    return _text(result)


def _text(result: object) -> str:
    if inspect.isawaitable(result):  # the sync twin's: an async summarizer on a sync store
        close = getattr(result, "close", None)
        if close is not None:
            close()  # never awaited, and no warning saying so
        raise TypeError(SUMMARIZER_IS_ASYNC)
    if not isinstance(result, str):
        raise TypeError(f"the summarizer must return a str, got {type(result).__name__}")
    return result


def _store_summary(session: SessionHandle, text: str, through_seq: int,
                         history: History) -> Ack | None:
    """Append the summary at the version it was read at, or after what arrived since.

    Messages that arrived while the summarizer ran are above ``through_seq``:
    a summary stored after them still does not cover them. So on a conflict
    the summary is stored after them, at the version just checked, unless
    another summary landed meanwhile (then None: that one is the latest).
    Always at an expected version: a summary stored blind could land after
    another with a later cursor, move the latest cursor back, and leave
    uncovered what a trim of the other already dropped. A session too busy
    for ``STORE_ATTEMPTS`` writes gets no summary this time (None).
    """
    entry = summary_entry(text, through_seq)
    version = history.version
    for _ in range(STORE_ATTEMPTS):
        try:
            return _append_summary(session, entry, version, history.summary,
                                         history.ledger)
        except ConflictError:
            landed = session.read(after=version, ledger=history.ledger)
            if any(summary_through(m) is not None for m in landed.messages):
                return None
            version = landed.version
    return None


def write_summary(session: SessionHandle, text: str, through_seq: int,
                        expect_version: int | None, ledger: str | None) -> Ack:
    """Store a summary after the latest one, at ``expect_version`` or (None) at
    whatever version is stored, retried on conflicts.

    See :meth:`chatledger.Session.summarize`.
    """
    entry = summary_entry(text, through_seq)
    attempts = STORE_ATTEMPTS if expect_version is None else 1
    for _ in range(attempts - 1):
        with contextlib.suppress(ConflictError):
            return _summarize_once(session, entry, expect_version, ledger)
    return _summarize_once(session, entry, expect_version, ledger)


def _summarize_once(session: SessionHandle, entry: Message, expect_version: int | None,
                          ledger: str | None) -> Ack:
    # The latest summary is the one the cursor must pass: read at the version the
    # write is made at, so the append's version check keeps it the latest.
    seen = session.read(with_summary=True, ledger=ledger)
    if seen.summary is not None and seen.summary.id == entry.id:
        # The same summary again: the append stores nothing and returns its Ack.
        return session.append([entry], expect_version=expect_version, ledger=ledger)
    if expect_version is not None and seen.version != expect_version:
        raise ConflictError(session.id, expect_version, seen.version)
    through_seq = summary_through(entry) or 0
    if (split := split_unit(seen.messages, through_seq)) is not None:
        raise ValueError(
            f"through_seq {through_seq} cuts the message at seq {split[0]} from its tool "
            f"results (to seq {split[1]}): reads would leave those results out, neither "
            f"summarized nor kept; summarize through seq {split[1]}, or {split[0] - 1}")
    if (waiting := unanswered_call(seen.messages, through_seq)) is not None:
        raise ValueError(
            f"through_seq {through_seq} covers the tool calls of seq {waiting}, whose "
            f"results are not stored by then: reads would leave them out when they come; "
            f"summarize through seq {waiting - 1}, or once they are stored")
    return _append_summary(session, entry, seen.version, seen.summary, ledger)


def _append_summary(session: SessionHandle, entry: Message, version: int,
                          latest: Message | None, ledger: str | None) -> Ack:
    """Append the summary ``entry`` at ``version``, after the ``latest`` summary,
    if its cursor keeps the rule (:func:`chatledger._context.cursor_fault`): every
    summary the store writes passes here."""
    through_seq = summary_through(entry) or 0
    latest_through = None if latest is None else summary_through(latest)
    fault = cursor_fault(through_seq, version + 1, latest_through)
    if fault == "ahead":
        raise ValueError(f"through_seq {through_seq} is past the session's version {version}: "
                         "a summary covers only messages stored before it")
    if fault == "behind":
        raise ValueError(f"through_seq {through_seq} is not past the latest summary's cursor "
                         f"(seq {latest_through}): a summary covers more than the one "
                         "before it")
    return session.append([entry], expect_version=version, ledger=ledger)
