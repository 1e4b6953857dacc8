"""The same workload for every store: each worker appends user+assistant turns to
one session and reads it back. A module of its own so spawned processes import it."""

from __future__ import annotations

import atexit
import os
import threading
import warnings
from functools import partial
from pathlib import Path

from chatledger import assistant, open_store, user
from chatledger.testing import Recorder

SESSION = "shared"
TURNS = 12


def chatledger_turns(worker: int, recorder: Recorder, url: str) -> None:
    with open_store(url) as store:
        session = store.session(SESSION)
        for turn in range(TURNS):
            recorder.append(session, [user(f"w{worker} t{turn} q"),
                                      assistant(f"w{worker} t{turn} a")])
            recorder.read(session, last=10)


def langchain_turns(worker: int, recorder: Recorder, url: str, prefix: str) -> None:
    with warnings.catch_warnings():  # langchain-community announces its sunset on import
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.chat_message_histories import RedisChatMessageHistory
        from langchain_core.messages import AIMessage, HumanMessage
    history = RedisChatMessageHistory(SESSION, url=url, key_prefix=prefix)
    for turn in range(TURNS):
        text = f"w{worker} t{turn}"
        turn_messages = [HumanMessage(f"{text} q", id=f"{text} q"),
                         AIMessage(f"{text} a", id=f"{text} a")]
        recorder.append_via(SESSION, turn_messages,
                            partial(history.add_messages, turn_messages))
        recorder.read_via(SESSION, lambda: history.messages)


def note_pid(worker: int, recorder: Recorder, tag: str) -> None:
    """One append recorded without a store: which worker, in which process."""
    recorder.record_append(tag, [user(f"w{worker}", id=f"w{worker}")], start=0.0, end=0.0)


def fail_when_odd(worker: int, recorder: Recorder) -> None:
    note_pid(worker, recorder, "before")
    if worker % 2:
        raise RuntimeError(f"worker {worker} broke")


def exit_abruptly(worker: int, recorder: Recorder) -> None:
    if worker == 1:
        os._exit(3)


def hang(worker: int, recorder: Recorder, release: threading.Event | None = None) -> None:
    note_pid(worker, recorder, "before")
    if worker == 1:  # a worker stuck on a store that never answers
        (release or threading.Event()).wait()


def leave_a_note_at_exit(worker: int, recorder: Recorder, folder: str, linger: float) -> None:
    """Report, then take ``linger`` seconds to exit (as coverage does writing its data)."""
    note_pid(worker, recorder, "done")

    def slow_exit() -> None:
        threading.Event().wait(linger)  # the work an exit handler does, not a wait to pass
        Path(folder, f"exited-{worker}").write_text("clean exit", encoding="utf-8")

    atexit.register(slow_exit)
