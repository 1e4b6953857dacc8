"""Context that fits: budgeted reads, summaries with a cursor, compaction.

Run on every backend: the reads page through the backend's windowed read from
the newest end, so what is checked here is checked where the pages come from.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Sequence
from typing import Any

import pytest

from chatledger import (
    ConflictError,
    MemoryLostError,
    Message,
    Session,
    Store,
    ToolCall,
    approximate_tokens,
    assistant,
    open_store,
    summary_through,
    system,
    tool,
    user,
)
from chatledger.testing import check_history
from tests.backends import BackendCase
from tests.contract import _workers
from tests.contract.test_concurrency import WORKERS, _run_all, _worker_options
from tests.spawned import SpawnedWorkers


def one_each(messages: Sequence[Message]) -> int:
    """A counter that makes budgets easy to reason about: a token a message."""
    return len(messages)


def _turn(i: int, calls: int = 1) -> list[Message]:
    """A user question, an assistant asking ``calls`` tools, their results, an answer."""
    ids = [f"t{i}-{c}" for c in range(calls)]
    return [user(f"q{i}"),
            assistant("", tool_calls=[{"id": c, "name": "lookup", "args": {"i": i}} for c in ids]),
            *[tool(f"r{c}", tool_call_id=c) for c in ids],
            assistant(f"a{i}")]


def _fill(session: Session, turns: int, calls: int = 1) -> None:
    batch: list[Message] = []
    for i in range(turns):
        batch += _turn(i, calls)
        if len(batch) >= 400:
            session.append(batch)
            batch = []
    if batch:
        session.append(batch)


def _entries_touched(store: Any) -> list[int]:
    """Record how many entries each backend read returns (the store's own backend)."""
    backend = getattr(store, "_target", store)._backend
    original, touched = backend.read, []
    if inspect.iscoroutinefunction(original):
        async def read(session: str, query: Any) -> Any:
            raw = await original(session, query)
            touched.append(len(raw.entries))
            return raw
    else:
        def read(session: str, query: Any) -> Any:  # type: ignore[misc]
            raw = original(session, query)
            touched.append(len(raw.entries))
            return raw
    backend.read = read
    return touched


def _meanwhile(session: Any, done: list[Any], text: str, method: str, *args: Any,
               **kwargs: Any) -> Any:
    """A summarizer that, the first time it runs, calls ``session.method(...)``
    (records its result in ``done``) and returns ``text``. On an async store it
    is async, as the store is the one running it."""
    target = getattr(session, "_target", session)

    def summarize(messages: list[Message]) -> Any:
        if done:
            return text
        result = getattr(target, method)(*args, **kwargs)
        if not inspect.isawaitable(result):
            done.append(result)
            return text

        async def finish() -> str:
            done.append(await result)
            return text

        return finish()

    return summarize


def test_a_budgeted_read_returns_the_newest_messages_that_fit(store: Store) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 11)])
    history = session.read(max_tokens=3, count_tokens=one_each)
    assert [m.text for m in history] == ["m8", "m9", "m10"]
    assert (history.tokens, history.cut_seq, history.over_budget) == (3, 7, False)
    assert history.version == 10 and history.summary is None
    everything = session.read(max_tokens=100, count_tokens=one_each)
    assert len(everything) == 10 and everything.cut_seq == 0


def test_the_cut_never_separates_tool_calls_from_their_results(store: Store) -> None:
    session = store.session("s")
    _fill(session, 3, calls=2)  # 5 messages a turn: q, call, result, result, answer
    seqs = {n: [m.seq for m in session.read(max_tokens=n, count_tokens=one_each)]
            for n in range(1, 12)}
    # 2 and 3 would start on a tool result: the cut moves to the unit's start, newer
    assert seqs[1] == seqs[2] == seqs[3] == [15]
    assert seqs[4] == [12, 13, 14, 15]
    assert seqs[5] == [11, 12, 13, 14, 15]
    assert seqs[6] == seqs[7] == seqs[8] == list(range(10, 16))
    assert seqs[9] == list(range(7, 16))
    for window in seqs.values():
        first = session.read(after=window[0] - 1, limit=1).messages[0]
        assert first.role != "tool"


def test_a_message_larger_than_the_budget_comes_alone_and_flagged(store: Store) -> None:
    session = store.session("s")
    session.append([user("short"), user("long " * 400)])
    history = session.read(max_tokens=50)
    assert [m.seq for m in history] == [2]
    assert history.over_budget and history.tokens is not None and history.tokens > 50
    assert history.cut_seq == 1
    nothing_fits = session.read(max_tokens=0)
    assert [m.seq for m in nothing_fits] == [2] and nothing_fits.over_budget


def test_an_over_budget_unit_of_tool_calls_comes_whole(store: Store) -> None:
    session = store.session("s")
    _fill(session, 2, calls=3)
    history = session.read(max_tokens=2, count_tokens=one_each)
    assert [m.role for m in history] == ["assistant"]  # the final answer alone fits
    calls = session.read(max_tokens=1, count_tokens=lambda ms: 10 * len(ms))
    assert calls.over_budget and len(calls) == 1


@pytest.mark.parametrize("answer", [-5, 1.5, None, True, "3"])
def test_a_counter_that_answers_no_count_is_named(store: Store, answer: Any) -> None:
    session = store.session("s")
    session.append([user("a"), user("b")])
    with pytest.raises(ValueError, match=rf"count_tokens returned {answer!r} for 1 message\(s\): "
                                         r"it must return an int of 0 or more"):
        session.read(max_tokens=100, count_tokens=lambda messages: answer)


def test_the_default_counter_is_approximate_and_offline(store: Store) -> None:
    session = store.session("s")
    session.append([user("x" * 400), assistant("y" * 40)])
    history = session.read(max_tokens=20)
    assert [m.text for m in history] == ["y" * 40]
    assert history.tokens == approximate_tokens(history.messages) == 14


def test_a_budgeted_read_touches_the_window_not_the_history(store: Store) -> None:
    session = store.session("s")
    _fill(session, 500)  # 2,000 messages
    touched = _entries_touched(store)
    history = session.read(max_tokens=10, count_tokens=one_each)
    assert len(history) == 9 and history.version == 2000  # 10 would split a call
    assert sum(touched) <= 64
    touched.clear()
    assert len(session.read(max_tokens=300, count_tokens=one_each)) >= 297
    assert sum(touched) <= 2 * 300 + 64  # pages doubling: at most twice the window and a page


def test_budgeted_reads_check_loss_and_arguments(store: Store) -> None:
    session = store.session("s")
    empty = session.read(max_tokens=10)
    assert (empty.messages, empty.version, empty.tokens) == ([], 0, 0)
    session.append([user("a")])
    with pytest.raises(MemoryLostError):
        session.read(max_tokens=10, min_version=5)
    with pytest.raises(MemoryLostError):
        session.read(with_summary=True, ledger="not-the-ledger")
    for bad in ({"last": 2}, {"after": 1}, {"limit": 1}):
        with pytest.raises(ValueError, match="takes no last, after or limit"):
            session.read(max_tokens=10, **bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_tokens"):
        session.read(max_tokens=-1)
    with pytest.raises(TypeError, match="count_tokens"):
        session.read(max_tokens=5, count_tokens=5)


def test_tool_results_whose_call_was_trimmed_start_no_window(store: Store) -> None:
    session = store.session("s")
    _fill(session, 2)  # seqs 1..4 and 5..8: q, call, result, answer
    session.trim(keep_last=6)  # keeps 3.. : the first result lost its call
    history = session.read(max_tokens=100, count_tokens=one_each)
    assert [m.seq for m in history] == [4, 5, 6, 7, 8]


def test_a_summary_covers_up_to_its_cursor_and_no_further(store: Store) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 7)])
    seen = session.read()
    session.append([user("m7 arrived while summarizing")])
    with pytest.raises(ConflictError):
        session.summarize("m1..m4", through_seq=4, expect_version=seen.version)
    ack = session.summarize("m1..m4", through_seq=4, expect_version=7)
    assert ack.first_seq == 8
    history = session.read(with_summary=True)
    assert history.summary is not None and history.summary.text == "m1..m4"
    assert summary_through(history.summary) == 4 and history.summary.role == "system"
    assert [m.seq for m in history] == [5, 6, 7]
    # the ledger itself keeps everything, the summary as an entry among them
    assert [summary_through(m) for m in session.read()] == [None] * 7 + [4]


def test_one_summary_per_cursor(store: Store) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 5)])
    first = session.summarize("first", through_seq=2, expect_version=4)
    again = session.summarize("second", through_seq=2, expect_version=4)
    assert again.deduplicated and again.first_seq == first.first_seq
    assert session.read(with_summary=True).summary.text == "first"  # type: ignore[union-attr]


def test_summarize_refuses_bad_cursors_and_lost_ledgers(store: Store) -> None:
    session = store.session("s")
    ack = session.append([user("a"), user("b")])
    for through in (0, 3):
        with pytest.raises(ValueError, match="through_seq"):
            session.summarize("x", through_seq=through, expect_version=2)
    with pytest.raises(MemoryLostError):
        session.summarize("x", through_seq=1, expect_version=2, ledger="gone")
    assert session.read().version == ack.version


def test_a_cursor_past_the_version_is_refused_without_an_expected_version(
        store: Store) -> None:
    """"Never covered, never lost" whatever ``expect_version`` is: a cursor past what
    is stored would cover the messages appended after it."""
    session = store.session("s")
    session.append([user(f"fact {n}") for n in range(1, 6)])
    for through in (50, 6):  # past the version; equal to the summary's own seq
        with pytest.raises(ValueError, match=f"through_seq {through} .* version 5"):
            session.summarize("facts", through_seq=through, expect_version=None)
    session.append([user(f"later {n}") for n in range(1, 4)])
    history = session.read(with_summary=True)
    assert history.summary is None and len(history) == 8
    assert session.trim_summarized() == 0 and len(session.read()) == 8


def test_a_stored_summary_covers_only_what_was_stored_before_it(store: Store) -> None:
    """A marker appended as any message, or copied with its summary from another session,
    may name its own seq or a later one: it covers through the seq before it, so what is
    appended after it is read, and not trimmed, whatever the marker says."""
    session = store.session("s")
    session.append([user("m1"), user("m2"), user("m3")])
    forged = system("note", metadata={"chatledger.summary": {"through_seq": 999}})
    assert session.append([forged]).first_seq == 4
    session.append([user("m5"), assistant("m6")])
    history = session.read(with_summary=True)
    assert history.summary is not None and summary_through(history.summary) == 3
    assert [m.text for m in history] == ["m5", "m6"]
    assert session.trim_summarized() == 3
    assert [m.text for m in session.read()] == ["note", "m5", "m6"]
    copied = store.session("copy")
    copied.append([session.read().messages[0], user("a new question")])  # at seq 1
    assert [m.text for m in copied.read(with_summary=True)] == ["a new question"]
    assert summary_through(copied.read().messages[0]) == 0
    assert copied.trim_summarized() == 0 and len(copied.read()) == 2


def test_a_cursor_below_the_latest_summary_is_refused(store: Store) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 9)])
    session.summarize("m1..m6", through_seq=6, expect_version=8)  # stored at seq 9
    assert session.trim_summarized() == 6
    for expect_version in (None, 9):
        with pytest.raises(ValueError, match=r"through_seq 4 .* latest summary.* \(seq 6\)"):
            session.summarize("m1..m4", through_seq=4, expect_version=expect_version)
    again = session.summarize("m1..m6 again", through_seq=6, expect_version=None)
    assert again.deduplicated and again.first_seq == 9
    ack = session.summarize("m1..m8", through_seq=8, expect_version=None)
    assert ack.first_seq == 10
    history = session.read(with_summary=True)
    assert history.summary is not None and history.summary.text == "m1..m8"
    assert [summary_through(m) for m in session.read()] == [None, None, 6, 8]


def test_a_cursor_between_a_tool_call_and_its_results_is_refused(store: Store) -> None:
    """Reads leave out a result whose call is covered: a cursor there would lose it
    from every context, neither summarized nor kept."""
    session = store.session("s")
    session.append([user("balance of 77?"),
                    assistant("", tool_calls=[ToolCall(id="c1", name="balance", args={}),
                                              ToolCall(id="c2", name="limit", args={})]),
                    tool("1,234.56", tool_call_id="c1"), tool("5,000", tool_call_id="c2"),
                    assistant("Your balance is 1,234.56."), user("thanks")])
    for through in (2, 3):
        with pytest.raises(ValueError, match=rf"through_seq {through} cuts the message at seq 2 "
                                             r"from its tool results \(to seq 4\).*summarize "
                                             r"through seq 4, or 1"):
            session.summarize("asked", through_seq=through, expect_version=None)
    assert session.read().version == 6
    session.summarize("asked for a balance", through_seq=4, expect_version=6)
    assert [m.seq for m in session.read(with_summary=True)] == [5, 6]


def test_a_cursor_over_tool_calls_not_answered_yet_is_refused(store: Store) -> None:
    """A result stored after the summary would be left out of every read."""
    session = store.session("s")
    session.append([user("balance of 77?"),
                    assistant("", tool_calls=[ToolCall(id="c1", name="balance", args={})])])
    with pytest.raises(ValueError, match=r"through_seq 2 covers the tool calls of seq 2, whose "
                                         r"results are not stored by then.*summarize through "
                                         r"seq 1, or once they are stored"):
        session.summarize("asked", through_seq=2, expect_version=None)
    session.summarize("asked", through_seq=1, expect_version=None)
    session.append([tool("1,234.56", tool_call_id="c1"), assistant("It is 1,234.56.")])
    assert [m.seq for m in session.read(with_summary=True)] == [2, 4, 5]


def test_summarize_without_an_expected_version_goes_round_again_after_a_conflict(
        store: Store) -> None:
    """A message appended between the read that judged the cursor and the append: the
    summary is judged again at the new version and stored after the newcomer."""
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 5)])
    target = getattr(store, "_target", store)
    backend = target._backend
    original = backend.read
    other = getattr(target.session("s"), "_target", target.session("s"))
    reads: list[None] = []

    if inspect.iscoroutinefunction(original):
        async def read(name: str, query: Any) -> Any:
            reads.append(None)
            raw = await original(name, query)
            if len(reads) == 1:
                await other.append([user("newcomer")])
            return raw
    else:
        def read(name: str, query: Any) -> Any:  # type: ignore[misc]
            reads.append(None)
            raw = original(name, query)
            if len(reads) == 1:
                other.append([user("newcomer")])
            return raw
    backend.read = read
    try:
        ack = session.summarize("m1..m4", through_seq=4, expect_version=None)
    finally:
        backend.read = original
    assert len(reads) == 2 and ack.first_seq == 6
    history = session.read(with_summary=True)
    assert [m.text for m in history] == ["newcomer"]


def test_summarize_with_an_expected_version_checks_the_latest_summary_there(
        store: Store) -> None:
    """The cursor is judged at the version the write is made at: a stale expected
    version is a conflict, never a summary judged against a newer one."""
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 7)])
    session.summarize("m1..m4", through_seq=4, expect_version=6)
    with pytest.raises(ConflictError) as refused:
        session.summarize("m1..m5", through_seq=5, expect_version=6)
    assert (refused.value.expected, refused.value.current) == (6, 7)
    assert session.summarize("m1..m5", through_seq=5, expect_version=7).first_seq == 8


def test_the_summary_counts_against_the_budget(store: Store) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 11)])
    session.summarize("s", through_seq=5, expect_version=10)
    history = session.read(max_tokens=3, with_summary=True, count_tokens=one_each)
    assert history.summary is not None
    assert [m.seq for m in history] == [9, 10]
    assert (history.tokens, history.cut_seq) == (3, 8)
    summary_only = session.read(max_tokens=1, with_summary=True, count_tokens=one_each)
    assert [m.seq for m in summary_only] == [10] and summary_only.over_budget


def test_without_a_summary_with_summary_reads_everything_there_is(store: Store) -> None:
    session = store.session("s")
    _fill(session, 40)  # 160 messages: more than one page
    history = session.read(with_summary=True)
    assert history.summary is None and len(history) == 160


def test_maybe_compact_waits_for_the_trigger(store: Store) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 6)])
    calls: list[list[Message]] = []
    result = session.maybe_compact(lambda ms: calls.append(ms) or "never", trigger_tokens=5,
                                   keep_tokens=2, count_tokens=one_each)
    assert result is None and calls == []


def test_maybe_compact_folds_the_old_part_and_chains_summaries(store: Store) -> None:
    session = store.session("s")
    _fill(session, 10)  # 40 messages, 30 units
    folded: list[list[int | None]] = []

    def summarize(messages: list[Message]) -> str:
        folded.append([m.seq for m in messages])
        return f"summary {len(folded)}"

    ack = session.maybe_compact(summarize, trigger_tokens=20, keep_tokens=5,
                                count_tokens=one_each)
    assert ack is not None and ack.first_seq == 41
    history = session.read(with_summary=True)
    assert history.summary is not None and history.summary.text == "summary 1"
    kept = [m.seq for m in history]
    assert folded[0] == list(range(1, kept[0])) and kept[-1] == 40
    assert history.messages[0].role != "tool"
    _fill(session, 10)
    session.maybe_compact(summarize, trigger_tokens=20, keep_tokens=5, count_tokens=one_each)
    assert folded[1][0] == 41  # the previous summary comes first, then what follows it
    assert folded[1][1:] == [s for s in range(kept[0], folded[1][-1] + 1) if s != 41]


def test_maybe_compact_never_covers_what_arrived_while_it_ran(store: Store) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 21)])

    # the newcomer bumps the version: the summary's first write conflicts
    summarize = _meanwhile(session, [], "summary", "append", [user("arrived meanwhile")])
    ack = session.maybe_compact(summarize, trigger_tokens=10, keep_tokens=4,
                                count_tokens=one_each)
    assert ack is not None and ack.first_seq == 22  # stored after the newcomer, at retry
    history = session.read(with_summary=True)
    assert [m.text for m in history] == ["m17", "m18", "m19", "m20", "arrived meanwhile"]


def test_a_summary_that_keeps_conflicting_is_given_up(store: Store) -> None:
    """Every attempt to store the summary finds a newcomer first: after ten,
    maybe_compact stores nothing (None), and nothing is lost."""
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 21)])
    target = getattr(store, "_target", store)
    backend = target._backend
    original = backend.append
    other = getattr(target.session("s"), "_target", target.session("s"))
    attempts: list[int] = []

    def summary_batch(batch: Any) -> bool:
        return any(i.startswith("chatledger-summary-") for i in batch.ids)

    if inspect.iscoroutinefunction(original):
        async def append(name: str, batch: Any) -> Any:
            if summary_batch(batch):
                attempts.append(1)
                backend.append = original
                await other.append([user(f"newcomer {len(attempts)}")])
                backend.append = append
            return await original(name, batch)
    else:
        def append(name: str, batch: Any) -> Any:  # type: ignore[misc]
            if summary_batch(batch):
                attempts.append(1)
                backend.append = original
                other.append([user(f"newcomer {len(attempts)}")])
                backend.append = append
            return original(name, batch)
    backend.append = append
    assert session.maybe_compact(lambda ms: "never stored", trigger_tokens=5, keep_tokens=2,
                                 count_tokens=one_each) is None
    backend.append = original
    assert len(attempts) == 10
    history = session.read()
    assert history.version == 30 and not any(summary_through(m) for m in history)


def test_racing_summarizers_store_one_summary(store: Store) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 21)])
    inner: list[Any] = []
    # a second summarizer runs and wins while the first is busy
    summarize = _meanwhile(session, inner, "outer", "maybe_compact", lambda ms: "inner",
                           trigger_tokens=10, keep_tokens=2, count_tokens=one_each)
    outer = session.maybe_compact(summarize, trigger_tokens=10, keep_tokens=4,
                                  count_tokens=one_each)
    assert outer is None and inner[0] is not None
    summaries = [m.text for m in session.read() if summary_through(m) is not None]
    assert summaries == ["inner"]


def test_maybe_compact_keeps_unanswered_tool_calls_out_of_the_summary(store: Store) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 11)])
    session.append([assistant("", tool_calls=[{"id": "slow", "name": "f", "args": {}}])])
    session.append([user(f"n{i}") for i in range(1, 11)])
    folded: list[list[Message]] = []
    session.maybe_compact(lambda ms: folded.append(ms) or "s", trigger_tokens=5,
                          keep_tokens=3, count_tokens=one_each)
    assert [m.seq for m in folded[0]] == list(range(1, 11))
    session.append([tool("late result", tool_call_id="slow")])
    window = session.read(with_summary=True).messages
    assert window[0].seq == 11 and window[-1].text == "late result"


def test_maybe_compact_checks_its_arguments(store: Store) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 21)])
    with pytest.raises(ValueError, match="trigger_tokens"):
        session.maybe_compact(lambda ms: "s", trigger_tokens=-1, keep_tokens=1)
    with pytest.raises(TypeError, match="keep_tokens"):
        session.maybe_compact(lambda ms: "s", trigger_tokens=1, keep_tokens=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must return a str"):
        session.maybe_compact(lambda ms: 42, trigger_tokens=1, keep_tokens=1,
                              count_tokens=one_each)
    assert session.read().version == 20


@pytest.mark.slow
def test_compaction_racing_appenders_in_other_processes_loses_nothing(
        backend: BackendCase, ledger_url: str, store: Store,
        spawned_workers: SpawnedWorkers) -> None:
    """Six processes append pairs while two others compact the same session (one
    of them trimming what its summaries cover); on memory://, one process's
    store, they are threads. check_history follows the chain of summaries: every
    message is folded into exactly one of them or is in the window after the latest."""
    compactors, pairs = 2, min(40, backend.concurrent_pairs // 4)  # 12 on DynamoDB's emulator
    assert _workers.WORKERS_OF_COMPACTION == WORKERS
    results = _run_all(backend, spawned_workers, _workers.append_or_compact, ledger_url,
                       _worker_options(store), "busy", pairs, compactors)
    records = [record for worker in results for record in worker]
    ledger = store.session("busy").read()
    report = check_history(records, {"busy": ledger})
    assert report.ok, str(report)
    assert report.figures.appends_acknowledged == (WORKERS - compactors) * pairs
    assert report.figures.summaries_stored, "the trigger was never reached"
    window = store.session("busy").read(with_summary=True)
    assert window.summary is not None
    assert window.summary.seq == max(m.seq or 0 for m in ledger if summary_through(m) is not None)
    texts = [m.text for m in window]  # pairs stay whole across the cut
    assert texts[0].endswith(" q") and all(
        texts[i + 1] == texts[i][:-1] + "a" for i in range(0, len(texts), 2))


def test_trim_summarized_drops_only_what_the_latest_summary_covers(store: Store) -> None:
    session = store.session("s")
    assert session.trim_summarized() == 0  # no session, no summary: nothing to drop
    session.append([user(f"m{i}") for i in range(1, 11)])
    assert session.trim_summarized() == 0
    session.summarize("m1..m6", through_seq=6, expect_version=10)
    session.append([user("m12")])
    assert session.trim_summarized() == 6
    history = session.read(with_summary=True)
    assert history.first_seq == 7 and history.summary is not None
    assert [m.seq for m in history] == [7, 8, 9, 10, 12]
    assert session.trim_summarized() == 0


def test_trim_summarized_keeps_what_was_appended_after_it_read(store: Store) -> None:
    """Appends between its read and its trim stay, and so does every message
    after the cursor: the backend cuts at the cursor, not ``keep_last`` from the end."""
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 11)])
    session.summarize("m1..m6", through_seq=6, expect_version=10)
    target = getattr(store, "_target", store)
    backend = target._backend
    original = backend.read
    other = getattr(target.session("s"), "_target", target.session("s"))
    newcomers = [user(f"n{i}") for i in range(1, 21)]

    if inspect.iscoroutinefunction(original):
        async def read(name: str, query: Any) -> Any:
            backend.read = original
            raw = await original(name, query)
            await other.append(newcomers)
            return raw
    else:
        def read(name: str, query: Any) -> Any:  # type: ignore[misc]
            backend.read = original
            raw = original(name, query)
            other.append(newcomers)
            return raw
    backend.read = read
    assert session.trim_summarized() == 6
    history = session.read(with_summary=True)
    assert history.first_seq == 7 and history.summary is not None
    assert [m.text for m in history] == ["m7", "m8", "m9", "m10", *(m.text for m in newcomers)]


def test_a_session_written_again_between_two_pages_is_memory_lost(store: Store) -> None:
    """The pages of one read must come from one ledger: a session deleted and
    written again between them is reported, never stitched into one window."""
    session = store.session("s")
    session.append([user(f"old {i}") for i in range(200)])
    target = getattr(store, "_target", store)
    backend = target._backend
    original = backend.read
    rewrite = [user(f"new {i}") for i in range(200)]

    def replaced_once() -> Any:  # the first page read, the ledger is replaced
        backend.read = original
        other = getattr(target.session("s"), "_target", target.session("s"))
        return other.delete(), other.append(rewrite)

    if inspect.iscoroutinefunction(original):
        async def read(name: str, query: Any) -> Any:
            raw = await original(name, query)
            for step in replaced_once():
                await step
            return raw
    else:
        def read(name: str, query: Any) -> Any:  # type: ignore[misc]
            raw = original(name, query)
            replaced_once()
            return raw
    backend.read = read
    with pytest.raises(MemoryLostError):
        session.read(max_tokens=10_000, count_tokens=one_each)


def test_a_trimmed_session_is_read_once_per_message(store: Store) -> None:
    """Pages below a trim start at the oldest entry kept: none is taken twice."""
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 201)])
    session.trim(keep_last=100)
    for history in (session.read(max_tokens=10**6, count_tokens=one_each),
                    session.read(with_summary=True)):
        assert [m.seq for m in history] == list(range(101, 201))


def test_a_trim_between_two_pages_takes_no_message_twice(store: Store) -> None:
    session = store.session("s")
    session.append([user(f"m{i}") for i in range(1, 301)])
    target = getattr(store, "_target", store)
    backend = target._backend
    original = backend.read
    other = getattr(target.session("s"), "_target", target.session("s"))

    if inspect.iscoroutinefunction(original):
        async def read(name: str, query: Any) -> Any:
            backend.read = original
            raw = await original(name, query)
            await other.trim(keep_last=100)  # after the first page: seqs 201.. are left
            return raw
    else:
        def read(name: str, query: Any) -> Any:  # type: ignore[misc]
            backend.read = original
            raw = original(name, query)
            other.trim(keep_last=100)
            return raw
    backend.read = read
    history = session.read(max_tokens=10**6, count_tokens=one_each)
    assert [m.seq for m in history] == list(range(201, 301))


def test_an_async_summarizer_on_a_sync_store_is_named_and_stores_nothing() -> None:
    async def summarize(messages: Sequence[Message]) -> str:
        return "never awaited"

    with open_store("memory://") as store:
        session = store.session("s")
        session.append([user("x" * 200) for _ in range(10)])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "coroutine was never awaited"
            with pytest.raises(TypeError, match=r"^the summarizer is async .*open_async_store"):
                session.maybe_compact(summarize, trigger_tokens=10, keep_tokens=10)
        assert session.read().version == 10
