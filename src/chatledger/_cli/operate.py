"""``chatledger delete``, ``purge`` and ``forget-user``: take sessions away, after saying which."""

from __future__ import annotations

import click

from .._errors import BackendError, BackendUnavailable
from .._results import ForgetReport, SessionInfo
from .._sync.store import Store
from .._text import escape_line
from .console import counted, say
from .failures import Failure
from .inspect import require
from .target import Target, target_options

SHOWN = 10  # ids listed in a confirmation prompt before "and N more"


@click.command()
@target_options
@click.argument("session_ids", nargs=-1, required=True)
@click.option("--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (for scripts).")
@click.pass_obj
def delete(target: Target, session_ids: tuple[str, ...], dry_run: bool, yes: bool) -> None:
    """Delete whole sessions, after showing what they hold and asking.

    A session that does not exist is an error, and then nothing is deleted.

    \b
    Example: chatledger delete user-42 --url sqlite:///bot.db --yes
    """
    with target.store(existing=True) as store:
        infos = {sid: _state(store, sid) for sid in dict.fromkeys(session_ids)}
        lines = [f"  {escape_line(sid)}: {_described(info)}" for sid, info in infos.items()]
        what = f"{len(infos)} session(s) of namespace {store.namespace!r} at {store.url}"
        if _stop(what, lines, dry_run, yes):
            return
        gone = sum(store.session(sid).delete() for sid in infos)
    say(f"deleted {gone} session(s)")


def _state(store: Store, session_id: str) -> SessionInfo | BackendError:
    """The session's state, or why it cannot be read: a row damaged by hand is still
    deleted (the error itself says to delete it); a store that cannot answer stops."""
    try:
        return require(store, session_id, store.session(session_id).info())
    except BackendUnavailable:
        raise
    except BackendError as exc:
        return exc


def _described(info: SessionInfo | BackendError) -> str:
    if isinstance(info, BackendError):
        return f"its stored state cannot be read ({escape_line(str(info))})"
    return (f"{counted(info.count, 'message')}, version {info.version}, "
            f"updated {info.updated_at.isoformat(sep=' ', timespec='seconds')}")


@click.command()
@target_options
@click.option("--prefix", default=None, help="Delete sessions whose id starts with this text.")
@click.option("--all", "everything", is_flag=True, help="Delete every session of the namespace.")
@click.option("--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (for scripts).")
@click.pass_obj
def purge(target: Target, prefix: str | None, everything: bool, dry_run: bool,
          yes: bool) -> None:
    """Delete every session whose id starts with --prefix (literally), or --all.

    Only the namespace given is touched; 'a*' matches ids that start with the
    two characters a and *, nothing else.

    \b
    Example: chatledger purge --prefix load-test- --namespace staging --dry-run
    """
    if prefix is not None and everything:
        raise click.UsageError("give --prefix or --all, not both")
    if not everything and not prefix:
        raise click.UsageError("give a non-empty --prefix, or --all")
    prefix = prefix or ""
    with target.store(existing=True) as store:
        if _stop(_scope(store, prefix), _listing(store, prefix), dry_run, yes):
            return
        say(f"deleted {store.purge(prefix=prefix)} session(s)")


@click.command("forget-user")
@target_options
@click.argument("user_id")
@click.option("--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (for scripts).")
@click.pass_obj
def forget_user(target: Target, user_id: str, dry_run: bool, yes: bool) -> None:
    """Delete every session and LangGraph thread tagged with USER_ID.

    Finds them in the namespace's user index: sessions written without a
    user are not found. Each session goes atomically; an erasure cut short
    is finished by running the command again. Exits 1 when a writer kept
    recreating a session of the user: run it again once the writer stopped.

    \b
    Example: chatledger forget-user customer-42 --url sqlite:///bot.db --yes
    """
    with target.store(existing=True) as store:
        found = store.forget_user(user_id, dry_run=True)
        what = f"the sessions of user {user_id!r} in namespace {store.namespace!r} at {store.url}"
        if not found.deleted and not found.already_gone:
            say(f"no session of user {user_id!r} in namespace {store.namespace!r}: "
                "nothing to delete")
            return
        if _stop(what, _forget_listing(found), dry_run, yes):
            return
        report = store.forget_user(user_id)
    say("\n".join(_forget_listing(report)))
    if report.still_written:
        raise Failure(f"{len(report.still_written)} session(s) of {user_id!r} were written "
                      "again during the erasure: run forget-user again once writers stopped")


def _forget_listing(report: ForgetReport) -> list[str]:
    """The report's lines: what was (or would be) deleted, what was gone already."""
    verb = "would delete" if report.dry_run else "deleted"
    threads = f", {report.threads_deleted} LangGraph thread(s)" if report.threads else ""
    lines = [f"{verb} {report.sessions_deleted} session(s){threads}",
             *(f"  {escape_line(sid)}" for sid in report.deleted[:SHOWN])]
    if report.sessions_deleted > SHOWN:
        lines.append(f"  ... and {report.sessions_deleted - SHOWN} more")
    if report.already_gone:
        lines.append(f"{len(report.already_gone)} indexed session(s) already gone "
                     "(expired, deleted, or an earlier erasure cut short)")
    return lines


def _scope(store: Store, prefix: str) -> str:
    which = f"whose id starts with {prefix!r}" if prefix else "(all of them)"
    return f"session(s) {which} of namespace {store.namespace!r} at {store.url}"


def _listing(store: Store, prefix: str) -> list[str]:
    ids = sorted(set(store.sessions(prefix=prefix)))
    more = [f"  ... and {len(ids) - SHOWN} more"] if len(ids) > SHOWN else []
    return [f"{len(ids)} session(s)", *(f"  {escape_line(sid)}" for sid in ids[:SHOWN]), *more]


def _stop(what: str, lines: list[str], dry_run: bool, yes: bool) -> bool:
    """Show what would go; True when nothing is to be deleted (a dry run)."""
    if dry_run:
        say("\n".join([f"dry run: would delete {what}:", *lines]))
        return True
    if not yes and not click.confirm("\n".join([f"delete {what}:", *lines, "delete?"])):
        raise Failure("nothing deleted")
    return False


COMMANDS = (delete, purge, forget_user)
