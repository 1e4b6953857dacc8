"""Context that fits, tried on histories hypothesis makes up: conversations with
tool calls, budgets from nothing to everything, compactions at any point.

No window ever separates a tool call from its results, every window is the
newest run of whole units that fits (or the newest unit alone, flagged), and
every message is either folded into exactly one summary or in the window
after the latest one.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from chatledger import Message, Store, assistant, summary_through, tool, user
from tests.backends import BackendCase, fuzz

FUZZ = 40  # examples a test draws on a backend case with fuzz_share 1

# A turn: ("user", length), ("answer", length), or ("calls", [result lengths]).
turns = st.lists(st.one_of(
    st.tuples(st.just("user"), st.integers(1, 60)),
    st.tuples(st.just("answer"), st.integers(1, 60)),
    st.tuples(st.just("calls"), st.lists(st.integers(1, 60), min_size=1, max_size=3)),
), min_size=1, max_size=25)


def _batch(turn: tuple[str, object], index: int) -> list[Message]:
    kind, size = turn
    if kind == "user":
        return [user("u" * int(size))]  # type: ignore[call-overload]
    if kind == "answer":
        return [assistant("a" * int(size))]  # type: ignore[call-overload]
    ids = [f"c{index}-{n}" for n in range(len(size))]  # type: ignore[arg-type]
    call = assistant("", tool_calls=[{"id": i, "name": "f", "args": {}} for i in ids])
    return [call, *(tool("r" * n, tool_call_id=i) for i, n in zip(ids, size, strict=True))]  # type: ignore[call-overload]


def chars(messages: Sequence[Message]) -> int:
    return sum(len(m.text) + 1 for m in messages)


def _units(messages: Sequence[Message]) -> list[list[Message]]:
    units: list[list[Message]] = []
    for message in messages:
        if message.role == "tool" and units:
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _check_whole(window: Sequence[Message]) -> None:
    """No tool result without its call before it; no call without its results."""
    if not window:
        return
    assert window[0].role != "tool"
    called = {c["id"] for m in window for c in m.tool_calls}
    answered = {m.tool_call_id for m in window if m.role == "tool"}
    assert answered <= called
    assert called == answered  # every call here was answered in the same turn


def test_a_window_is_the_newest_whole_units_that_fit(backend: BackendCase, store: Store) -> None:
    @fuzz(backend, FUZZ)
    @given(conversation=turns, budget=st.integers(0, 400))
    def check(conversation: list[tuple[str, object]], budget: int) -> None:
        session = store.session(uuid.uuid4().hex)
        for index, turn in enumerate(conversation):
            session.append(_batch(turn, index))
        everything = session.read().messages
        history = session.read(max_tokens=budget, count_tokens=chars)
        window = history.messages
        _check_whole(window)
        assert window == everything[len(everything) - len(window):]  # the newest run
        units = _units(everything)
        taken = _units(window)
        assert taken == units[len(units) - len(taken):]
        assert history.tokens == sum(chars(u) for u in taken)
        if history.over_budget:
            assert len(taken) == 1 and chars(taken[0]) > budget
        else:
            assert chars(window) <= budget
        if len(taken) < len(units):  # the next older unit would not have fit
            left_out = units[len(units) - len(taken) - 1]
            assert history.over_budget or chars(window) + chars(left_out) > budget
            assert history.cut_seq == left_out[-1].seq
        else:
            assert history.cut_seq == 0

    check()


def test_every_message_is_in_one_summary_or_in_the_window(backend: BackendCase,
                                                          store: Store) -> None:
    """Trims of what the latest summary covers included: pages then start at a
    trimmed ledger's oldest entry."""
    @fuzz(backend, FUZZ)
    @given(conversation=turns, compact_after=st.sets(st.integers(0, 24)),
           trim_after=st.sets(st.integers(0, 24)), trigger=st.integers(0, 300),
           keep=st.integers(0, 200))
    def check(conversation: list[tuple[str, object]], compact_after: set[int],
              trim_after: set[int], trigger: int, keep: int) -> None:
        session = store.session(uuid.uuid4().hex)
        folded: list[list[int]] = []

        def summarize(messages: list[Message]) -> str:
            own = [m for m in messages if summary_through(m) is None]
            _check_whole(own)
            folded.append([m.seq or 0 for m in own])
            return f"summary {len(folded)}"

        stored: list[int] = []  # every message's seq, trimmed or not
        for index, turn in enumerate(conversation):
            ack = session.append(_batch(turn, index))
            stored += range(ack.first_seq, ack.last_seq + 1)
            if index in compact_after:
                session.maybe_compact(summarize, trigger_tokens=trigger, keep_tokens=keep,
                                      count_tokens=chars)
            if index in trim_after:
                session.trim_summarized()
        history = session.read(with_summary=True)
        _check_whole(history.messages)
        window = [m.seq or 0 for m in history]
        seen = [seq for seqs in folded for seq in seqs] + window
        assert sorted(seen) == stored  # each exactly once: none lost, none twice
        if history.summary is not None:
            assert history.summary.text == f"summary {len(folded)}"
            through = summary_through(history.summary)
            assert through is not None
            assert all(seq <= through for seqs in folded for seq in seqs)
            assert all(seq > through for seq in window)
        else:
            assert not folded

    check()
