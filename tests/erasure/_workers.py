"""Processes for the erasure tests: a module of their own so that spawned
processes import them, and ``python -m`` runs the one killed mid-erasure."""

from __future__ import annotations

import sys
import time
from typing import Any

from chatledger import assistant, open_store, user


def write_sessions(url: str, options: dict[str, Any], owner: str, sessions: list[str],
                   start: Any, turns: int) -> int:
    """Append ``turns`` pairs round-robin to ``sessions``, all tagged ``owner``;
    return how many appends were acknowledged (every one must be)."""
    acked = 0
    with open_store(url, **options) as store:
        handles = [store.session(sid, user=owner) for sid in sessions]
        start.wait(60)
        for turn in range(turns):
            handle = handles[turn % len(handles)]
            handle.append([user(f"{owner} secret {turn}"), assistant(f"noted {turn}")])
            acked += 1
    return acked


def forget_then_hang(url: str, namespace: str, owner: str, finished: int) -> None:
    """Forget ``owner``'s sessions, but stop dead after ``finished`` of them and
    the delete of the next: as a crash between a session and its index entry."""
    with open_store(url, namespace=namespace) as store:
        backend = store._backend
        real = backend.forget_session
        done = 0

        def forget_session(who: str, session: str) -> bool:
            nonlocal done
            if done == finished:
                backend.delete(session)  # the session is gone, its index entry not yet
                print("cut", flush=True)
                time.sleep(600)  # killed here
            done += 1
            return real(who, session)

        backend.forget_session = forget_session  # type: ignore[method-assign]
        store.forget_user(owner)


if __name__ == "__main__":
    forget_then_hang(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
