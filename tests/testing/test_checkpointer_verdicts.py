"""The verdicts of check_checkpointer on thread histories written by hand, including
ones no saver under test produces (an item applied twice, a thread never stored)."""

from __future__ import annotations

from chatledger.testing import CheckpointerReport, Turn
from chatledger.testing._lineage import Stored, ThreadReading, duplicates, forks, lost


def _turn(process: int, outcome: str = "acknowledged") -> Turn:
    question = f"p{process} r0 question"
    return Turn(process, 0, "sync", "t", True, outcome,  # type: ignore[arg-type]
                question, question.replace("question", "answer"))


def _reading(*checkpoints: Stored, latest: Stored | None = None) -> ThreadReading:
    return ThreadReading("t", "sync", latest, checkpoints)


P0 = ("p0 r0 question", "p0 r0 answer")
P1 = ("p1 r0 question", "p1 r0 answer")


def test_a_linear_thread_has_no_fork_no_loss_no_duplicate() -> None:
    first, second = Stored("a", None, P0[:1]), Stored("b", "a", P0)
    reading = _reading(second, first, latest=second)
    assert forks(reading) == [] and duplicates(reading) == []
    assert lost(reading, [_turn(0)]) == []


def test_a_forked_thread_names_the_parent_its_children_and_where_the_lost_turn_lives() -> None:
    root = Stored("a", None, ())
    left, right = Stored("b", "a", P0), Stored("c", "a", P1)
    reading = _reading(right, left, root, latest=right)
    [fork] = forks(reading)
    assert (fork.parent, fork.children) == ("a", ("b", "c"))
    assert str(fork) == "thread 't' (sync): checkpoint a has 2 children: b, c"
    [missing] = lost(reading, [_turn(0), _turn(1), _turn(2, "refused")])
    assert (missing.turn.process, missing.latest, missing.missing, missing.held_by) == (
        0, "c", P0, ("b",))
    assert str(missing) == (
        "process 0 round 0 (sync, new thread 't') acknowledged: ['p0 r0 question', "
        "'p0 r0 answer'] not in latest checkpoint c; held only by b")


def test_two_first_checkpoints_are_a_fork_of_the_threads_start() -> None:
    reading = _reading(Stored("b", None, P1), Stored("a", None, P0), latest=Stored("b", None, P1))
    [fork] = forks(reading)
    assert fork.parent is None and fork.children == ("a", "b")
    assert str(fork) == "thread 't' (sync) has 2 first checkpoints (no parent): a, b"


def test_an_acknowledged_turn_on_a_thread_never_stored_is_lost_everywhere() -> None:
    [missing] = lost(_reading(), [_turn(0)])
    assert missing.latest is None and missing.held_by == ()
    assert str(missing).endswith("not in any checkpoint (none); held by no checkpoint")
    assert duplicates(_reading()) == []


def test_an_item_applied_twice_is_a_duplicate() -> None:
    latest = Stored("b", "a", (*P0, "p0 r0 answer"))
    [twice] = duplicates(_reading(latest, latest=latest))
    assert (twice.item, twice.count, twice.latest) == ("p0 r0 answer", 2, "b")
    assert str(twice) == "thread 't' (sync): 'p0 r0 answer' appears 2 times in latest checkpoint b"
    assert lost(_reading(latest, latest=latest), [_turn(0)]) == []  # present, if twice


def _report(**findings: object) -> CheckpointerReport:
    fields: dict[str, object] = {"processes": 2, "turns": (), "forks": (), "lost": (),
                                 "duplicates": (), "failures": (), "threads": 1,
                                 "checkpoints": 0, "seconds": 1.0}
    return CheckpointerReport(**{**fields, **findings})  # type: ignore[arg-type]


def test_the_summary_gives_the_verdict_figures_per_mode_and_every_finding() -> None:
    holders = tuple("abcde")
    turns = (_turn(0), _turn(1, "refused"), _turn(2, "error"))
    reading = _reading(*(Stored(h, None, P0) for h in holders), latest=Stored("z", "e", ()))
    report = _report(turns=turns, lost=tuple(lost(reading, turns)),
                     forks=tuple(forks(reading)) * 12)
    text = str(report)
    assert not report.ok and report.errors == turns[2:] and report.refused == turns[1:2]
    assert text.splitlines()[0] == (
        "checkpointer check: NOT OK: 12 fork(s), 1 lost acknowledged turn(s), 1 error(s)")
    assert "3 turns by 2 processes on 1 threads in 1.0 s: 1 acknowledged, 1 refused, 1 errors"\
        in text
    assert "  sync           3     1       1      1    12    1   0" in text
    assert "held only by a, b, c and 2 more" in text
    assert "  ... and 2 more" in text  # past ten forks


def test_a_report_with_nothing_found_is_ok() -> None:
    report = _report(turns=(_turn(0), _turn(1, "refused")))
    assert report.ok and report.acknowledged == (report.turns[0],)
    assert report.summary().splitlines()[0] == (
        "checkpointer check: ok (no fork, no lost acknowledged turn, no duplicate)")
