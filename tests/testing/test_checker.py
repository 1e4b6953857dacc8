"""check_history on hand-made histories: every anomaly kind is found, with the
session, seqs and operations involved, and correct histories pass, including
the tricky ones (windows, trimming, expiry, overlapping and unanswered appends)."""

from __future__ import annotations

import pickle
from dataclasses import replace

from chatledger import History
from chatledger.testing import HistoryReport, Window, check_history
from tests.testing._histories import Script, message, numbered


def _check(script: Script, **options: object) -> HistoryReport:
    return check_history(script.records, **options)  # type: ignore[arg-type]


def _two_workers() -> Script:
    script = Script()
    script.ack(0, 0.0, ["w0 q", "w0 a"], 1)
    script.ack(1, 1.0, ["w1 q", "w1 a"], 3)
    return script


def test_a_correct_history_passes() -> None:
    script = _two_workers()
    script.read(0, 2.0, numbered("w0 q", "w0 a", "w1 q", "w1 a"))
    script.read(1, 3.0, numbered("w1 q", "w1 a", start=3), version=4,
                window=Window(last=2))
    report = _check(script)
    assert report.ok and report.counts == {}
    assert str(report).startswith("history check: ok, no anomalies")
    assert report.figures.appends_acknowledged == 2 and report.figures.reads == 2


def test_a_read_overlapping_an_append_may_miss_it() -> None:
    script = Script()
    script.ack(0, 0.0, ["q", "a"], 1, took=2.0)
    script.read(1, 1.0, [], version=0, ledger=None)  # began before the Ack came
    assert _check(script).ok


def test_an_acknowledged_message_missing_from_a_later_read_is_lost() -> None:
    script = _two_workers()
    read = script.read(0, 2.0, numbered("w0 q", "w0 a", "x", "y"), version=4)
    report = _check(script)
    assert report.counts == {"lost": 1}
    (lost,) = report.of_kind("lost")
    assert (lost.session, lost.seqs) == ("s", (3,))
    assert lost.operations[1] is read and lost.operations[0].texts == ("w1 q", "w1 a")
    assert report.figures.appends_lost == 1


def test_a_lower_version_than_acknowledged_loses_the_tail() -> None:
    script = _two_workers()
    script.read(0, 2.0, numbered("w0 q", "w0 a"))
    report = _check(script)
    assert report.of_kind("lost")[0].seqs == (3,)
    assert report.counts == {"lost": 1, "read_backwards": 1}
    assert report.figures.reads_backwards == 1


def test_the_final_state_is_checked_too() -> None:
    script = _two_workers()
    held = History([message("w0 q", 1), message("w0 a", 2)], version=2, first_seq=1,
                   ledger="L1")
    report = check_history(script.records, {"s": held})
    assert report.counts == {"lost": 1, "read_backwards": 1}
    assert "final read (all) saw version 2" in str(report)
    # A plain list of messages (a store without ledgers) is a final read too.
    foreign = Script()
    foreign.foreign_ack(0, 0.0, ["q", "a"])
    assert check_history(foreign.records, {"s": [message("q")]}).counts == {"lost": 1}


def test_a_trimmed_ledger_is_not_loss() -> None:
    script = _two_workers()
    script.read(0, 2.0, numbered("w1 q", "w1 a", start=3), version=4, first_seq=3)
    script.read(1, 3.0, numbered("w1 a", start=4), version=4, first_seq=4)
    assert _check(script).ok


def test_a_window_vouches_only_for_what_it_asked() -> None:
    script = _two_workers()
    script.read(0, 2.0, numbered("w0 a", start=2), version=4, window=Window(after=1, limit=1))
    assert _check(script).ok
    script.read(0, 3.0, numbered("w0 a", "x", start=2), version=4,
                window=Window(after=1, limit=2))
    assert _check(script).of_kind("lost")[0].seqs == (3,)


def test_an_acknowledged_message_read_elsewhere_is_misplaced() -> None:
    script = _two_workers()
    script.read(0, 2.0, numbered("w0 q", "w0 a", "x", "w1 q", "w1 a"))
    report = _check(script)
    assert report.counts == {"misplaced": 1}
    assert report.anomalies[0].seqs == (3, 4)


def test_one_id_at_two_seqs_is_a_duplicate() -> None:
    script = _two_workers()
    script.read(0, 2.0, numbered("w0 q", "w0 a", "w1 q", "w1 a", "w0 q", "w0 a"))
    report = _check(script)
    assert report.counts == {"duplicate": 2}
    assert {a.seqs for a in report.anomalies} == {(1, 5), (2, 6)}
    assert report.figures.appends_duplicated == 1


def test_one_text_appended_once_stored_under_two_ids_is_a_duplicate() -> None:
    script = Script()
    script.foreign_ack(0, 0.0, ["hello"])
    read = script.recorder(1).record_read(
        "s", [message("hello"), replace(message("hello"), id="other-id")], start=1.0, end=1.5)
    report = _check(script)
    assert report.counts == {"duplicate": 1}
    assert report.anomalies[0].operations[-1] is read
    assert "stored 2 times, appended 1" in str(report)


def test_a_text_appended_twice_may_be_stored_twice() -> None:
    script = Script()
    script.foreign_ack(0, 0.0, ["hi"], with_id=False)
    script.foreign_ack(0, 1.0, ["hi"], with_id=False)
    script.read(1, 2.0, numbered("hi", "hi"), with_ids=False, ledger=None)
    assert _check(script).ok
    script.read(1, 3.0, numbered("hi", "hi", "hi"), with_ids=False, ledger=None)
    assert _check(script).counts == {"duplicate": 1}


def test_a_batch_split_by_another_is_torn() -> None:
    script = Script()
    script.foreign_ack(0, 0.0, ["w0 q", "w0 a"])
    script.foreign_ack(1, 0.0, ["w1 q", "w1 a"])
    script.read(0, 1.0, numbered("w0 q", "w1 q", "w0 a", "w1 a"), ledger=None)
    report = _check(script)
    assert report.counts == {"torn": 2}
    assert {a.seqs for a in report.anomalies} == {(1, 3), (2, 4)}
    assert report.figures.appends_torn == 2


def test_a_batch_stored_backwards_is_torn() -> None:
    script = Script()
    script.foreign_ack(0, 0.0, ["q", "a"])
    script.read(0, 1.0, numbered("a", "q"), ledger=None)
    assert _check(script).of_kind("torn")[0].seqs == (2, 1)


def test_a_batch_cut_by_the_window_is_not_torn() -> None:
    script = Script()
    script.ack(0, 0.0, ["q", "a"], 1)
    script.read(0, 1.0, numbered("a", start=2), version=2, window=Window(last=1))
    assert _check(script).ok


def test_an_unanswered_append_is_stored_once_or_not_at_all() -> None:
    script = Script()
    script.unanswered(0, 0.0, ["q", "a"])
    script.read(0, 1.0, [], version=0, ledger=None)
    script.read(0, 2.0, numbered("q", "a"))
    report = _check(script)
    assert report.ok
    assert report.figures.appends_indeterminate == 1


def test_an_unanswered_append_stored_twice_or_in_part_is_caught() -> None:
    script = Script()
    script.unanswered(0, 0.0, ["q", "a"])
    script.read(0, 1.0, numbered("q", "a", "q", "a"))
    assert _check(script).counts == {"duplicate": 2}
    partial = Script()
    partial.unanswered(0, 0.0, ["q", "a"])
    partial.ack(1, 0.0, ["other"], 2)
    partial.read(0, 1.0, numbered("q", "other"))
    assert _check(partial).counts == {"torn": 1}


def test_a_workers_batches_out_of_its_order_are_reordered() -> None:
    script = Script()
    script.ack(0, 0.0, ["first"], 2)
    script.ack(0, 1.0, ["second"], 1)
    report = _check(script)
    assert report.counts == {"reordered": 1}
    assert report.anomalies[0].seqs == (2, 1)
    assert "worker 0's op #0 is stored after its op #1" in str(report)


def test_a_store_without_acks_is_checked_for_order_on_reads() -> None:
    script = Script()
    script.foreign_ack(0, 0.0, ["first"])
    script.foreign_ack(0, 1.0, ["second"])
    script.read(1, 2.0, numbered("second", "first"), ledger=None)
    assert _check(script).counts == {"reordered": 1}


def test_a_retry_deduplicated_to_its_original_seqs_is_no_reorder() -> None:
    script = Script()
    script.ack(0, 0.0, ["first"], 1)
    script.ack(0, 1.0, ["second"], 2)
    script.ack(0, 2.0, ["first"], 1, deduplicated=True, version=2)
    script.read(0, 3.0, numbered("first", "second"))
    assert _check(script).ok


def test_a_read_below_a_version_seen_before_goes_backwards() -> None:
    script = Script()
    script.ack(0, 0.0, ["a", "b", "c"], 1)
    script.read(1, 1.0, numbered("c", start=3), window=Window(last=1))
    script.read(2, 2.0, numbered("b", start=2), window=Window(last=1), version=2)
    report = _check(script)
    assert report.counts == {"lost": 1, "read_backwards": 1}
    (backwards,) = report.of_kind("read_backwards")
    assert backwards.seqs == (2, 3)


def test_a_message_of_another_session_is_reported() -> None:
    script = Script()
    script.ack(0, 0.0, ["mine"], 1, session="a")
    script.ack(1, 0.0, ["theirs"], 1, session="b", ledger="L2")
    script.read(0, 1.0, [(1, "mine"), (2, "theirs")], session="a")
    report = _check(script)
    assert report.counts == {"other_session": 1}
    (other,) = report.anomalies
    assert (other.session, other.seqs) == ("a", (2,))
    assert "'theirs' was appended to 'b'" in str(report)


def test_a_ledger_replaced_or_gone_is_reported() -> None:
    script = _two_workers()
    script.read(0, 2.0, numbered("new"), ledger="L9")
    script.read(0, 3.0, [], version=0, ledger=None)
    report = _check(script)
    assert report.counts == {"ledger_changed": 2}
    assert "ledger L1 held 2 acknowledged append(s); a later operation found ledger L9" \
        in str(report)
    assert "found no session" in str(report)
    assert report.figures.appends_lost == 2


def test_expiry_after_the_ttl_is_not_loss_but_before_it_is() -> None:
    script = _two_workers()  # the last write started at 1.0
    script.read(0, 20.0, [], version=0, ledger=None)
    assert check_history(script.records, ttl=10.0).ok
    assert check_history(script.records, ttl=60.0).counts == {"ledger_changed": 1}
    assert check_history(script.records).counts == {"ledger_changed": 1}


def test_a_refused_append_that_was_stored_is_a_phantom() -> None:
    script = Script()
    refused = script.refused(0, 0.0, ["no"])
    script.read(0, 1.0, numbered("no"))
    report = _check(script)
    assert report.counts == {"phantom": 1}
    assert report.anomalies[0].operations[0] is refused
    assert report.figures.appends_failed == 1
    retried = Script()  # the same ids appended again, and acknowledged: no phantom
    retried.refused(0, 0.0, ["no"])
    retried.ack(0, 1.0, ["no"], 1)
    retried.read(0, 2.0, numbered("no"))
    assert _check(retried).ok


def test_figures_count_and_time_the_run() -> None:
    script = Script()
    script.ack(0, 0.0, ["a"], 1, took=0.1)
    script.unanswered(1, 1.0, ["b"])       # 1.0 .. 1.5
    script.unanswered(2, 1.2, ["c"])       # 1.2 .. 1.7: one outage, 0.7 s
    script.unanswered(0, 3.0, ["d"])       # another, 0.5 s
    script.read(1, 3.5, numbered("a"))    # 3.5 .. 4.0
    figures = _check(script).figures
    assert (figures.appends, figures.appends_acknowledged, figures.appends_indeterminate) \
        == (4, 1, 3)
    assert abs(figures.longest_unavailability - 0.7) < 1e-9
    assert figures.duration == 4.0
    assert figures.appends_per_second == 0.25 and figures.reads_per_second == 0.25
    assert abs(figures.append_latency.p50 - 0.1) < 1e-9 and figures.read_latency.max == 0.5
    assert "longest unavailability 0.700 s" in str(_check(script))


def test_many_anomalies_of_a_kind_are_summed_up() -> None:
    script = Script()
    for n in range(12):
        script.foreign_ack(n, 0.0, [f"q{n}", f"a{n}"])
    texts = [f"q{n}" for n in range(12)] + [f"a{n}" for n in range(12)]
    script.read(0, 1.0, numbered(*texts), ledger=None)
    text = str(_check(script))
    assert "torn (12)" in text and "... and 2 more" in text


def test_reports_and_records_pickle() -> None:
    script = _two_workers()
    script.read(0, 2.0, numbered("w0 q"))
    report = _check(script)
    assert pickle.loads(pickle.dumps(report)) == report
    assert pickle.loads(pickle.dumps(script.records)) == script.records


def test_a_store_without_seqs_is_checked_for_loss_only_on_whole_reads() -> None:
    script = Script()
    script.foreign_ack(0, 0.0, ["q", "a"])
    script.read(0, 1.0, numbered("x", start=3), first_seq=3, ledger=None)  # trimmed
    assert _check(script).ok
    whole = Script()
    whole.foreign_ack(0, 0.0, ["q", "a"])
    whole.read(0, 1.0, numbered("q"), ledger=None)
    (lost,) = _check(whole).anomalies
    assert str(lost).startswith("lost: session 's': 1 of the batch's messages are missing")


def test_a_final_list_of_messages_after_ledgered_appends_is_no_ledger_change() -> None:
    script = _two_workers()  # appends acknowledged on ledger L1
    held = [message("w0 q", 1), message("w0 a", 2), message("w1 q", 3), message("w1 a", 4)]
    assert check_history(script.records, {"s": held}).ok  # a list names no ledger: not "gone"
    assert check_history(script.records, {"s": held[:3]}).counts == {"lost": 1,
                                                                      "read_backwards": 1}
    assert check_history(script.records, {"s": []}).counts == {"ledger_changed": 1}


def test_a_read_through_another_api_is_checked_without_a_ledger() -> None:
    # Appends through the store (Acks name the ledger), reads through read_via (no ledger):
    # such a read once "found no session" and every append was reported lost.
    script = _two_workers()
    script.read(0, 2.0, numbered("w0 q", "w0 a", "w1 q", "w1 a"), ledger=None)
    assert _check(script).ok
    # Its seqs are its own numbering (from 1, whatever was trimmed or summarized): they
    # say nothing of where the Acks put a message.
    trimmed = _two_workers()
    trimmed.read(1, 3.0, numbered("w1 q", "w1 a"), ledger=None)  # the first batch trimmed
    assert _check(trimmed).ok
    script.read(1, 4.0, [], version=0, ledger=None)  # nothing there: the session is gone
    assert "ledger_changed" in _check(script).counts


def test_a_batch_stored_without_its_tail_is_torn() -> None:
    script = Script()
    script.unanswered(0, 0.0, ["x1", "x2"])
    script.read(0, 1.0, numbered("x1"))  # its window reaches the ledger's end: x2 is not there
    report = _check(script)
    assert report.counts == {"torn": 1} and report.of_kind("torn")[0].seqs == (1,)
    cut = Script()
    cut.unanswered(0, 0.0, ["x1", "x2"])
    cut.read(0, 1.0, numbered("x1"), version=2, window=Window(after=0, limit=1))
    assert _check(cut).ok  # a window that stops short of the end cannot tell


def test_an_unanswered_batch_sharing_a_message_with_another_is_not_called_torn() -> None:
    # What the read shows of it another append wrote: it may never have been stored.
    for first, batch in ((["yes"], ["yes", "no"]), (["x1"], ["x1", "x2"])):
        script = Script()
        script.foreign_ack(0, 0.0, first, with_id=first != ["yes"])
        script.unanswered(0, 1.0, batch, with_id=first != ["yes"])
        script.read(0, 2.0, numbered(first[0]), with_ids=first != ["yes"], ledger=None)
        assert _check(script).ok, batch
