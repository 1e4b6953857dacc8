"""Checks across time: what an operation that ended earlier promises to one that
starts later. Acknowledged messages stay (lost, misplaced), the version never goes
down (read_backwards) and the ledger stays the same (ledger_changed)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ._recorder import Record
from ._records import AppendRecord, ReadRecord
from ._report import Anomaly, Kind
from ._timeline import Timeline, keys


@dataclass(frozen=True)
class Expiry:
    """A session may expire ``ttl`` seconds after its last write: a ledger gone
    after that long is expired, not lost."""

    ttl: float | None

    def explains(self, timeline: Timeline, ledger: str, gone_by: float) -> bool:
        if self.ttl is None:
            return False
        # Any append that may have written to the ledger slid its expiry.
        writes = [a.start for a in timeline.appends if a.outcome != "failed"
                  and (a.ack is None or a.ack.ledger == ledger) and a.start < gone_by]
        return not writes or gone_by - max(writes) >= self.ttl


def lost(timeline: Timeline) -> Iterator[Anomaly]:
    """Acknowledged messages a later read on the same ledger should show, but does not
    (or shows at another seq than the Ack's)."""
    reported: set[int] = set()
    for read in timeline.reads:
        for append in timeline.acknowledged:
            if id(append) in reported or not append.precedes(read):
                continue
            found = _missing(timeline, append, read)
            if found is not None:
                reported.add(id(append))
                kind, seqs, detail = found
                yield Anomaly(kind, timeline.session, seqs, detail, (append, read))


Finding = tuple[Kind, tuple[int, ...], str]


def _missing(timeline: Timeline, append: AppendRecord, read: ReadRecord) -> Finding | None:
    positions = timeline.positions(read)
    if append.ack is None:  # a store without seqs: only a read of everything can tell
        if read.covered != range(1, read.version + 1):
            return None
        gone = [n for n, key in enumerate(keys(append)) if key not in positions]
        return ("lost", (), f"{len(gone)} of the batch's messages are missing") if gone else None
    ack = append.ack
    if ack.ledger != read.ledger:
        return None  # ledger_changed tells that story; a read without one cannot tell
    for n, key in enumerate(keys(append)):
        seq = ack.first_seq + n
        if seq in read.covered and seq not in positions.get(key, ()):
            if key in positions:
                return ("misplaced", (seq, *positions[key]),
                        f"acknowledged at seq {seq}, read at {positions[key][0]}")
            return "lost", (seq,), "acknowledged, and missing where its Ack put it"
        if seq > read.version:
            return "lost", (seq,), f"acknowledged at seq {seq}; the read saw version {read.version}"
    return None


def read_backwards(timeline: Timeline) -> Iterator[Anomaly]:
    """A read of a ledger at a lower version than an operation on it ended before."""
    done = sorted(_versioned(timeline), key=lambda pair: pair[0].end)
    highest: dict[str | None, tuple[int, Record]] = {}
    position = 0
    for read in timeline.reads:
        while position < len(done) and done[position][0].end < read.start:
            record, ledger, version = done[position]
            if version > highest.get(ledger, (-1, record))[0]:
                highest[ledger] = (version, record)
            position += 1
        version, seen_by = highest.get(read.ledger, (0, read))
        if read.version < version:
            yield Anomaly("read_backwards", timeline.session, (read.version, version),
                          f"read version {read.version} after version {version} was seen",
                          (seen_by, read))


def _versioned(timeline: Timeline) -> Iterator[tuple[Record, str | None, int]]:
    for append in timeline.acknowledged:
        if append.ack is not None:
            yield append, append.ack.ledger, append.ack.version
    for read in timeline.reads:
        yield read, read.ledger, read.version


def ledger_changed(timeline: Timeline, expiry: Expiry) -> Iterator[Anomaly]:
    """An operation that found another ledger (or none) than the one the last
    acknowledged append before it was on. Yields the anomaly and the appends of
    the ledger left behind."""
    acks = sorted((a for a in timeline.acknowledged if a.ack is not None), key=lambda a: a.end)
    reported: set[tuple[str, str | None]] = set()
    position, last = 0, None
    for operation, ledger in sorted(_ledgers(timeline), key=lambda pair: pair[0].start):
        while position < len(acks) and acks[position].end < operation.start:
            last = acks[position]
            position += 1
        if last is None or last.ack is None or ledger == last.ack.ledger:
            continue
        change = (last.ack.ledger, ledger)
        if change not in reported and not expiry.explains(timeline, change[0], operation.end):
            reported.add(change)
            left = sum(1 for a in acks if a.ack is not None and a.ack.ledger == change[0])
            found = "no session" if ledger is None else f"ledger {ledger}"
            yield Anomaly("ledger_changed", timeline.session, (),
                          f"ledger {change[0]} held {left} acknowledged append(s); "
                          f"a later operation found {found}", (last, operation))


def _ledgers(timeline: Timeline) -> Iterator[tuple[Record, str | None]]:
    for append in timeline.acknowledged:
        if append.ack is not None:
            yield append, append.ack.ledger
    for read in timeline.reads:
        if not unknown_ledger(read):
            yield read, read.ledger


def unknown_ledger(read: ReadRecord) -> bool:
    """A read that saw messages and names no ledger: made through another API
    (``read_via``, ``record_read`` without one), it cannot say whether the ledger
    changed, nor (its messages numbered from 1, whatever was trimmed or summarized)
    where the Acks put them. (No ledger and nothing seen is a session that does
    not exist.)"""
    return read.ledger is None and read.version > 0


def left_behind(timeline: Timeline, anomalies: list[Anomaly]) -> set[int]:
    """The acknowledged appends on ledgers that changed away (``id`` of each)."""
    gone = {last.ack.ledger for anomaly in anomalies
            if anomaly.kind == "ledger_changed" and anomaly.session == timeline.session
            and isinstance(last := anomaly.operations[0], AppendRecord) and last.ack is not None}
    return {id(a) for a in timeline.acknowledged if a.ack is not None and a.ack.ledger in gone}
