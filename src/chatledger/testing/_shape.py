"""Checks of what each read holds: duplicates, torn batches, a worker's order,
messages of other sessions, and failed appends that were stored anyway."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator

from ._records import AppendRecord, ReadRecord
from ._report import Anomaly
from ._timeline import Timeline, keys, seen_key


def duplicates(timeline: Timeline) -> Iterator[Anomaly]:
    """An id at two seqs, or a text stored under more ids (or, without ids, at more
    seqs) than the number of times it was ever appended."""
    owners = _owners(timeline)
    attempts = Counter(text for append in timeline.appends for text in append.texts)
    reported: set[str] = set()
    for read in timeline.reads:
        for key, seqs, allowed in _stored_too_often(timeline, read, attempts):
            if key not in reported:
                reported.add(key)
                yield Anomaly("duplicate", timeline.session, seqs,
                              f"stored {len(seqs)} times, appended {allowed}",
                              (*owners.get(key, _appends_of_text(timeline, key[1:])), read))


def _stored_too_often(timeline: Timeline, read: ReadRecord, attempts: Counter[str],
                      ) -> Iterator[tuple[str, tuple[int, ...], int]]:
    for key, seqs in timeline.positions(read).items():
        allowed = max(1, attempts[key[1:]]) if key.startswith("\0") else 1
        if len(seqs) > allowed:
            yield key, tuple(seqs), allowed
    # The same text under several ids: a retry that made new ids.
    stored_ids: dict[str, dict[str, int]] = {}
    for message in read.messages:
        if message.id is not None:
            stored_ids.setdefault(message.text, {}).setdefault(message.id, message.seq)
    for text, ids in stored_ids.items():
        if attempts[text] and len(ids) > attempts[text]:
            yield "\0" + text, tuple(sorted(ids.values())), attempts[text]


def torn(timeline: Timeline) -> Iterator[Anomaly]:
    """A batch whose messages a read shows apart, out of order, or only in part
    (where the rest should have been within the read's window)."""
    for append in timeline.appends:
        if append.outcome == "failed" or len(append.ids) < 2:
            continue
        for read in timeline.reads:
            seqs = _torn_in(timeline, append, read)
            if seqs:
                yield Anomaly("torn", timeline.session, seqs,
                              "the batch's messages are not contiguous and in order",
                              (append, read))
                break


def _torn_in(timeline: Timeline, append: AppendRecord, read: ReadRecord) -> tuple[int, ...]:
    """The seqs where ``read`` shows ``append`` torn, or () if whole (or absent)."""
    positions = timeline.positions(read)
    found = [(n, positions[key][0]) for n, key in enumerate(keys(append)) if key in positions]
    if not found:
        return ()
    anchor, anchor_seq = found[0]
    at = dict(found)
    covered = read.covered
    # A read whose window ends at its version saw the ledger's end: a member of an
    # unanswered batch due past it is missing too (a batch is stored whole, or not
    # at all), when what the read shows of it no other append wrote (a text without
    # an id, an id sent again). An acknowledged one missing its tail is lost, which
    # says more.
    to_the_end = (append.outcome != "ok" and bool(covered) and covered[-1] == read.version
                  and all(timeline.writers(key) == 1 for key in keys(append)))
    for n in range(len(append.ids)):
        expected = anchor_seq + n - anchor
        missing = expected in covered or (to_the_end and expected > read.version)
        if (n in at and at[n] != expected) or (n not in at and missing):
            return tuple(seq for _, seq in found)
    return ()


def reordered(timeline: Timeline) -> Iterator[Anomaly]:
    """Two acknowledged batches of one worker stored in the opposite order."""
    reported: set[tuple[int, int]] = set()
    for earlier, later, seqs, read in _order_breaks(timeline):
        pair = (id(earlier), id(later))
        if pair not in reported:
            reported.add(pair)
            yield Anomaly("reordered", timeline.session, seqs,
                          f"worker {earlier.worker}'s op #{earlier.index} is stored after "
                          f"its op #{later.index}",
                          (earlier, later) if read is None else (earlier, later, read))


Break = tuple[AppendRecord, AppendRecord, tuple[int, ...], "ReadRecord | None"]


def _order_breaks(timeline: Timeline) -> Iterator[Break]:
    by_worker: dict[int, list[AppendRecord]] = {}
    for append in timeline.acknowledged:
        by_worker.setdefault(append.worker, []).append(append)
    for appends in by_worker.values():
        mine = _first_attempts(sorted(appends, key=lambda a: a.index))
        yield from _ack_breaks(mine)
        for read in timeline.reads:
            yield from _read_breaks(timeline, mine, read)


def _first_attempts(appends: list[AppendRecord]) -> list[AppendRecord]:
    """A retry with the same ids is the same batch: keep its first attempt only."""
    seen: set[str] = set()
    first = []
    for append in appends:
        if not seen & set(keys(append)):
            first.append(append)
        seen.update(keys(append))
    return first


def _ack_breaks(mine: list[AppendRecord]) -> Iterator[Break]:
    acked = [a for a in mine if a.ack is not None]
    for earlier, later in itertools.pairwise(acked):
        assert earlier.ack is not None and later.ack is not None
        if earlier.ack.ledger == later.ack.ledger and later.ack.first_seq <= earlier.ack.last_seq:
            yield earlier, later, (earlier.ack.first_seq, later.ack.first_seq), None


def _read_breaks(timeline: Timeline, mine: list[AppendRecord], read: ReadRecord,
                 ) -> Iterator[Break]:
    positions = timeline.positions(read)
    placed = [(a, positions[keys(a)[0]][0]) for a in mine if keys(a)[0] in positions]
    for (earlier, first), (later, second) in itertools.pairwise(placed):
        if second < first:
            yield earlier, later, (first, second), read


def other_session(all_timelines: dict[str, Timeline]) -> Iterator[Anomaly]:
    """A read that returned a message only ever appended to other sessions."""
    appended_to: dict[str, set[str]] = {}
    for timeline in all_timelines.values():
        for append in timeline.appends:
            for key in keys(append):
                appended_to.setdefault(key, set()).add(timeline.session)
    for timeline in all_timelines.values():
        reported: set[str] = set()
        for read in timeline.reads:
            for message in read.messages:
                key = seen_key(message)
                sessions = appended_to.get(key, {timeline.session})
                if timeline.session not in sessions and key not in reported:
                    reported.add(key)
                    yield Anomaly("other_session", timeline.session, (message.seq,),
                                  f"{message.text!r} was appended to "
                                  f"{', '.join(map(repr, sorted(sessions)))}",
                                  (*_appends_of(all_timelines, key), read))


def phantoms(timeline: Timeline) -> Iterator[Anomaly]:
    """A message of an append that failed definitely (and of no other append) stored."""
    owners = _owners(timeline)
    for append in timeline.appends:
        if append.outcome != "failed":
            continue
        for key in keys(append):
            if any(a.outcome != "failed" for a in owners[key]):
                continue
            read = next((r for r in timeline.reads if key in timeline.positions(r)), None)
            if read is not None:
                yield Anomaly("phantom", timeline.session, tuple(timeline.positions(read)[key]),
                              "the append failed, promising nothing was written",
                              (append, read))
                break


def _owners(timeline: Timeline) -> dict[str, list[AppendRecord]]:
    owners: dict[str, list[AppendRecord]] = {}
    for append in timeline.appends:
        for key in keys(append):
            owners.setdefault(key, []).append(append)
    return owners


def _appends_of_text(timeline: Timeline, text: str) -> list[AppendRecord]:
    return [append for append in timeline.appends if text in append.texts]


def _appends_of(all_timelines: dict[str, Timeline], key: str) -> list[AppendRecord]:
    return [append for timeline in all_timelines.values() for append in timeline.appends
            if key in keys(append)]
