"""``chatledger export`` and ``chatledger import``: the options and the output of
:mod:`chatledger.transfer`, which does the work."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import IO

import click
from rich.text import Text

from .. import _core
from .._errors import CorruptEntryError
from .._results import SessionInfo
from .._sync.store import Store
from .._text import escape, escape_line
from ..transfer import (
    BadRecord,
    ExportReport,
    ImportReport,
    export_sessions,
)
from ..transfer._api import export_known, import_opening
from .console import console, counted, note, print_json, progress_callback
from .failures import DAMAGED, Failure, Unusable
from .target import Target, sqlite_url, target_options


@click.command()
@target_options
@click.argument("session_ids", nargs=-1)
@click.option("--prefix", default=None, help="Every session whose id starts with this text.")
@click.option("--out", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              help="File to write (default: standard output). It is replaced only by a "
                   "whole export.")
@click.option("--skip-damaged", is_flag=True,
              help="Export every message that can be read, leave out stored entries that "
                   "cannot be decoded, list them on stderr and exit 3.")
@click.pass_obj
def export(target: Target, session_ids: tuple[str, ...], prefix: str | None,
           out: str, skip_damaged: bool) -> None:
    """Write sessions as JSON Lines: one message a line, with its session id and seq.

    Give SESSION_IDS, or --prefix, or neither for every session of the
    namespace. A session named that does not exist is an error, and then
    nothing is written. `chatledger import` reads the file back.

    The lines go to a temporary file beside --out, which replaces it once the
    export is whole: an export that stops leaves no file that looks whole,
    and a file already at --out as it was. A stored entry that cannot be
    decoded stops the export (exit 1), naming its session and seq;
    --skip-damaged exports everything else instead and lists what it left
    out (exit 3).

    \b
    Example: chatledger export --prefix user- --out users.jsonl --url sqlite:///bot.db
    """
    if session_ids and prefix is not None:
        raise click.UsageError("give session ids or --prefix, not both")
    with target.store(existing=True) as store:
        known = _all_exist(store, session_ids) if session_ids else None
        with _whole(out, _store_files(target.url)) as lines, \
                progress_callback("exporting sessions") as on_progress:
            if known is None:
                report = export_sessions(store, lines, prefix=prefix or "",
                                         on_progress=on_progress, skip_damaged=skip_damaged)
            else:  # the states read to check the ids are the export's
                report = export_known(store, lines, list(known), known, on_progress,
                                      skip_damaged=skip_damaged)
    note(f"exported {counted(report.messages, 'message')} from "
         f"{counted(report.sessions, 'session')} of "
         f"namespace {store.namespace!r}")
    if report.damaged:
        note(_left_out(report))
        raise SystemExit(DAMAGED)


@contextlib.contextmanager
def _whole(out: str, store_files: set[str]) -> Iterator[IO[str]]:
    """Where the export's lines go: standard output (``-``), or a temporary file
    beside ``out`` that replaces it once the export is whole (flushed to disk first).
    An export that stops part way removes the temporary file: its lines would end at
    some session and look like a whole export, and a file already at ``out`` (an
    earlier export, say) stays as it was. On standard output, what was written
    cannot be taken back, so the error says it is incomplete."""
    descriptor = 1 if out == "-" else _descriptor(out)
    if descriptor is not None:  # written into as it is open: appended to after >>, say
        with _stopped(None), _written_into(descriptor) as stream:
            yield stream
        return
    target = os.path.realpath(out)  # through a link: the file it names is replaced
    if target in store_files:
        raise Unusable(f"--out {click.format_filename(out)!r} is the store being exported: "
                       "write the export to another file")
    if os.path.exists(target) and not os.path.isfile(target):
        # A pipe or a device (a FIFO, /dev/null) is written to, never replaced.
        with _stopped(None), _opened(out) as stream:
            yield stream
        return
    lines, part = _beside(target)
    try:
        with _stopped(out), _ended_by_sigterm():
            yield lines
            lines.flush()
            os.fsync(lines.fileno())
        lines.close()
        os.replace(part, target)
    except BaseException:
        lines.close()
        with contextlib.suppress(OSError):
            os.remove(part)
        raise


@contextlib.contextmanager
def _ended_by_sigterm() -> Iterator[None]:
    """SIGTERM (a service manager's stop, ``timeout``) ends the export as Ctrl-C does,
    through the cleanup that removes the temporary file, with status 143; only the
    main thread may set a handler (an export run elsewhere keeps the default)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


_DESCRIPTOR = re.compile(r"/(?:dev/fd|proc/self/fd)/(\d+)")
_STANDARD = {"/dev/stdout": 1, "/dev/stderr": 2}


def _descriptor(out: str) -> int | None:
    """The open file descriptor ``out`` names (``/dev/stdout``, ``/dev/fd/3``), if it
    names one: its file is the shell's redirection (``>> log``, ``| wc``), which the
    export writes into where it stands, never replaces nor truncates (opening the
    path again would, as a pipe's path cannot be opened at all)."""
    if out in _STANDARD:
        return _STANDARD[out]
    found = _DESCRIPTOR.fullmatch(out)
    return int(found.group(1)) if found else None


@contextlib.contextmanager
def _written_into(descriptor: int) -> Iterator[IO[str]]:
    if descriptor == 1:
        yield sys.stdout
        return
    try:
        stream = os.fdopen(os.dup(descriptor), "w", encoding="utf-8")
    except OSError as exc:
        raise _cannot_open(f"/dev/fd/{descriptor}", exc) from None
    with stream:
        yield stream


def _store_files(url: str) -> set[str]:
    """The files of the SQLite store at ``url`` (its database, journal, WAL and shared
    memory), resolved: an export written over one would destroy the store."""
    parsed = sqlite_url(url)
    if parsed is None or not parsed.path:
        return set()
    database = os.path.realpath(parsed.path)
    return {database, *(database + suffix for suffix in ("-journal", "-wal", "-shm"))}


def _beside(out: str) -> tuple[IO[str], str]:
    """A new temporary file in ``out``'s folder, with the mode a new ``out`` would
    have (an existing one's, else the umask's), and its path. A folder that is not
    there or not writable is a usage error (exit 2, as the exit codes say)."""
    folder = os.path.dirname(os.path.abspath(out))
    try:
        descriptor, part = tempfile.mkstemp(
            dir=folder, prefix=f".{os.path.basename(out)}.", suffix=".part")
    except OSError as exc:
        raise _cannot_open(out, exc) from None
    os.chmod(descriptor, _mode_for(out))  # mkstemp makes it 0600
    return open(descriptor, "w", encoding="utf-8"), part


@contextlib.contextmanager
def _opened(out: str) -> Iterator[IO[str]]:
    try:
        stream = open(out, "w", encoding="utf-8")  # noqa: SIM115 -- closed below
    except OSError as exc:
        raise _cannot_open(out, exc) from None
    with stream:
        yield stream


def _cannot_open(out: str, exc: OSError) -> Unusable:
    """--out cannot be written: a usage error (exit 2, as the exit codes say)."""
    return Unusable(f"Could not open file {click.format_filename(out)!r}: {exc.strerror}")


def _mode_for(out: str) -> int:
    try:
        return stat.S_IMODE(os.stat(out).st_mode)
    except OSError:  # no file there yet: what open() would give a new one
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def _stopped(path: str | None) -> Iterator[None]:
    """A damaged entry that stopped the export, said in the CLI's words."""
    try:
        yield
    except CorruptEntryError as exc:
        raise Failure(_stopped_by(exc, path)) from None


def _stopped_by(exc: CorruptEntryError, path: str | None) -> str:
    """Why the export stopped, in the words of ``show``, the inspector and ``doctor``."""
    where = (f"nothing exported ({path} not written)" if path is not None
             else "the export stopped there: the lines written are incomplete")
    return (f"session {exc.session!r}: {_core.entry_damage(exc)}; {where}; "
            "--skip-damaged exports every other message and lists what it leaves out")


def _left_out(report: ExportReport) -> str:
    """What --skip-damaged left out, one entry a line."""
    entries = "entry" if len(report.damaged) == 1 else "entries"
    lines = [f"  session {exc.session!r} seq {exc.seq} ({escape(exc.reason)})"
             for exc in report.damaged]
    return "\n".join([f"left out {len(report.damaged):,} damaged {entries} "
                      "(`chatledger show SESSION` shows each in its place):", *lines])


def _all_exist(store: Store, session_ids: tuple[str, ...]) -> dict[str, SessionInfo | None]:
    """Each session's state, in the order given (a repeated id once); Failure when
    one does not exist, before anything is written."""
    states = {sid: store.session(sid).info() for sid in dict.fromkeys(session_ids)}
    missing = [sid for sid, info in states.items() if info is None]
    if missing:
        raise Failure(f"no session {', '.join(map(repr, missing))} in namespace "
                      f"{store.namespace!r} at {store.url}; nothing exported")
    return states


@click.command(name="import")
@target_options
@click.argument("source", type=click.File("rb"), default="-")
@click.option("--dry-run", is_flag=True, help="Check the file and say what would be added.")
@click.option("--json", "as_json", is_flag=True, help="The outcome as one JSON document.")
@click.pass_obj
def import_(target: Target, source: IO[bytes], dry_run: bool, as_json: bool) -> None:
    """Import what `chatledger export` wrote, keeping ids, seqs and timestamps.

    Importing twice adds nothing; an interrupted import resumes. A session the
    target does not have is recreated exactly (a trimmed one too: same seqs,
    version and first seq). Into a session the target has, only messages
    after its version are appended, and only when the messages it holds at
    the file's seqs are the file's (same ids): otherwise that session is
    refused, nothing is written to it, and the exit status is 1.

    The file is read twice, a line at a time, so memory stays bounded however
    big it is: first every line is checked as an append would check it (a bad
    line is an error naming the line and the field, and then nothing is
    written at all, nor a new store created), then the sessions are imported.
    Standard input from a pipe (SOURCE `-`, the default) is copied to a
    temporary file first, to be read twice.

    \b
    Example: chatledger export --url sqlite:///old.db | chatledger import --url redis://localhost:6379/0
    """
    max_message_bytes = target.store_options().max_message_bytes
    with progress_callback("importing sessions") as on_progress:
        try:
            report = import_opening(target.store, max_message_bytes, source, dry_run=dry_run,
                                    on_progress=on_progress)
        except BadRecord as exc:
            raise Unusable(f"{getattr(source, 'name', 'input')}: {exc}; nothing imported"
                           ) from None
    _report(report, as_json)
    if report.refused:
        raise SystemExit(1)


def _report(report: ImportReport, as_json: bool) -> None:
    verb = "would add" if report.dry_run else "added"
    if as_json:
        print_json({"dry_run": report.dry_run, "sessions": [vars(o) for o in report.sessions],
                    "added": report.added, "refused": len(report.refused)})
        return
    out = console()
    for o in report.sessions:
        line = f"{escape_line(o.session)}: {verb} {o.added}, already there {o.present}"
        out.print(Text(line + (f"; REFUSED: {o.refused}" if o.refused else ""),
                       style="red" if o.refused else ""))
    grown = sum(1 for o in report.sessions if o.added)
    note(f"{verb} {counted(report.added, 'message')} to {counted(grown, 'session')}"
         f" of {len(report.sessions)} in the file; {len(report.refused)} refused")


COMMANDS = (export, import_)
