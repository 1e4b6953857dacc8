"""``chatledger show`` and ``chatledger sessions``: look into a store."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import click
from rich.text import Text

from .. import _core
from .._errors import CorruptEntryError, EncryptionKeyError
from .._messages import Message
from .._results import SessionInfo
from .._sync.store import Store, raw_access, read_each
from .._text import duration, escape, escape_line
from ..transfer import record
from .console import advance, console, counted, note, print_json, progress, say
from .failures import DAMAGED, Failure
from .render import Layout, damaged_text, message_text
from .target import Target, target_options

Entry = Message | CorruptEntryError
"""What ``show`` prints in a message's place: the message, or why its entry cannot be read."""


def summary(message: Message) -> dict[str, Any]:
    """What ``show --json`` prints: the export's record, and the data's size, never its bytes."""
    shown = record(message)
    if message.data is not None:
        shown["data_bytes"] = len(message.data)
    return shown


def damaged_summary(exc: CorruptEntryError) -> dict[str, Any]:
    """What ``show --json`` prints in a damaged entry's place: its seq and why, in the
    words of ``chatledger doctor`` (``reason``) and of the inspector (``error``)."""
    return {"seq": exc.seq, "damaged": True, "sealed": isinstance(exc, EncryptionKeyError),
            "reason": exc.reason, "error": _core.entry_damage(exc)}


@click.command()
@target_options
@click.argument("session")
@click.option("--last", type=click.IntRange(min=0), default=None,
              help="Only the last N messages.")
@click.option("--full", is_flag=True, help="Long messages whole, not cut to a screenful.")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON document: the session's state and its messages.")
@click.pass_obj
def show(target: Target, session: str, last: int | None, full: bool, as_json: bool) -> None:
    """Print one session as people read it: its state, then its messages.

    Each message shows its seq, time and role, then its text (cut at 600
    characters or 12 lines unless --full), tool calls (->), the tool call a
    result answers, non-text content blocks and metadata. Control and bidi
    characters are shown as escapes (\\u202e), never obeyed.

    A stored entry that cannot be decoded (damaged bytes, or sealed with a key
    CHATLEDGER_KEYRING lacks) is shown in its place as DAMAGED with its seq and
    the reason `chatledger doctor` gives; every other message is shown, a line
    on stderr counts them, and the exit status is 3.

    \b
    Example: chatledger show user-42 --last 20 --url sqlite:///bot.db
    """
    with target.store(existing=True) as store:
        info = require(store, session, store.session(session).info())
        entries = read_each(store.session(session), last=last)[0]
    damaged = [entry for entry in entries if isinstance(entry, CorruptEntryError)]
    if as_json:
        print_json({**state(store, session, info), "damaged_seqs": [e.seq for e in damaged],
                    "messages": [summary(e) if isinstance(e, Message) else damaged_summary(e)
                                 for e in entries]})
    else:
        _print(session, info, entries, full)
    if damaged:
        note(_unread(damaged, len(entries)))
        raise SystemExit(DAMAGED)


def _print(session: str, info: SessionInfo, entries: list[Entry], full: bool) -> None:
    out = console()
    say(Text(describe(session, info), style="bold"))
    layout = Layout(seq_width=len(str(info.version)), full=full,
                    width=out.width if out.is_terminal else None)
    for entry in entries:
        out.print(message_text(entry, layout) if isinstance(entry, Message)
                  else damaged_text(entry, layout))


UNREAD_NAMED = 3  # damaged entries the stderr line names; more are counted


def _unread(damaged: list[CorruptEntryError], shown: int) -> str:
    """One line for stderr: how many of the window's entries could not be read, and why."""
    named = "; ".join(f"seq {e.seq} ({escape(e.reason)})" for e in damaged[:UNREAD_NAMED])
    more = f"; {len(damaged) - UNREAD_NAMED} more" if len(damaged) > UNREAD_NAMED else ""
    return f"{len(damaged)} of {counted(shown, 'message')} could not be read: {named}{more}"


def require(store: Store, session: str, info: SessionInfo | None) -> SessionInfo:
    """The session's state; a session that does not exist is an error (exit 1)."""
    if info is None:
        raise Failure(f"no session {session!r} in namespace {store.namespace!r} at {store.url}")
    return info


def describe(session: str, info: SessionInfo) -> str:
    trimmed = f", seqs {info.first_seq}..{info.version}" if info.count else ""
    return (f"session {escape_line(session)}: version {info.version}, "
            f"{counted(info.count, 'message')}{trimmed}\n"
            f"  created {_when(info.created_at)}, updated {_when(info.updated_at)}, "
            f"expires {_expiry(info)}")


def state(store: Store, session: str, info: SessionInfo) -> dict[str, Any]:
    """A session's state for machines."""
    expires_in = None if info.expires_at is None else round(
        (info.expires_at - _now()).total_seconds(), 3)
    return {"session": session, "namespace": store.namespace, "url": store.url,
            "version": info.version, "count": info.count, "first_seq": info.first_seq,
            "created_at": info.created_at.isoformat(), "updated_at": info.updated_at.isoformat(),
            "expires_at": info.expires_at and info.expires_at.isoformat(),
            "expires_in_seconds": expires_in, "ledger": info.ledger}


@click.command()
@target_options
@click.option("--prefix", default="", help="Only ids that start with this text, literally.")
@click.option("--sort", type=click.Choice(["id", "updated"]), default="id", show_default=True,
              help="By id, or most recently updated first (reads every session's state).")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
              help="Sessions per page.")
@click.option("--page", type=click.IntRange(min=1), default=1, show_default=True,
              help="Which page.")
@click.option("--langgraph/--no-langgraph", default=True, show_default=True,
              help="List LangGraph's checkpoint and store sessions (marked in the kind column).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document, for machines.")
@click.pass_obj
def sessions(target: Target, *, prefix: str, sort: str, limit: int, page: int,
             langgraph: bool, as_json: bool) -> None:
    """List the sessions of the namespace: messages, version, last update, expiry.

    Ids are data, not patterns: --prefix 'a*' lists only ids that start with
    the two characters a and *. The sessions LedgerSaver and LedgerStore keep
    (ids lg:... and lgs/...) are marked in the kind column; --no-langgraph
    leaves them out. An empty namespace is named with the ones the store holds.

    \b
    Example: chatledger sessions --prefix user- --sort updated --limit 20
    """
    with target.store(existing=True) as store:
        listed = sorted(set(store.sessions(prefix=prefix)))  # SCAN may repeat an id
        ids = listed if langgraph else [sid for sid in listed if kind(sid) is None]
        hidden = len(listed) - len(ids)
        elsewhere = None if ids or hidden or prefix else _other_namespaces(store)
        rows = _states(store, ids) if sort == "updated" else None
        if rows is not None:
            rows.sort(key=lambda row: row[1].updated_at, reverse=True)
        start = (page - 1) * limit
        shown = rows[start:start + limit] if rows is not None else _states(
            store, ids[start:start + limit])
    pages = max(1, -(-len(rows if rows is not None else ids) // limit))
    if as_json:
        print_json({"namespace": store.namespace, "url": store.url, "total": len(ids),
                    "page": page, "pages": pages,
                    "sessions": [{**state(store, sid, info), "kind": kind(sid)}
                                 for sid, info in shown]})
        return
    _table(shown)
    if not ids:
        note(_nothing_here(store, hidden=hidden, prefix=prefix, elsewhere=elsewhere))
        return
    if not shown:
        note(f"page {page} of {pages}: no sessions ({len(ids)} in namespace "
             f"{store.namespace!r})")
        return
    last = start + len(shown)
    note(f"sessions {start + 1}-{last} of {len(ids)} in namespace "
         f"{store.namespace!r}" + (f"; next: --page {page + 1}" if page < pages else ""))


LANGGRAPH_KINDS = {"lg:": "langgraph checkpoints", "lgs/": "langgraph store"}
"""The id prefixes of LedgerSaver's and LedgerStore's sessions (chatledger.langgraph's
``_layout.ROOT_PREFIX`` and ``_item_layout.ITEM_PREFIX``, which a test holds equal: the
CLI runs without the langgraph extra, so it cannot import them)."""


def kind(session_id: str) -> str | None:
    """What kept a session, when it is not a conversation: LangGraph's saver or store."""
    return next((name for prefix, name in LANGGRAPH_KINDS.items()
                 if session_id.startswith(prefix)), None)


def _other_namespaces(store: Store) -> list[str] | None:
    """The namespaces that do hold sessions, when the backend can tell."""
    known = raw_access(store).namespaces()
    return None if known is None else [ns for ns in known if ns != store.namespace]


def _nothing_here(store: Store, *, hidden: int, prefix: str,
                  elsewhere: list[str] | None) -> str:
    """Why the list is empty, and where the sessions are when they are elsewhere."""
    empty = f"no sessions in namespace {store.namespace!r}"
    if hidden:
        return (f"{empty} but LangGraph's ({counted(hidden, 'session')} left out;"
                " --langgraph lists them)")
    if prefix:
        return f"{empty} whose id starts with {prefix!r}"
    if elsewhere:
        return (f"{empty}; this store holds sessions in: {', '.join(elsewhere)} "
                "(--namespace NAME)")
    if elsewhere is None:
        return f"{empty} at {store.url}; is --namespace right?"
    return f"{empty}; this store holds no sessions"


def _states(store: Store, ids: list[str]) -> list[tuple[str, SessionInfo]]:
    """Each session's state; one that expired or went since it was listed is left out."""
    rows = []
    with progress("reading sessions", len(ids)) as bar:
        for session_id in ids:
            info = store.session(session_id).info()
            if info is not None:
                rows.append((session_id, info))
            advance(bar)
    return rows


def _table(rows: list[tuple[str, SessionInfo]]) -> None:
    width = max([len("session"), *(len(escape_line(sid)) for sid, _ in rows)])
    out = console()
    out.print(f"{'session':<{width}}  {'messages':>8}  {'version':>7}  {'updated':<25}  "
              f"{'expires in':<10}  kind", style="bold")
    for sid, info in rows:
        out.print(f"{escape_line(sid):<{width}}  {info.count:>8,}  {info.version:>7,}  "
                  f"{_when(info.updated_at):<25}  {_expires_in(info):<10}  {kind(sid) or ''}"
                  .rstrip())


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _when(moment: datetime) -> str:
    return moment.isoformat(sep=" ", timespec="seconds")


def _expiry(info: SessionInfo) -> str:
    if info.expires_at is None:
        return "never"
    return f"{_when(info.expires_at)} (in {_expires_in(info)})"


def _expires_in(info: SessionInfo) -> str:
    seconds = None if info.expires_at is None else (info.expires_at - _now()).total_seconds()
    return duration(seconds)


COMMANDS = (show, sessions)
