"""The second pass of an import: sessions brought to hold the file's messages at their seqs.

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

The file is read a line at a time: a session holds at most one batch of
lines in memory, and only sessions whose lines are not all read yet are open
(one, in a file that ``export`` wrote).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from .. import _batches
from .._errors import ConflictError, InvalidMessage, SessionUserError
from .._messages import Message, system
from .._results import SessionInfo
from .._sync.store import Session, Store
from ._check import SessionPlan, numbered
from ._errors import BadRecord
from ._records import Emptied, Line, parse_line

BATCH = 1000  # messages per append: one round trip, bounded memory on both sides
BATCH_DATA_BYTES = _batches.APPEND_DATA_BYTES  # bytes per append (why: _batches)
GAP_ID = "chatledger-import-gap-"
# The most placeholders one session's import appends (and trims) to keep its seqs:
# a file naming seq 10**12 must not make the import write for days. Above it,
# the session is refused, naming the limit; the rest of the file imports.
MAX_GAP = 100_000


@dataclass
class SessionImport:
    """What importing one session did (in a dry run: would do).

    ``added``: messages appended; ``present``: messages of the file the target
    already held (or had trimmed); ``refused``: why the session was refused or
    stopped, else None.
    """

    session: str
    added: int = 0
    present: int = 0
    refused: str | None = None


def import_file(store: Store, file: IO[Any], plans: dict[str, SessionPlan], *,
                dry_run: bool, done: Callable[[SessionImport], None]) -> None:
    """Import each session of a checked file, calling ``done`` as each one ends."""
    importing: dict[str, _SessionImporter] = {}
    pending = set(plans)
    for number, raw in numbered(file):
        line = parse_line(raw, number)
        plan = plans.get(line.session)
        if plan is None or number > plan.last_line:
            raise _changed(number)
        if isinstance(line, Emptied):
            outcome: SessionImport | None = _import_emptied(
                store.session(line.session, user=line.user), line, dry_run=dry_run)
        else:
            outcome = _feed(importing, store, line, plan, dry_run=dry_run)
        if outcome is not None:
            pending.discard(line.session)
            done(outcome)
    if pending:  # cut short since the check: a session's last line never came
        raise _changed(min(plans[session_id].last_line for session_id in pending))


def _feed(importing: dict[str, _SessionImporter], store: Store, line: Line, plan: SessionPlan,
          *, dry_run: bool) -> SessionImport | None:
    """Give ``line`` to its session's import; the outcome when it was the session's last."""
    importer = importing.get(line.session)
    if importer is None:
        importer = importing[line.session] = _SessionImporter(store, line.session, plan,
                                                              dry_run=dry_run)
    importer.feed(line)
    return importing.pop(line.session).finish() if line.number == plan.last_line else None


def _changed(number: int) -> BadRecord:
    return BadRecord(number, "the file changed after it was checked; the sessions before "
                     "this line are imported, the rest not: run the import again")


class _SessionImporter:
    """One session's import, fed its lines in seq order; see the module's rules."""

    def __init__(self, store: Store, session_id: str, plan: SessionPlan, *,
                 dry_run: bool) -> None:
        self.session = store.session(session_id, user=plan.user)
        self.first_seq = plan.first_seq
        self.dry_run = dry_run
        info = self.session.info()
        self.version = info.version if info else 0
        present = max(0, min(plan.last_seq, self.version) - plan.first_seq + 1)
        self.outcome = SessionImport(session_id, present=present)
        self.gap_filled = False
        self.to_compare: list[Line] = []  # lines at seqs the target holds
        self.to_append: list[Line] = []
        self.data_bytes = 0  # of to_append
        # Decided here, before any line: a dry run says what the import would, and a
        # target holding every message is not left tagged with the other user.
        self.outcome.refused = _other_user(info, plan.user)
        if self.outcome.refused is not None:
            self.outcome.present = 0
        elif self.version < plan.last_seq and 0 < self.version < plan.first_seq \
                and _own_messages_end_before(self.session, self.version, plan.first_seq):
            self.outcome.refused = (f"the target ends at seq {self.version} and the file goes "
                                    f"on at seq {plan.first_seq}: the seqs could not be kept")
        elif self.version < plan.last_seq:
            self.outcome.refused = _gap_too_wide(self.version, plan.first_seq - 1)

    def feed(self, line: Line) -> None:
        if self.outcome.refused is not None:
            return
        if line.seq <= self.version:
            self.to_compare.append(line)
            if len(self.to_compare) == BATCH:
                self._compare()
            return
        self._compare()  # every line at a held seq comes first: decided before any write
        if self.outcome.refused is not None:
            return
        if self.dry_run:
            self.outcome.added += 1
            return
        weight = _batches.weight(line.message)
        if self.to_append and (len(self.to_append) == BATCH
                               or self.data_bytes + weight > BATCH_DATA_BYTES):
            self._append()  # at most BATCH lines and BATCH_DATA_BYTES, unless one line has more
        self.to_append.append(line)
        self.data_bytes += weight

    def finish(self) -> SessionImport:
        self._compare()
        self._append()
        if self.outcome.refused is None and not self.dry_run:
            _drop_gap(self.session, self.first_seq)
        return self.outcome

    def _compare(self) -> None:
        if self.to_compare and self.outcome.refused is None:
            self.outcome.refused = _differs(self.session, self.to_compare)
            if self.outcome.refused is not None:  # what it holds is another session's
                self.outcome.present = 0
        self.to_compare = []

    def _append(self) -> None:
        batch, self.to_append, self.data_bytes = self.to_append, [], 0
        if not batch or self.outcome.refused is not None:
            return
        try:
            if not self.gap_filled:
                self.version = _fill_gap(self.session, self.version, batch[0].seq - 1)
                self.gap_filled = True
            self.version = _append(self.session, batch, self.version)
            self.outcome.added += len(batch)
        except (ConflictError, InvalidMessage, SessionUserError, _Moved) as exc:
            self.outcome.refused = f"stopped after {self.outcome.added} messages: {exc}"


def _import_emptied(session: Session, emptied: Emptied, *, dry_run: bool) -> SessionImport:
    """A session trimmed to nothing: recreated at its version, with no message."""
    outcome = SessionImport(session.id)
    info = session.info()
    outcome.refused = _other_user(info, emptied.user)
    if outcome.refused is not None:
        return outcome
    if info is not None and info.version >= emptied.version:
        return outcome  # there already (an earlier import), or grown since: nothing to add
    if info is not None and not _ends_in_gap(session):
        outcome.refused = (f"the target ends at seq {info.version} and the file's session "
                           f"was trimmed to nothing at version {emptied.version}")
        return outcome
    outcome.refused = _gap_too_wide(info.version if info else 0, emptied.version)
    if not dry_run and outcome.refused is None:
        try:
            _fill_gap(session, info.version if info else 0, emptied.version)
        except (ConflictError, SessionUserError) as exc:
            outcome.refused = f"stopped: {exc}"
            return outcome
        session.trim(keep_last=0)
    return outcome


class _Moved(Exception):
    """The store put a batch somewhere else than at its seqs."""


def _differs(session: Session, present: list[Line]) -> str | None:
    """Why the target's messages at these seqs are not the file's, or None."""
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


def _other_user(info: SessionInfo | None, user: str | None) -> str | None:
    """Why a target session of another user (or of none) is refused, or None."""
    if user is None or info is None or info.user == user:
        return None
    owner = "no user" if info.user is None else repr(info.user)
    return f"the target's session belongs to {owner}, the file's to {user!r}"


def _own_messages_end_before(session: Session, version: int, first_seq: int) -> bool:
    """Whether the target's messages end before the file's first seq, so that the file
    cannot go on after them: a target ending right before it with messages of its own
    (the file lacks those seqs: nothing tells them from another session's), or further
    before, unless an interrupted import's placeholders end it. One trimmed to nothing
    right before the file (an earlier import of this session, emptied) goes on."""
    last = _last(session)
    if version == first_seq - 1:
        return last is not None and not _is_placeholder(last)
    return not _is_placeholder(last)


def _ends_in_gap(session: Session) -> bool:
    """Whether the target's last message is a placeholder of an interrupted import."""
    return _is_placeholder(_last(session))


def _last(session: Session) -> Message | None:
    newest = session.read(last=1).messages
    return newest[0] if newest else None


def _is_placeholder(message: Message | None) -> bool:
    return message is not None and message.id.startswith(GAP_ID)


def _gap_too_wide(version: int, until: int) -> str | None:
    """Why seqs ``version+1..until`` are too many placeholders to write, or None."""
    if until - version <= MAX_GAP:
        return None
    return (f"its first {until:,} seqs were trimmed before the export, and keeping the seqs "
            f"would take {until - version:,} placeholders, over the import's limit of "
            f"{MAX_GAP:,}")


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
