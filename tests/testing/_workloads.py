"""The same workload for every store: each worker appends user+assistant turns to
one session and reads it back. A module of its own so spawned processes import it."""

from __future__ import annotations

import warnings
from functools import partial

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
