"""Checks of summaries: every message is folded into exactly one summary of the
live chain, or is in the window after the latest summary.

The *live chain* is the latest summary entry of a final read of the whole
ledger, the summary its summarizer was given first (the one it builds on),
that one's, and so on: what a model reading ``with_summary=True`` is told,
directly or through summaries folded into each other. A summary covering
through seq ``k`` owns the messages after its base's cursor up to ``k``; its
:class:`~chatledger.testing.SummaryRecord` says which ones its summarizer was
actually given. A message owned but not given was lost between summaries (the
race of a message appended while the summarizer ran); one given twice, or
given and still in the window, is told twice.

The final read alone shows where each summary is and what it covers through:
without records only the cursors can be checked (a summary never covers its
own seq or later, seqs that did not exist when it was written; each covers
past the one stored before it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .._context import cursor_fault
from ._records import AppendRecord, ReadRecord, SeenMessage, SummaryRecord, Window
from ._report import Anomaly, Kind
from ._timeline import Timeline

__all__ = ["summaries"]

_WHOLE = Window()
_SHOWN_SEQS = 20  # seqs listed in one anomaly's detail


def summaries(timeline: Timeline) -> Iterator[Anomaly]:
    """The anomalies of summaries seen in the session's final read of everything."""
    for read in timeline.reads:
        if read.final and read.window == _WHOLE:
            entries = {m.seq: m for m in read.messages if m.through_seq is not None}
            yield from _cursors(timeline, read, entries)
            if timeline.summaries:
                yield from _stored_missing(timeline, read, entries)
                yield from _Coverage(timeline, read, entries).anomalies()


def _cursors(timeline: Timeline, read: ReadRecord,
             entries: dict[int, SeenMessage]) -> Iterator[Anomaly]:
    """Each summary against the rule the store keeps when it writes one
    (:func:`chatledger._context.cursor_fault`), in ledger order."""
    previous: tuple[int, int] | None = None
    for seq in sorted(entries):
        through = entries[seq].through_seq or 0
        fault = cursor_fault(through, seq, None if previous is None else previous[1])
        if fault == "ahead":
            yield Anomaly("summary_cursor", timeline.session, (seq,),
                          f"the summary at seq {seq} covers through seq {through}, "
                          "at or past its own seq: seqs that did not exist when it was "
                          "written", (*_stored_by(timeline, seq), read))
        elif fault == "behind" and previous is not None:
            yield Anomaly("summary_cursor", timeline.session, (previous[0], seq),
                          f"the summary at seq {seq} covers through seq {through}, not past "
                          f"the summary before it (seq {previous[0]}, through seq "
                          f"{previous[1]}): cursors must grow",
                          (*_stored_by(timeline, seq), read))
        previous = (seq, through)


def _stored_missing(timeline: Timeline, read: ReadRecord,
                    entries: dict[int, SeenMessage]) -> Iterator[Anomaly]:
    for record in timeline.summaries:
        seq = record.stored_at
        if (seq is not None and record.ack is not None and record.ack.ledger == read.ledger
                and seq in read.covered and seq not in entries):
            yield Anomaly("lost", timeline.session, (seq,),
                          f"the summary stored at seq {seq} is not there", (record, read))


def _stored_by(timeline: Timeline, seq: int) -> list[SummaryRecord]:
    return [r for r in timeline.summaries if r.stored_at == seq]


@dataclass
class _Link:
    """One summary of the live chain: where it is, its record, the seqs it owns."""

    seq: int
    record: SummaryRecord
    owns: range


class _Coverage:
    """Walks the live chain and counts who tells each message."""

    def __init__(self, timeline: Timeline, read: ReadRecord,
                 entries: dict[int, SeenMessage]) -> None:
        self.timeline, self.read, self.entries = timeline, read, entries
        self.broken: list[Anomaly] = []

    def anomalies(self) -> Iterator[Anomaly]:
        if not self.entries:
            return
        latest = max(self.entries)
        through = self.entries[latest].through_seq or 0
        chain = self._chain(latest)
        yield from self.broken
        if self.broken:
            return
        told = Counter(seq for link in chain for seq in link.record.folded)
        stored = self._stored_messages()
        yield from self._untold(chain, stored, told)
        beyond = sorted(seq for seq in stored if seq > through and seq < self.read.first_seq)
        if beyond:
            yield self._anomaly("uncovered", beyond,
                                f"{len(beyond)} message(s) trimmed away past the latest "
                                f"summary's cursor (seq {through}): in no summary and no "
                                "window", self._appends_of(beyond))
        window = {seq for seq in stored if seq > through and seq >= self.read.first_seq}
        twice = sorted(seq for seq, n in told.items() if n > 1 or seq in window)
        if twice:
            yield self._anomaly("covered_twice", twice,
                                f"{len(twice)} message(s) folded into two summaries of the "
                                "live chain, or into one and still in the window after the "
                                "latest",
                                [link.record for link in chain])

    def _chain(self, latest: int) -> list[_Link]:
        """The latest summary, the one it builds on, ...; gaps go to ``broken``."""
        chain: list[_Link] = []
        link, child_through = latest, None
        while link:
            entry = self.entries.get(link)
            if entry is None and link >= self.read.first_seq:
                self.broken.append(self._anomaly(
                    "uncovered", [link], f"the summary at seq {link} that a summary builds on "
                    "is not in the ledger", [chain[-1].record]))
                break
            record = self._record_of(link, entry)
            if record is None:
                self.broken.append(self._anomaly(
                    "uncovered", [link], f"no record says what the summarizer of the summary "
                    f"at seq {link} was given: what it covers cannot be vouched for", []))
                break
            through = self._through(record, entry)
            if child_through is not None and through >= child_through:
                self.broken.append(self._anomaly(
                    "summary_cursor", [link], f"a summary covering through seq {child_through} "
                    f"builds on the summary at seq {link}, which covers through seq {through}: "
                    "cursors must grow along the chain", [chain[-1].record, record]))
                break
            chain.append(_Link(link, record, range(0, through + 1)))
            if chain[:-1]:
                chain[-2].owns = range(through + 1, chain[-2].owns.stop)
            link, child_through = record.base, through
        return chain

    def _through(self, record: SummaryRecord, entry: SeenMessage | None) -> int:
        # A summary trimmed away: its cursor is at least the last seq it folded.
        if entry is not None and entry.through_seq is not None:
            return entry.through_seq
        return max(record.folded, default=0)

    def _record_of(self, seq: int, entry: SeenMessage | None) -> SummaryRecord | None:
        """The compaction that stored the summary at ``seq``: by its Ack, or, for
        one the store did not answer, by the summary's text."""
        stored = _stored_by(self.timeline, seq)
        if stored:
            return stored[0]
        if entry is None:
            return None
        return next((r for r in self.timeline.summaries
                     if r.outcome == "indeterminate" and r.text == entry.text), None)

    def _stored_messages(self) -> set[int]:
        """Seqs of messages (not summaries) the ledger holds or held: those read,
        and the acknowledged ones a trim removed since."""
        held = {m.seq for m in self.read.messages if m.through_seq is None}
        for append in self.timeline.acknowledged:
            ack = append.ack
            if ack is not None and ack.ledger == self.read.ledger:
                held.update(s for s in range(ack.first_seq, ack.last_seq + 1)
                            if s < self.read.first_seq)
        return held

    def _untold(self, chain: list[_Link], stored: set[int],
                told: Counter[int]) -> Iterator[Anomaly]:
        for link in chain:
            missing = sorted(s for s in stored if s in link.owns and s not in told)
            if not missing:
                continue
            appends = self._appends_of(missing)
            during = [a for a in appends if a.start < link.record.end
                      and link.record.start < a.end]
            why = (f"; appended while it was being written (worker {during[0].worker}'s "
                   f"op #{during[0].index}): its summarizer never saw them") if during else ""
            yield self._anomaly(
                "uncovered", missing,
                f"{len(missing)} message(s) lost between summaries: the summary at seq "
                f"{link.seq} covers seqs {link.owns.start}-{link.owns.stop - 1}, but its "
                f"summarizer was not given these{why}", [link.record, *appends])

    def _appends_of(self, seqs: Sequence[int]) -> list[AppendRecord]:
        wanted = set(seqs)
        return [a for a in self.timeline.acknowledged if a.ack is not None
                and a.ack.ledger == self.read.ledger
                and wanted & set(range(a.ack.first_seq, a.ack.last_seq + 1))]

    def _anomaly(self, kind: Kind, seqs: Sequence[int], detail: str,
                 operations: Sequence[AppendRecord | SummaryRecord]) -> Anomaly:
        shown = tuple(seqs[:_SHOWN_SEQS])
        more = f" (and {len(seqs) - len(shown)} more)" if len(seqs) > len(shown) else ""
        return Anomaly(kind, self.timeline.session, shown, detail + more,
                       (*operations, self.read))
