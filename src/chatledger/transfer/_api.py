"""The export and import functions and their reports (the package's docstring says how)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import IO, Any

from .._errors import CorruptEntryError
from .._results import SessionInfo
from .._sync.store import Store
from ._check import check_file
from ._export import session_lines
from ._importing import SessionImport, import_file

Progress = Callable[[int, int], None]
"""A progress callback: called with (sessions done, sessions in all) as each one ends."""


@dataclass(frozen=True)
class ExportReport:
    """What an export wrote."""

    sessions: int
    messages: int
    damaged: tuple[CorruptEntryError, ...] = ()
    """With ``skip_damaged``: the stored entries left out because they cannot be
    decoded, each naming its session, seq and reason, in the order met."""


@dataclass
class ImportReport:
    """What an import did (in a dry run: would do), session by session."""

    dry_run: bool
    sessions: list[SessionImport] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(outcome.added for outcome in self.sessions)

    @property
    def refused(self) -> list[SessionImport]:
        """The sessions refused or stopped, each saying why."""
        return [outcome for outcome in self.sessions if outcome.refused is not None]


def export_sessions(store: Store, out: IO[str], session_ids: Iterable[str] | None = None, *,
                    prefix: str = "", on_progress: Progress | None = None,
                    skip_damaged: bool = False) -> ExportReport:
    """Write ``session_ids`` (default: every session whose id starts with ``prefix``, sorted).

    A session is read a page at a time, so memory stays bounded however long
    it is. A session that does not exist writes nothing. A stored entry that
    cannot be decoded stops the export with CorruptEntryError (what was written
    until then is not the whole export), unless ``skip_damaged``: then every
    other message is written and the report's ``damaged`` names what was left out.
    """
    chosen = list(dict.fromkeys(session_ids)) if session_ids is not None else sorted(
        set(store.sessions(prefix=prefix)))
    return export_known(store, out, chosen, {}, on_progress, skip_damaged=skip_damaged)


def export_known(store: Store, out: IO[str], chosen: list[str],
                 known: Mapping[str, SessionInfo | None],
                 on_progress: Progress | None = None, *,
                 skip_damaged: bool = False) -> ExportReport:
    """:func:`export_sessions` of the sessions ``chosen``, the state of those in
    ``known`` already read by the caller (``chatledger export`` reads it to refuse
    a missing session before writing anything): each state is read once, one
    round trip per session fewer than reading it again."""
    messages, damaged = 0, list[CorruptEntryError]()
    for done, session_id in enumerate(chosen):
        session = store.session(session_id)
        info = known[session_id] if session_id in known else session.info()
        for line, count in session_lines(session, info,
                                         damaged.append if skip_damaged else None):
            out.write(line + "\n")
            messages += count
        if on_progress is not None:
            on_progress(done + 1, len(chosen))
    out.flush()
    return ExportReport(len(chosen), messages, tuple(damaged))


def import_sessions(store: Store, source: IO[bytes] | IO[str] | str | os.PathLike[str], *,
                    dry_run: bool = False, on_progress: Progress | None = None) -> ImportReport:
    """Import what :func:`export_sessions` wrote, keeping ids, seqs and timestamps.

    ``source``: a path, or a file open in binary (or text) mode. Importing twice
    adds nothing; a session whose target holds other messages is refused and
    left alone (``ImportReport.refused`` says why). Raises :class:`BadRecord`,
    before writing anything, for a line that an append would refuse.
    """
    return import_opening(lambda: nullcontext(store), store.options.max_message_bytes, source,
                          dry_run=dry_run, on_progress=on_progress)


def import_opening(opening: Callable[[], AbstractContextManager[Store]], max_message_bytes: int,
                   source: IO[bytes] | IO[str] | str | os.PathLike[str], *,
                   dry_run: bool = False, on_progress: Progress | None = None) -> ImportReport:
    """:func:`import_sessions` into the store ``opening()`` opens once the file is
    checked: ``chatledger import`` of a bad file into a new SQLite file creates none."""
    report = ImportReport(dry_run)
    with _rereadable(source) as file:
        start = file.tell()
        plans = check_file(file, max_message_bytes)
        file.seek(start)
        total = len(plans)

        def done(outcome: SessionImport) -> None:
            report.sessions.append(outcome)
            if on_progress is not None:
                on_progress(len(report.sessions), total)

        with opening() as store:
            if on_progress is not None:
                on_progress(0, total)
            import_file(store, file, plans, dry_run=dry_run, done=done)
    return report


SPOOL_CHUNK = 1024 * 1024


@contextmanager
def _rereadable(source: IO[Any] | str | os.PathLike[str]) -> Iterator[IO[Any]]:
    """``source`` as a file that can be read twice: a pipe is copied to a temporary file."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as opened:
            yield opened
    elif source.seekable():
        yield source
    else:
        with tempfile.TemporaryFile() as spool:
            if isinstance(source.read(0), str):
                for text in iter(lambda: source.read(SPOOL_CHUNK), ""):
                    spool.write(text.encode("utf-8", "surrogatepass"))
            else:
                shutil.copyfileobj(source, spool, SPOOL_CHUNK)
            spool.seek(0)
            yield spool
