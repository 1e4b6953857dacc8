"""``chatledger doctor``: is this deployment safe for memory that must not vanish?

:func:`diagnose` opens the store at a URL, proves a real round trip through the
public API in a scratch namespace (append, retry, read back, delete), then asks
the server itself what could lose acknowledged history: eviction policies,
missing persistence, replication, our scripts; and, for a store with a
keyring, whether its namespace holds entries stored in the clear; whether the
newest entries of a sample of its conversations and checkpointer threads decode;
and, when the namespace holds LangGraph store items (LedgerStore), whether each
reads. Each finding is a :class:`Check`; a ``fail`` makes the command exit non-zero.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from .._checks import Check, Status
from .._errors import ChatLedgerError
from .._messages import assistant, user
from .._options import RetryPolicy
from .._sync.store import Store, open_store, raw_access
from .._url import parse_url, redact
from .entries import sampled_entries
from .items import store_items
from .plaintext import clear_entries

__all__ = ["SCRATCH", "Check", "Report", "Status", "diagnose"]

SCRATCH = "chatledger-doctor"
"""The namespace of the round trip's session (written, then deleted)."""


@dataclass
class Report:
    url: str
    checks: list[Check] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(check.status == "fail" for check in self.checks)

    def count(self, status: Status) -> int:
        return sum(check.status == status for check in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "ok": not self.failed,
                "checks": [asdict(check) for check in self.checks]}


def diagnose(url: str, **options: Any) -> Report:
    """Check the store at ``url``; never raises for what it finds, reports it.

    Its checks of stored data (plaintext, store items) read the namespace users
    store in: ``namespace=``, the URL's, else the store's default. The round trip
    writes in a scratch namespace unless a namespace is named (a user may be
    allowed no other: a Redis ACL).
    """
    options.setdefault("retry", RetryPolicy(attempts=2, deadline=5.0))
    try:
        store = open_store(url, **options)
    except ChatLedgerError as exc:
        return Report(redact(url), [Check("open", "fail", f"{type(exc).__name__}: {exc}")])
    with store:
        report = Report(store.url, raw_access(store).checks())
        if not report.failed:  # an unreachable server would only fail again, slowly
            report.checks.append(_scratch_round_trip(store, url, options))
        if not report.failed and store.options.encryption is not None:
            report.checks.append(_plaintext(store))
        if not report.failed:
            report.checks += _entries(store) + _items(store)
    return report


def _scratch_round_trip(store: Store, url: str, options: dict[str, Any]) -> Check:
    if "namespace" in options or "namespace" in _query(url):
        return _round_trip(store)
    try:
        scratch = open_store(url, **options, namespace=SCRATCH)
    except ChatLedgerError as exc:
        return Check("round trip", "fail", f"{type(exc).__name__}: {exc}")
    with scratch:
        return _round_trip(scratch)


def _entries(store: Store) -> list[Check]:
    try:
        found = sampled_entries(store)
    except ChatLedgerError as exc:
        return [Check("entries", "fail", f"{type(exc).__name__}: {exc}")]
    return [] if found is None else [found]


def _items(store: Store) -> list[Check]:
    try:
        found = store_items(store)
    except ChatLedgerError as exc:
        return [Check("store items", "fail", f"{type(exc).__name__}: {exc}")]
    return [] if found is None else [found]


def _query(url: str) -> dict[str, str]:
    try:
        return parse_url(url).query
    except ChatLedgerError:
        return {}  # open_store reports the bad URL


def _plaintext(store: Store) -> Check:
    try:
        return clear_entries(store)
    except ChatLedgerError as exc:
        return Check("plaintext", "fail", f"{type(exc).__name__}: {exc}")


def _round_trip(store: Store) -> Check:
    """Append, retry the same batch, read it back and delete it: the real paths."""
    session = store.session(f"doctor-{secrets.token_hex(4)}")
    batch = [user("doctor: 🩺 ping"), assistant("pong", metadata={"check": True})]
    started = time.perf_counter()
    try:
        ack = session.append(batch)
        retried = session.append(batch)
        history = session.read(last=2, min_version=ack.version)
        session.delete()
    except ChatLedgerError as exc:
        return Check("round trip", "fail", f"{type(exc).__name__}: {exc}")
    elapsed_ms = (time.perf_counter() - started) * 1000
    if not retried.deduplicated or history.messages != batch:
        return Check("round trip", "fail", "the store did not give back what it acknowledged")
    return Check("round trip", "ok",
                 f"append, idempotent retry, read back, delete: {elapsed_ms:.1f} ms in all",
                 round(elapsed_ms, 3))
