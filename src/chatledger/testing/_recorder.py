"""The recorder a worker calls: every append and read, with its outcome and timing.

``append`` and ``read`` wrap a chatledger :class:`~chatledger.Session`. Any other
store (LangChain's ``RedisChatMessageHistory``, your own) is recorded with
``append_via`` / ``read_via``, which time a call of yours, or with
``record_append`` / ``record_read`` when you timed it yourself. Errors are
recorded and raised again: the recorder never changes what your code sees.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .._context import marked_through, reply_text, summary_prompt, summary_through
from .._messages import Message
from .._results import Ack, History
from .._sync.store import Session
from ._records import (
    AppendRecord,
    ReadRecord,
    SeenMessage,
    SummaryRecord,
    Window,
    describe_error,
    outcome_of,
)

__all__ = ["Record", "Recorder"]

Record = AppendRecord | ReadRecord | SummaryRecord
_WHOLE = Window()
T = TypeVar("T")


class Recorder:
    """Records one worker's operations, in the order it made them.

    Messages may be chatledger ``Message`` objects or anything with ``id`` and
    ``content`` attributes (LangChain messages): the checker matches them by id,
    or by text when they have no id.
    """

    def __init__(self, worker: int = 0, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.worker = worker
        self.process = os.getpid()
        self.records: list[Record] = []
        self._clock = clock

    def append(self, session: Session, messages: Sequence[Message], **options: Any) -> Ack:
        """``session.append(messages, **options)``, recorded."""
        ack: Ack = self.append_via(session.id, messages,
                                   lambda: session.append(messages, **options))
        return ack

    def read(self, session: Session, *, last: int | None = None, after: int | None = None,
             limit: int | None = None, **options: Any) -> History:
        """``session.read(...)``, recorded with the window it asked for."""
        start = self._clock()
        try:
            history = session.read(last=last, after=after, limit=limit, **options)
        except Exception as exc:
            self.record_read(session.id, (), start=start, end=self._clock(), error=exc)
            raise
        self.record_read(session.id, history.messages, start=start, end=self._clock(),
                         window=Window(last, after, limit), version=history.version,
                         first_seq=history.first_seq, ledger=history.ledger)
        return history

    def compact(self, session: Session, summarize: Any, **options: Any) -> Ack | None:
        """``session.maybe_compact(summarize, **options)``, recorded with what the
        summarizer was given, so that ``check_history`` can follow the chain of
        summaries and tell whether every message is in exactly one of them or
        in the window after the latest."""
        given: list[Message] = []
        text: list[str] = []

        def recorded(messages: list[Message]) -> str:
            given[:] = messages
            if hasattr(summarize, "invoke"):  # a LangChain chat model
                text[:] = [reply_text(summarize.invoke(summary_prompt(messages)))]
            else:
                text[:] = [summarize(messages)]
            return text[0]

        start = self._clock()
        try:
            ack: Ack | None = session.maybe_compact(recorded, **options)
        except Exception as exc:
            if given:  # the summarizer ran: the summary may be stored
                wrote = text[0] if text and isinstance(text[0], str) else ""
                self.record_summary(session.id, given, text=wrote, start=start,
                                    end=self._clock(), error=exc)
            raise
        if given:
            self.record_summary(session.id, given, text=text[0], start=start,
                                end=self._clock(), ack=ack)
        return ack

    def append_via(self, session: str, messages: Sequence[Any], call: Callable[[], T]) -> T:
        """Run ``call()``, which appends ``messages`` to ``session`` in any store.

        A return without error is an acknowledgement; an ``Ack`` returned is kept.
        """
        start = self._clock()
        try:
            result = call()
        except Exception as exc:
            self.record_append(session, messages, start=start, end=self._clock(), error=exc)
            raise
        ack = result if isinstance(result, Ack) else None
        self.record_append(session, messages, start=start, end=self._clock(), ack=ack)
        return result

    def read_via(self, session: str, call: Callable[[], Sequence[T]]) -> Sequence[T]:
        """Run ``call()``, which returns all of ``session``'s messages, oldest first."""
        start = self._clock()
        try:
            messages = call()
        except Exception as exc:
            self.record_read(session, (), start=start, end=self._clock(), error=exc)
            raise
        self.record_read(session, messages, start=start, end=self._clock())
        return messages

    def record_append(self, session: str, messages: Sequence[Any], *, start: float, end: float,
                      ack: Ack | None = None, error: BaseException | None = None,
                      ) -> AppendRecord:
        """Record an append you made and timed: acknowledged unless ``error``."""
        facts = [_facts(message) for message in messages]
        record = AppendRecord(
            session=session, worker=self.worker, process=self.process,
            index=len(self.records), start=start, end=end,
            outcome="ok" if error is None else outcome_of(error),
            error=None if error is None else describe_error(error),
            ids=tuple(i for i, _ in facts), texts=tuple(t for _, t in facts), ack=ack)
        self.records.append(record)
        return record

    def record_summary(self, session: str, given: Sequence[Message], *, text: str,
                       start: float, end: float, ack: Ack | None = None,
                       error: BaseException | None = None) -> SummaryRecord:
        """Record a summary you wrote and timed: ``given`` is what its summarizer
        folded, oldest first (with the summary it builds on first, if any); ``ack``
        the Ack of the stored summary, None if none was stored."""
        base = (given[0].seq or 0) if given and summary_through(given[0]) is not None else 0
        record = SummaryRecord(
            session=session, worker=self.worker, process=self.process,
            index=len(self.records), start=start, end=end,
            outcome="ok" if error is None else outcome_of(error),
            error=None if error is None else describe_error(error),
            folded=tuple(m.seq or 0 for m in given if summary_through(m) is None),
            base=base, text=text, ack=ack)
        self.records.append(record)
        return record

    def record_read(self, session: str, messages: Sequence[Any], *, start: float, end: float,
                    window: Window = _WHOLE, version: int | None = None, first_seq: int = 1,
                    ledger: str | None = None, error: BaseException | None = None,
                    ) -> ReadRecord:
        """Record a read you made and timed. Messages without a ``seq`` are
        numbered from ``first_seq`` in order; ``version`` defaults to the last seq."""
        seen = tuple(_seen(message, first_seq + n) for n, message in enumerate(messages))
        if version is None:
            version = seen[-1].seq if seen else first_seq - 1
        record = ReadRecord(
            session=session, worker=self.worker, process=self.process,
            index=len(self.records), start=start, end=end,
            outcome="ok" if error is None else outcome_of(error),
            error=None if error is None else describe_error(error),
            window=window, messages=seen, version=version, first_seq=first_seq, ledger=ledger)
        self.records.append(record)
        return record


def _facts(message: Any) -> tuple[str | None, str]:
    """A message's id and text, the same way for what is appended and what is read."""
    identity = getattr(message, "id", None)
    content = getattr(message, "content", message)
    if not isinstance(content, str):
        content = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    return (None if identity is None else str(identity)), content


def _seen(message: Any, position: int) -> SeenMessage:
    identity, text = _facts(message)
    seq = getattr(message, "seq", None)
    through = marked_through(message) if isinstance(message, Message) else None
    return SeenMessage(seq=position if seq is None else seq, id=identity, text=text,
                       through_seq=through)
