"""Hand-made histories for the checker's tests: each operation placed in time by hand."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from chatledger import Ack, BackendUnavailable, ConflictError, Message, user
from chatledger.testing import AppendRecord, ReadRecord, Recorder, Window

Stored = Sequence[tuple[int, str]]  # (seq, text); a message's id is its text


def message(text: str, seq: int | None = None, *, with_id: bool = True) -> Message:
    # A store that drops ids gives messages without one.
    return dataclasses.replace(user(text, id=text), seq=seq, id=text if with_id else None)


class Script:
    """Workers' operations at the times a test gives: ``at`` starts an operation that
    lasts ``took`` seconds."""

    def __init__(self) -> None:
        self.recorders: dict[int, Recorder] = {}

    def recorder(self, worker: int) -> Recorder:
        return self.recorders.setdefault(worker, Recorder(worker))

    @property
    def records(self) -> list[AppendRecord | ReadRecord]:
        return [r for recorder in self.recorders.values() for r in recorder.records]

    def ack(self, worker: int, at: float, texts: Sequence[str], first_seq: int, *,
            ledger: str = "L1", session: str = "s", took: float = 0.5,
            deduplicated: bool = False, version: int | None = None) -> AppendRecord:
        last = first_seq + len(texts) - 1
        ack = Ack(first_seq, last, last if version is None else version, deduplicated,
                  ledger=ledger)
        return self.recorder(worker).record_append(
            session, [message(t) for t in texts], start=at, end=at + took, ack=ack)

    def foreign_ack(self, worker: int, at: float, texts: Sequence[str], *,
                    session: str = "s", with_id: bool = True) -> AppendRecord:
        return self.recorder(worker).record_append(
            session, [message(t, with_id=with_id) for t in texts], start=at, end=at + 0.5)

    def unanswered(self, worker: int, at: float, texts: Sequence[str], *,
                   session: str = "s", with_id: bool = True) -> AppendRecord:
        return self.recorder(worker).record_append(
            session, [message(t, with_id=with_id) for t in texts], start=at, end=at + 0.5,
            error=BackendUnavailable("timed out"))

    def refused(self, worker: int, at: float, texts: Sequence[str], *,
                session: str = "s") -> AppendRecord:
        return self.recorder(worker).record_append(
            session, [message(t) for t in texts], start=at, end=at + 0.5,
            error=ConflictError(session, 1, 2))

    def read(self, worker: int, at: float, stored: Stored, *, version: int | None = None,
             first_seq: int | None = None, ledger: str | None = "L1", session: str = "s",
             window: Window | None = None, with_ids: bool = True) -> ReadRecord:
        messages = [message(text, seq, with_id=with_ids) for seq, text in stored]
        seqs = [seq for seq, _ in stored]
        return self.recorder(worker).record_read(
            session, messages, start=at, end=at + 0.5, window=window or Window(),
            version=max(seqs, default=0) if version is None else version,
            first_seq=min(seqs, default=1) if first_seq is None else first_seq, ledger=ledger)


def numbered(*texts: str, start: int = 1) -> list[tuple[int, str]]:
    return [(start + n, text) for n, text in enumerate(texts)]
