"""Erasure by user, without I/O: the rounds' bookkeeping and the report.

``forget_user`` (``_async/erasure.py``) asks the backend for the sessions the
user index names, forgets each (the session atomically, then its index entry),
and asks again: a session a concurrent writer recreated meanwhile is named
again and goes in the next round. This module keeps the tally.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._results import ForgetReport

__all__ = ["ROUNDS", "Tally", "thread_of"]

ROUNDS = 3
"""Rounds of listing and forgetting before a session still recreated is reported."""

_THREAD_PREFIX = "lg:"  # a LangGraph thread's sessions (chatledger.langgraph's layout)


def thread_of(session: str) -> str | None:
    """The LangGraph thread whose index or namespace ``session`` is, else None.

    A thread's sessions are ``lg:<length>:<thread>`` (its index) and
    ``lg:<length>:<thread>:<namespace>``.
    """
    if not session.startswith(_THREAD_PREFIX):
        return None
    length, sep, rest = session[len(_THREAD_PREFIX):].partition(":")
    if not sep or not length.isdigit() or len(rest) < int(length):
        return None
    thread, tail = rest[: int(length)], rest[int(length):]
    return thread if thread and (not tail or tail.startswith(":")) else None


@dataclass
class Tally:
    """What the rounds of one ``forget_user`` found."""

    user: str
    dry_run: bool = False
    deleted: dict[str, None] = field(default_factory=dict)  # ordered sets
    gone: dict[str, None] = field(default_factory=dict)

    def forgot(self, session: str, existed: bool) -> None:
        (self.deleted if existed else self.gone)[session] = None

    def report(self, still_written: list[str]) -> ForgetReport:
        threads = {thread_of(sid): None for sid in self.deleted}
        threads.pop(None, None)
        return ForgetReport(
            user=self.user, deleted=tuple(self.deleted),
            threads=tuple(t for t in threads if t is not None),
            already_gone=tuple(sid for sid in self.gone if sid not in self.deleted),
            still_written=tuple(still_written), dry_run=self.dry_run)
