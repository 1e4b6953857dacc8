"""check_history's model of summaries, on hand-made histories: every message is
in exactly one summary of the live chain or in the window after the latest, and
every way of breaking that is named; then on a real store through
``Recorder.compact``."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from chatledger import Ack, BackendUnavailable, History, Message, open_store, summary_through, user
from chatledger._context import summary_entry
from chatledger.testing import HistoryReport, Recorder, SummaryRecord, Window, check_history
from tests.testing._histories import Script, message

Entry = tuple[int, str] | tuple[int, str, int]  # (seq, text) or (seq, summary text, through)


def _summary(script: Script, worker: int, at: float, folded: Sequence[int], *,
             stored_at: int | None, base: int = 0, text: str | None = None,
             took: float = 1.0, deduplicated: bool = False,
             error: Exception | None = None) -> SummaryRecord:
    """A compaction that ran from ``at``: its summarizer was given the summary at
    ``base`` (if any) and the messages at ``folded``."""
    given = ([dataclasses.replace(summary_entry("base", 1), seq=base)] if base else [])
    given += [message(f"m{seq}", seq) for seq in folded]
    ack = None if stored_at is None else Ack(stored_at, stored_at, stored_at, deduplicated,
                                             ledger="L1")
    return script.recorder(worker).record_summary(
        "s", given, text=text or f"summary at {stored_at}", start=at, end=at + took, ack=ack,
        error=error)


def _ledger(entries: Sequence[Entry], *, first_seq: int | None = None) -> History:
    """The final read: messages ``m<seq>`` and summary entries at their seqs."""
    messages: list[Message] = []
    for entry in entries:
        if len(entry) == 3:
            seq, text, through = entry
            messages.append(dataclasses.replace(summary_entry(text, through), seq=seq))
        else:
            messages.append(message(entry[1], entry[0]))
    seqs = [m.seq or 0 for m in messages]
    return History(messages=messages, version=max(seqs), first_seq=first_seq or min(seqs),
                   ledger="L1")


def _appends(script: Script, seqs: range, at: float = 0.0) -> None:
    for seq in seqs:
        script.ack(9, at + seq / 100, [f"m{seq}"], seq, took=0.001)


def _check(script: Script, ledger: History) -> HistoryReport:
    return check_history(script.records, {"s": ledger})  # type: ignore[arg-type]


def _two_summaries() -> Script:
    """m1..m10; a summary of 1..6 stored at 11; m12; a summary of 7..9 built on it at 13."""
    script = Script()
    _appends(script, range(1, 11))
    _summary(script, 0, 1.0, range(1, 7), stored_at=11)
    script.ack(9, 3.0, ["m12"], 12)
    _summary(script, 1, 4.0, range(7, 10), stored_at=13, base=11)
    return script


GOOD = [*((s, f"m{s}") for s in range(1, 11)), (11, "summary at 11", 6), (12, "m12"),
        (13, "summary at 13", 9)]


def test_a_chain_of_summaries_and_the_window_pass() -> None:
    report = _check(_two_summaries(), _ledger(GOOD))
    assert report.ok, str(report)
    assert (report.figures.summaries, report.figures.summaries_stored) == (2, 2)
    assert "summaries: 2 written, 2 stored" in str(report)


def test_a_trim_up_to_the_latest_cursor_passes() -> None:
    kept = [e for e in GOOD if e[0] >= 10]
    assert _check(_two_summaries(), _ledger(kept, first_seq=10)).ok


def test_dead_summaries_and_unstored_compactions_do_not_count() -> None:
    script = _two_summaries()
    _summary(script, 2, 1.2, range(1, 9), stored_at=None)  # another landed first: stored none
    _summary(script, 3, 4.1, range(7, 10), stored_at=13, base=11, deduplicated=True)
    assert _check(script, _ledger(GOOD)).ok


def test_a_message_appended_while_the_summarizer_ran_and_covered_is_uncovered() -> None:
    """The race other memories lose messages to: the summary claims seqs 7 and 8,
    which arrived after its summarizer read the session."""
    script = Script()
    _appends(script, range(1, 7))
    record = _summary(script, 0, 1.0, range(1, 7), stored_at=9, took=2.0)
    script.ack(5, 1.5, ["m7", "m8"], 7)
    report = _check(script, _ledger([*((s, f"m{s}") for s in range(1, 9)),
                                     (9, "summary at 9", 8)]))
    assert report.counts == {"uncovered": 1}, str(report)
    (uncovered,) = report.of_kind("uncovered")
    assert uncovered.seqs == (7, 8)
    assert "lost between summaries" in uncovered.detail
    assert "appended while it was being written (worker 5's op #0)" in uncovered.detail
    assert uncovered.operations[0] is record
    assert uncovered.operations[1].texts == ("m7", "m8")  # type: ignore[union-attr]
    assert "uncovered (1): a message in no summary of the live chain" in str(report)


def test_a_gap_between_two_summaries_is_uncovered() -> None:
    script = Script()
    _appends(script, range(1, 11))
    _summary(script, 0, 1.0, range(1, 7), stored_at=11)
    _summary(script, 1, 3.0, range(8, 10), stored_at=12, base=11)  # seq 7 was never given
    report = _check(script, _ledger([*((s, f"m{s}") for s in range(1, 11)),
                                     (11, "a", 6), (12, "b", 9)]))
    (uncovered,) = report.of_kind("uncovered")
    assert uncovered.seqs == (7,) and "covers seqs 7-9" in uncovered.detail
    assert "while it was being written" not in uncovered.detail


def test_a_message_in_two_summaries_or_in_one_and_the_window_is_covered_twice() -> None:
    script = Script()
    _appends(script, range(1, 11))
    _summary(script, 0, 1.0, range(1, 7), stored_at=11)
    _summary(script, 1, 3.0, range(5, 10), stored_at=12, base=11)  # 5 and 6 again
    report = _check(script, _ledger([*((s, f"m{s}") for s in range(1, 11)),
                                     (11, "a", 6), (12, "b", 8)]))  # 9 folded, yet in window
    assert report.counts == {"covered_twice": 1}, str(report)
    assert report.of_kind("covered_twice")[0].seqs == (5, 6, 9)


def test_a_summary_covering_its_own_seq_or_later_is_named_without_records() -> None:
    report = check_history([], {"s": _ledger([(1, "m1"), (2, "m2"), (3, "ahead", 4),
                                              (4, "m4")])})
    (ahead,) = report.of_kind("summary_cursor")
    assert ahead.seqs == (3,) and "did not exist when it was written" in ahead.detail


def test_cursors_must_grow_along_the_chain() -> None:
    script = Script()
    _appends(script, range(1, 11))
    _summary(script, 0, 1.0, range(1, 7), stored_at=11)
    _summary(script, 1, 3.0, range(1, 5), stored_at=12, base=11)
    report = _check(script, _ledger([*((s, f"m{s}") for s in range(1, 11)),
                                     (11, "a", 6), (12, "b", 4)]))
    in_order, along = report.of_kind("summary_cursor")  # in the ledger, along the chain
    assert in_order.seqs == (11, 12) and "not past the summary before it" in in_order.detail
    assert along.seqs == (11,) and "cursors must grow along the chain" in along.detail


def test_a_summary_nobody_recorded_cannot_be_vouched_for() -> None:
    script = Script()
    _appends(script, range(1, 7))
    _summary(script, 0, 1.0, range(1, 3), stored_at=7)
    report = _check(script, _ledger([*((s, f"m{s}") for s in range(1, 7)),
                                     (7, "summary at 7", 2), (8, "by someone else", 4)]))
    (unknown,) = report.of_kind("uncovered")
    assert unknown.seqs == (8,) and "no record says" in unknown.detail


def test_a_summary_built_on_a_missing_summary_breaks_the_chain() -> None:
    script = Script()
    _appends(script, range(1, 7))
    _summary(script, 0, 1.0, range(4, 6), stored_at=7, base=3)  # seq 3 is a message
    report = _check(script, _ledger([*((s, f"m{s}") for s in range(1, 7)),
                                     (7, "summary at 7", 5)]))
    (broken,) = report.of_kind("uncovered")
    assert broken.seqs == (3,) and "is not in the ledger" in broken.detail


def test_a_trim_past_the_latest_cursor_loses_messages() -> None:
    script = Script()
    _appends(script, range(1, 11))
    _summary(script, 0, 1.0, range(1, 7), stored_at=11)
    report = _check(script, _ledger([(9, "m9"), (10, "m10"), (11, "s", 6)], first_seq=9))
    (trimmed,) = report.of_kind("uncovered")
    assert trimmed.seqs == (7, 8) and "trimmed away past" in trimmed.detail


def test_a_stored_summary_missing_from_the_ledger_is_lost() -> None:
    script = Script()
    _appends(script, range(1, 7))
    _summary(script, 0, 1.0, range(1, 4), stored_at=7)
    report = _check(script, _ledger([*((s, f"m{s}") for s in range(1, 7)), (8, "m8")]))
    (lost,) = report.of_kind("lost")
    assert lost.seqs == (7,) and "summary stored at seq 7 is not there" in lost.detail


def test_an_unanswered_compaction_is_matched_by_its_text() -> None:
    script = Script()
    _appends(script, range(1, 7))
    record = _summary(script, 0, 1.0, range(1, 4), stored_at=None, text="the one",
                      error=BackendUnavailable("timed out"))
    assert record.outcome == "indeterminate" and "indeterminate" in str(record)
    ledger = _ledger([*((s, f"m{s}") for s in range(1, 7)), (7, "the one", 3)])
    assert _check(script, ledger).ok
    wrong = _ledger([*((s, f"m{s}") for s in range(1, 7)), (7, "another", 3)])
    assert _check(script, wrong).counts == {"uncovered": 1}


def test_summary_records_describe_themselves() -> None:
    script = Script()
    stored = _summary(script, 0, 1.0, range(1, 4), stored_at=9, base=5)
    again = _summary(script, 1, 1.0, range(1, 4), stored_at=9, deduplicated=True)
    nothing = _summary(script, 2, 1.0, [], stored_at=None)
    assert "summary of seqs 1-3 (3 messages) on the summary at seq 5 stored it at seq 9" \
        in str(stored)
    assert (stored.stored_at, again.stored_at, nothing.stored_at) == (9, None, None)
    assert "found it stored already at seq 9" in str(again)
    assert "summary of nothing stored nothing" in str(nothing)


def test_only_a_final_read_of_everything_is_checked_for_summaries() -> None:
    script = Script()
    _appends(script, range(1, 5))
    script.read(0, 5.0, [(3, "m3"), (4, "m4")], window=Window(last=2))
    _summary(script, 0, 1.0, [1], stored_at=None)
    assert _check(script, _ledger([(s, f"m{s}") for s in range(1, 5)])).ok


def _folding(prefix: str) -> object:
    def summarize(messages: list[Message]) -> str:
        return f"{prefix}: " + ", ".join(m.text for m in messages)
    return summarize


def test_recorder_compact_on_a_real_store_passes_and_catches_a_forged_chain() -> None:
    recorder = Recorder(0)
    with open_store(f"memory://{uuid.uuid4().hex}") as store:
        session = store.session("s")
        for turn in range(30):
            recorder.append(session, [user(f"q{turn}"), user(f"a{turn}")])
            recorder.compact(session, _folding("s"), trigger_tokens=60, keep_tokens=20)
        assert recorder.compact(session, _folding("s"), trigger_tokens=10**6,
                                keep_tokens=1) is None  # under the trigger: nothing recorded
        ledger = session.read()
    summaries = [r for r in recorder.records if isinstance(r, SummaryRecord)]
    assert len(summaries) >= 3 and all(r.stored_at for r in summaries)
    assert summaries[1].base == summaries[0].stored_at
    report = check_history(recorder.records, {"s": ledger})
    assert report.ok, str(report)
    # The latest summary claims one more message than its summarizer was given.
    latest = max(m.seq or 0 for m in ledger if summary_through(m) is not None)
    forged = [dataclasses.replace(m, metadata={"chatledger.summary": {
        "through_seq": (summary_through(m) or 0) + 1}}) if m.seq == latest else m
        for m in ledger]
    bad = check_history(recorder.records, {"s": dataclasses.replace(ledger, messages=forged)})
    assert bad.counts == {"uncovered": 1}, str(bad)


def test_recorder_compact_with_a_chat_model_and_a_failing_summarizer() -> None:
    recorder = Recorder(0)
    with open_store(f"memory://{uuid.uuid4().hex}") as store:
        session = store.session("s")
        session.append([user("x" * 400) for _ in range(4)])
        model = FakeListChatModel(responses=["what the model said"])
        ack = recorder.compact(session, model, trigger_tokens=10, keep_tokens=1)
        assert ack is not None
        assert session.read(with_summary=True).summary.text == "what the model said"  # type: ignore[union-attr]
        session.append([user("y" * 400) for _ in range(4)])
        with pytest.raises(TypeError, match="must return a str"):
            recorder.compact(session, lambda ms: 42, trigger_tokens=10, keep_tokens=1)
        with pytest.raises(ValueError, match="trigger_tokens"):  # before any summarizer ran
            recorder.compact(session, model, trigger_tokens=-1, keep_tokens=1)
    model_record, failed = recorder.records
    assert isinstance(model_record, SummaryRecord) and model_record.text == "what the model said"
    assert isinstance(failed, SummaryRecord) and failed.outcome == "indeterminate"
    assert failed.error is not None and "TypeError" in failed.error


def test_a_chain_through_a_summary_trimmed_away_is_followed_by_its_record() -> None:
    script = Script()
    _appends(script, range(1, 11))
    _summary(script, 0, 1.0, range(1, 7), stored_at=11)
    _appends(script, range(12, 20), at=2.0)
    _summary(script, 1, 4.0, [7, 8, 9, 10, 12, 13, 14, 15], stored_at=20, base=11)
    kept = [(16, "m16"), (17, "m17"), (18, "m18"), (19, "m19"), (20, "latest", 15)]
    assert _check(script, _ledger(kept, first_seq=16)).ok
    script.recorders[0].records.clear()  # the record of the trimmed summary gone
    (unknown,) = _check(script, _ledger(kept, first_seq=16)).of_kind("uncovered")
    assert unknown.seqs == (11,) and "no record says" in unknown.detail


def test_a_cursor_moving_back_is_named_without_records() -> None:
    report = check_history([], {"s": _ledger([(1, "m1"), (2, "m2"), (3, "m3"), (4, "a", 2),
                                              (5, "b", 1), (6, "c", 3)])})
    (back,) = report.of_kind("summary_cursor")
    assert back.seqs == (4, 5) and "cursors must grow" in back.detail
