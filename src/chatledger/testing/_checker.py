"""``check_history``: the promises of a ledger, checked on what workers recorded.

Every check compares operations that did not overlap in time (one ended before
the other started), so concurrency never makes a correct store look wrong: an
append still in flight may or may not show in a read that overlaps it. An
indeterminate append (the store did not answer) may be stored or not, but
never twice and never in part.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._results import History
from . import _shape, _summaries, _time
from ._recorder import Record, Recorder
from ._records import AppendRecord, ReadRecord, SummaryRecord
from ._report import Anomaly, Figures, HistoryReport, Latency
from ._timeline import Timeline, timelines

__all__ = ["check_history"]

FinalReads = Mapping[str, "History | Sequence[Any]"]


def check_history(records: Iterable[Record], final_reads: FinalReads | None = None, *,
                  ttl: float | None = None) -> HistoryReport:
    """Check recorded operations, and optionally each session's state after the run.

    ``final_reads`` maps a session to what it held once every worker stopped: a
    ``History`` (``session.read()``) or a list of messages, oldest first.
    Summaries (``maybe_compact``) are checked on it: no summary covers seqs
    past its own; and with the compactions recorded (``Recorder.compact``),
    every message is folded into exactly one summary of the latest summary's
    chain or is in the window after it, cursors grow along the chain, and a
    trim removed nothing outside that chain. With
    ``ttl`` (seconds), a session whose ledger went unwritten that long may have
    expired: losing it then is no anomaly.
    """
    records = list(records)
    finals: list[Record] = [_final(session, held, _last_ledger(records, session))
                            for session, held in (final_reads or {}).items()]
    lines = timelines(records + finals)
    anomalies: list[Anomaly] = []
    for timeline in lines.values():
        anomalies += _anomalies_of(timeline, _time.Expiry(ttl))
    anomalies += _shape.other_session(lines)
    origin = min((r.start for r in records), default=0.0)
    return HistoryReport(tuple(anomalies), _figures(records, lines, anomalies), origin)


def _anomalies_of(timeline: Timeline, expiry: _time.Expiry) -> list[Anomaly]:
    return [*_time.lost(timeline), *_shape.duplicates(timeline), *_shape.torn(timeline),
            *_shape.reordered(timeline), *_time.read_backwards(timeline),
            *_time.ledger_changed(timeline, expiry), *_shape.phantoms(timeline),
            *_summaries.summaries(timeline)]


def _final(session: str, held: History | Sequence[Any], ledger: str | None) -> ReadRecord:
    """The final read; a list of messages, which names no ledger, is taken as read on
    ``ledger`` (the last acknowledged append's): its messages are checked against
    their Acks, never taken for a session gone (``ledger_changed``)."""
    after_all = float("inf")
    recorder = Recorder(worker=-1)
    if isinstance(held, History):
        read = recorder.record_read(session, held.messages, start=after_all, end=after_all,
                                    version=held.version, first_seq=held.first_seq,
                                    ledger=held.ledger)
    else:
        read = recorder.record_read(session, held, start=after_all, end=after_all,
                                    ledger=ledger if held else None)
    return dataclasses.replace(read, final=True)


def _last_ledger(records: list[Record], session: str) -> str | None:
    """The ledger of the session's last acknowledged append (None: no Ack named one)."""
    acks = [r for r in records if isinstance(r, AppendRecord) and r.session == session
            and r.ack is not None]
    last = max(acks, key=lambda r: r.end, default=None)
    return None if last is None or last.ack is None else last.ack.ledger


def _figures(records: list[Record], lines: dict[str, Timeline],
             anomalies: list[Anomaly]) -> Figures:
    appends = [r for r in records if isinstance(r, AppendRecord)]
    reads = [r for r in records if isinstance(r, ReadRecord)]
    lost = {id(a) for x in anomalies if x.kind == "lost" for a in x.operations}
    for timeline in lines.values():
        lost |= _time.left_behind(timeline, anomalies)
    duration = max((r.end for r in records), default=0.0) - min(
        (r.start for r in records), default=0.0)
    return Figures(
        appends=len(appends),
        appends_acknowledged=_count(appends, "ok"),
        appends_failed=_count(appends, "failed"),
        appends_indeterminate=_count(appends, "indeterminate"),
        appends_lost=sum(1 for a in appends if id(a) in lost),
        appends_duplicated=len(_appends_in(anomalies, "duplicate")),
        appends_torn=len(_appends_in(anomalies, "torn")),
        reads=len(reads),
        reads_failed=len(reads) - _count(reads, "ok"),
        reads_backwards=sum(1 for x in anomalies if x.kind == "read_backwards"),
        longest_unavailability=_longest_unavailability(records),
        duration=duration,
        appends_per_second=_rate(_count(appends, "ok"), duration),
        reads_per_second=_rate(_count(reads, "ok"), duration),
        append_latency=Latency.of([a.latency for a in appends if a.outcome == "ok"]),
        read_latency=Latency.of([r.latency for r in reads if r.outcome == "ok"]),
        summaries=sum(1 for r in records if isinstance(r, SummaryRecord)),
        summaries_stored=sum(1 for r in records
                             if isinstance(r, SummaryRecord) and r.stored_at is not None),
    )


def _count(records: Sequence[Record], outcome: str) -> int:
    return sum(1 for record in records if record.outcome == outcome)


def _appends_in(anomalies: list[Anomaly], kind: str) -> set[int]:
    return {id(op) for x in anomalies if x.kind == kind for op in x.operations
            if isinstance(op, AppendRecord)}


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0


def _longest_unavailability(records: list[Record]) -> float:
    """The longest stretch covered by overlapping indeterminate operations: the
    store answered none of them."""
    spans = sorted((r.start, r.end) for r in records if r.outcome == "indeterminate")
    longest, current = 0.0, None
    for start, end in spans:
        if current is None or start > current[1]:
            current = (start, end)
        else:
            current = (current[0], max(current[1], end))
        longest = max(longest, current[1] - current[0])
    return longest
