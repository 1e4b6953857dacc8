"""``chatledger rotate-key``: seal every entry of a namespace with the current key."""

from __future__ import annotations

import click

from .._errors import CorruptEntryError, EncryptionKeyError
from .._results import RotationReport
from .console import say
from .failures import Failure, Unusable
from .target import KEYRING_VARIABLE, Target, target_options


@click.command("rotate-key")
@target_options
@click.option("--dry-run", is_flag=True, help="Count what would be re-sealed; write nothing.")
@click.pass_obj
def rotate_key(target: Target, dry_run: bool) -> None:
    """Re-encrypt, in place, every entry of the namespace that is not sealed with
    the current key (the first of CHATLEDGER_KEYRING); entries stored in the
    clear are encrypted too.

    Online (appends and reads carry on; give every reader the new keyring
    first), resumable (run it again after a crash) and idempotent (a second run
    rewrites nothing). Then the old keys can leave the keyring.

    \b
    Example: CHATLEDGER_KEYRING="2027-01=NEW,2026-12=OLD" \\
             chatledger rotate-key --url redis://localhost:6379/0 --namespace bot
    """
    with target.store(existing=True) as store:
        if store.options.encryption is None:
            raise Unusable(f"set {KEYRING_VARIABLE}='NEWID=BASE64KEY,OLDID=BASE64KEY': the "
                           "first key is the one to seal with, the others open what is stored")
        try:
            report = store.rotate_key(dry_run=dry_run)
        except EncryptionKeyError as exc:
            raise Failure(f"rotate-key stopped: {exc}. Every entry is opened before the "
                          f"rotation counts it done, so the keys that cannot open what is "
                          f"stored must not be the ones kept: check {KEYRING_VARIABLE} (the "
                          "key under each id, and the old keys still in it); the entries "
                          "before this one are done, a run with the right keys finishes "
                          "the job") from exc
        except CorruptEntryError as exc:
            raise Failure(f"rotate-key stopped: {exc}. No key opens a damaged entry: "
                          "restore it from a backup, or remove its session; the entries "
                          "before it are done, a run after that finishes the job") from exc
        say(summary(report, f"namespace {store.namespace!r} at {store.url}"))


def summary(report: RotationReport, where: str) -> str:
    """What was done, in one line or two."""
    if not report.rewritten:
        return (f"nothing to rotate in {where}: {report.current} entries in "
                f"{report.sessions} session(s) are all sealed with key {report.key_id!r}"
                + (f" ({report.changed} changed meanwhile)" if report.changed else ""))
    verb = "would re-seal" if report.dry_run else "re-sealed"
    return (f"{'dry run: ' if report.dry_run else ''}{where}: {verb} {report.rewritten} "
            f"entries with key {report.key_id!r} ({report.resealed} from older keys, "
            f"{report.encrypted} stored in the clear) in {report.sessions} session(s); "
            f"{report.current} already current"
            + (f"; {report.changed} changed meanwhile, left as they are" if report.changed
               else ""))


COMMANDS = (rotate_key,)
