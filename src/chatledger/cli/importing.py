"""Importing exported sessions so that seqs, ids and timestamps come back as they were.

The store gives seqs itself, one after another; an import keeps them by
appending each session's messages in seq order right after the version the
target holds. So, per session of the file:

* messages at seqs the target already has must be the same messages (same
  ids): they are skipped, which makes importing twice add nothing and lets an
  interrupted import resume;
* the rest is appended in order, each batch with ``expect_version``, so that a
  concurrent writer stops the import of that session instead of interleaving;
* a session exported after trimming (first seq N > 1) is recreated in an
  empty target by appending N-1 placeholders, then the messages, then
  trimming the placeholders away: seqs, version and first seq all match;
* a session trimmed to nothing (its one line gives only its version) is
  recreated at that version with no message, the same way;
* anything else (the target holds other messages at those seqs, or ends
  before the file's first seq with messages of its own) refuses that session,
  saying why, and writes nothing to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..errors import ConflictError, InvalidMessage
from ..messages import Message, system
from ..store import Session, Store, open_store
from .records import BadLine, Emptied, Line

BATCH = 1000  # messages per append: one round trip, bounded memory on both sides
# Bytes of data per append: Redis reads a whole command into memory (its
# client-query-buffer-limit, 1 GiB by default, closes the connection above it).
BATCH_DATA_BYTES = 64 * 1024 * 1024
GAP_ID = "chatledger-import-gap-"


@dataclass
class Outcome:
    """What importing one session did."""

    session: str
    added: int = 0
    present: int = 0
    refused: str | None = None


Lines = list[Line] | Emptied


def group(lines: Iterable[Line | Emptied]) -> dict[str, Lines]:
    """Lines by session, checking that each session's seqs follow one another."""
    sessions: dict[str, Lines] = {}
    for line in lines:
        earlier = sessions.setdefault(line.session, [] if isinstance(line, Line) else line)
        if isinstance(line, Emptied) or isinstance(earlier, Emptied):
            if earlier is not line:
                raise BadLine(f"line {line.number}: session {line.session!r} appears again; "
                              "a session trimmed to nothing has one line, its version")
            continue
        if earlier and line.seq != earlier[-1].seq + 1:
            raise BadLine(f"line {line.number}: session {line.session!r} goes from seq "
                          f"{earlier[-1].seq} to {line.seq}; an import keeps seqs, so they "
                          "must follow one another")
        earlier.append(line)
    return sessions


def check(sessions: dict[str, list[Line]], max_message_bytes: int) -> None:
    """Refuse the whole file before writing anything if one message could not be stored.

    The store's own validation runs on an in-memory store, so the error is the
    one an append would give, pointed at the file's line.
    """
    with open_store("memory://", max_message_bytes=max_message_bytes) as scratch:
        for session_id, lines in sessions.items():
            try:
                session = scratch.session(session_id)
            except ValueError as exc:
                raise BadLine(f"line {lines[0].number}: {exc}") from None
            for batch in batches(lines):
                _check_batch(session, batch)
            session.delete()


def _check_batch(session: Session, batch: list[Line]) -> None:
    try:
        ack = session.append([line.message for line in batch])
    except InvalidMessage as exc:
        found = re.match(r"messages\[(\d+)\]\.?(.*)", exc.field or "")
        where = batch[int(found.group(1))].number if found else batch[0].number
        raise BadLine(f"line {where}: {exc}") from None
    if ack.deduplicated:
        raise BadLine(f"line {batch[0].number}: these ids appear earlier in the file")


def batches(lines: list[Line]) -> Iterator[list[Line]]:
    """At most BATCH lines, and BATCH_DATA_BYTES of data unless one line has more."""
    batch: list[Line] = []
    size = 0
    for line in lines:
        weight = len(line.message.data or b"")
        if batch and (len(batch) == BATCH or size + weight > BATCH_DATA_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(line)
        size += weight
    if batch:
        yield batch


def import_session(store: Store, session_id: str, lines: Lines, *,
                   dry_run: bool = False) -> Outcome:
    """Bring the target session to hold ``lines`` at their seqs; see the module's rules."""
    if isinstance(lines, Emptied):
        return _import_emptied(store.session(session_id), lines, dry_run=dry_run)
    session = store.session(session_id)
    outcome = Outcome(session_id)
    info = session.info()
    version = info.version if info else 0
    new = [line for line in lines if line.seq > version]
    outcome.present = len(lines) - len(new)
    outcome.refused = _differs(session, lines[:outcome.present])
    if outcome.refused is None and new and version < new[0].seq - 1 and version > 0 \
            and not _ends_in_gap(session):
        outcome.refused = (f"the target ends at seq {version} and the file goes on at seq "
                           f"{new[0].seq}: the seqs could not be kept")
    if outcome.refused is not None or dry_run:
        outcome.added = 0 if outcome.refused else len(new)
        return outcome
    try:
        version = _fill_gap(session, version, new[0].seq - 1 if new else version)
        for batch in batches(new):
            version = _append(session, batch, version)
            outcome.added += len(batch)
    except (ConflictError, InvalidMessage, _Moved) as exc:
        outcome.refused = f"stopped after {outcome.added} messages: {exc}"
        return outcome
    _drop_gap(session, lines[0].seq)
    return outcome


def _import_emptied(session: Session, emptied: Emptied, *, dry_run: bool) -> Outcome:
    """A session trimmed to nothing: recreated at its version, with no message."""
    outcome = Outcome(session.id)
    info = session.info()
    if info is not None and info.version >= emptied.version:
        return outcome  # there already (an earlier import), or grown since: nothing to add
    if info is not None and not _ends_in_gap(session):
        outcome.refused = (f"the target ends at seq {info.version} and the file's session "
                           f"was trimmed to nothing at version {emptied.version}")
        return outcome
    if not dry_run:
        try:
            _fill_gap(session, info.version if info else 0, emptied.version)
        except ConflictError as exc:
            outcome.refused = f"stopped: {exc}"
            return outcome
        session.trim(keep_last=0)
    return outcome


class _Moved(Exception):
    """The store put a batch somewhere else than at its seqs."""


def _differs(session: Session, present: list[Line]) -> str | None:
    """Why the target's messages at these seqs are not the file's, or None."""
    if not present:
        return None
    by_seq = {line.seq: line.message.id for line in present}
    after = present[0].seq - 1
    while after < present[-1].seq:
        page = session.read(after=after, limit=min(BATCH, present[-1].seq - after))
        for message in page:
            if message.seq in by_seq and by_seq[message.seq] != message.id:
                return (f"the target holds another message at seq {message.seq} "
                        f"(id {message.id}, the file has {by_seq[message.seq]})")
        if not page.messages:
            return None  # trimmed in the target: nothing left to compare
        after = page.messages[-1].seq or after
    return None


def _ends_in_gap(session: Session) -> bool:
    """Whether the target's last message is a placeholder of an interrupted import."""
    last = session.read(last=1).messages
    return bool(last) and last[0].id.startswith(GAP_ID)


def _fill_gap(session: Session, version: int, until: int) -> int:
    """Placeholders at seqs ``version+1..until``, so that the next message gets its seq."""
    while version < until:
        count = min(BATCH, until - version)
        gap = [_placeholder(version + 1 + n) for n in range(count)]
        version = session.append(gap, expect_version=version).version
    return version


def _placeholder(seq: int) -> Message:
    return system(f"chatledger import: seq {seq} was trimmed before the export; this "
                  "placeholder is trimmed away when the import ends", id=f"{GAP_ID}{seq}")


def _append(session: Session, batch: list[Line], version: int) -> int:
    ack = session.append([line.message for line in batch], expect_version=version)
    if ack.deduplicated or ack.first_seq != batch[0].seq:
        raise _Moved(f"line {batch[0].number}: its ids are already in the target at seq "
                     f"{ack.first_seq}, not {batch[0].seq}")
    return ack.version


def _drop_gap(session: Session, first_seq: int) -> None:
    """Trim the placeholders below the file's first seq, if this import put any there."""
    oldest = session.read(after=0, limit=1).messages
    if oldest and oldest[0].id.startswith(GAP_ID):
        info = session.info()
        if info is not None:
            session.trim(keep_last=info.version - first_seq + 1)
