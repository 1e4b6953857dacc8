"""``chatledger migrate --from-langgraph-store SOURCE``: LangGraph store items from
another store.

SOURCE is the database a PostgresStore or SqliteStore wrote (``postgresql://...``,
``sqlite:///path.db``), or ``module:factory``: a callable that returns any
``BaseStore`` (or a context manager yielding one). The items are copied with
:func:`chatledger.langgraph.copy_items`; the verification runs the copy again
as a dry run, which must find nothing left to copy.
"""

from __future__ import annotations

import click

from .._url import redact
from .._wording import install_hint
from .console import counted, progress_callback
from .failures import FAILED, Unusable, reported_errors
from .from_langgraph import Sources, opened
from .target import Target

__all__ = ["migrate_from_langgraph_store"]

_EXTRAS = install_hint("langgraph")
_STORES = Sources("--from-langgraph-store", "langgraph.store.postgres:PostgresStore",
                  "langgraph.store.sqlite:SqliteStore", "store", "LangGraph store items")


def migrate_from_langgraph_store(target: Target, source: str, *, dry_run: bool,
                                 verify: bool) -> None:
    """Copy, then copy again as a dry run; exit 1 when an item was refused or differs."""
    try:
        from ..langgraph import LedgerStore, copy_items  # noqa: PLC0415
    except ImportError as exc:
        raise Unusable(f"migrate needs {exc.name or 'langgraph'}: {_EXTRAS}") from exc
    click.echo(f"{'dry run: ' if dry_run else ''}{redact(source)} (LangGraph store items) -> "
               f"{redact(target.url)}", err=True)
    with opened(source, _STORES) as items, target.store() as store, \
            reported_errors(target.url):
        ledger = LedgerStore(store)
        with progress_callback("copying namespaces") as progress:
            report = copy_items(items, ledger, dry_run=dry_run, on_progress=progress)
        click.echo(report.summary())
        left = 0
        if verify and not dry_run:
            left = copy_items(items, ledger, dry_run=True).copied - len(report.refused)
            click.echo(f"verified: every item of {counted(report.namespaces, 'namespace')} "
                       "the same on both sides" if left <= 0 else
                       f"{counted(left, 'item')} differ between the source and chatledger "
                       "(written during the copy? run it again)")
    if report.refused or left > 0:
        raise SystemExit(FAILED)
