"""The turn-cost measurement shared by chatledger bench and benchmarks/turn_cost.py."""

from __future__ import annotations

from chatledger import open_store
from chatledger._turn_cost import Row, conversation, fill, measure, session_turn


def test_a_row_of_one_sample_has_its_p90_at_the_median() -> None:
    assert Row("x", 10, [3_000]).p90_us == Row("x", 10, [3_000]).median_us == 3.0


def test_measure_times_every_length_after_the_warmup() -> None:
    with open_store("memory://") as store:
        sessions = {n: store.session(f"len-{n}") for n in (2, 30)}
        for n, session in sessions.items():
            fill(session, conversation(n))
        rounds: list[int] = []
        rows = measure("memory", {n: session_turn(s) for n, s in sessions.items()},
                       timed=4, warmup=2, progress=lambda: rounds.append(1))
        assert [(r.length, len(r.samples)) for r in rows] == [(2, 4), (30, 4)]
        assert len(rounds) == 6
        assert store.session("len-30").info().version == 30 + 2 * 6  # type: ignore[union-attr]
