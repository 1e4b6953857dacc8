"""One table of appends, one outcome each: the plan (contract.plan_append) and every backend.

Each row is a session's state (built by appends), a batch, and what appending
the batch must do: an Ack (new or deduplicated) or a refusal. The same table
runs through the pure plan and through each backend's own append (the
transactional steps on memory, SQLite and PostgreSQL, DynamoDB's conditional
writes, the Redis ``APPEND`` script, which states the plan again on the
server): where a backend and the plan disagree, the test names the row.

Each row runs twice on a backend: appended by the store that built the
state, and by a second store that has never seen the session (a backend that
remembers what it wrote, as PostgreSQL does to send an append in one round
trip, must find out that it guessed wrong, and still do what the plan says).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest

from chatledger import Ack, ConflictError, InvalidMessage, MemoryLostError, SessionUserError
from chatledger._backends.contract import Batch, RawInfo, StoredId, plan_append

LEDGER = "L"  # in a row: the ledger of the session the row built
Outcome = tuple[int, int, bool] | type[Exception]  # (first_seq, last_seq, deduplicated)


@dataclass(frozen=True)
class Row:
    name: str
    built: list[tuple[list[str], str | None]]  # the appends that build the state: (ids, user)
    ids: list[str]
    outcome: Outcome
    expect: int | None = None
    ledger: str | None = None  # LEDGER: the built ledger's id; any other: a ledger never seen
    strict: bool = True
    user: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


TAGGED = [(["a", "b"], "u")]  # a session of user u holding one batch: a, b
UNTAGGED = [(["a", "b"], None)]

ROWS = [
    Row("a first append", [], ["a"], (1, 1, False)),
    Row("a first append, expecting 0", [], ["a"], (1, 1, False), expect=0),
    Row("a first append, expecting 1", [], ["a"], ConflictError, expect=1),
    Row("a first append tagged", [], ["a"], (1, 1, False), user="u"),
    Row("a first append aimed at a ledger", [], ["a"], MemoryLostError, ledger="gone"),
    Row("a first append aimed at a ledger, not strict", [], ["a"], MemoryLostError,
        ledger="gone", strict=False),
    Row("a new batch", TAGGED, ["c", "d"], (3, 4, False)),
    Row("a new batch naming its user", TAGGED, ["c"], (3, 3, False), user="u"),
    Row("a new batch expecting the version", TAGGED, ["c"], (3, 3, False), expect=2),
    Row("a new batch expecting another version", TAGGED, ["c"], ConflictError, expect=1),
    Row("a new batch on its ledger", TAGGED, ["c"], (3, 3, False), ledger=LEDGER),
    Row("a new batch on another ledger", TAGGED, ["c"], MemoryLostError, ledger="gone"),
    Row("a new batch on another ledger, not strict", TAGGED, ["c"], MemoryLostError,
        ledger="gone", strict=False),
    Row("a new batch of another user", TAGGED, ["c"], SessionUserError, user="v"),
    Row("a user on an untagged session", UNTAGGED, ["c"], SessionUserError, user="u"),
    Row("a retry", TAGGED, ["a", "b"], (1, 2, True)),
    Row("a retry of the second batch", [*TAGGED, (["c"], None)], ["c"], (3, 3, True)),
    Row("a retry expecting an old version", TAGGED, ["a", "b"], (1, 2, True), expect=0),
    Row("a retry on its ledger", TAGGED, ["a", "b"], (1, 2, True), ledger=LEDGER),
    Row("a retry on another ledger", TAGGED, ["a", "b"], MemoryLostError, ledger="gone"),
    Row("a retry on another ledger, not strict", TAGGED, ["a", "b"], (1, 2, True),
        ledger="gone", strict=False),
    Row("a retry of another user", TAGGED, ["a", "b"], SessionUserError, user="v"),
    Row("part of a batch", TAGGED, ["a"], InvalidMessage),
    Row("a batch in another order", TAGGED, ["b", "a"], InvalidMessage),
    Row("stored ids beside new ones", TAGGED, ["b", "c"], InvalidMessage),
    Row("stored ids beside new ones, expecting another version", TAGGED, ["a", "c"],
        InvalidMessage, expect=7),
    Row("the ledger before the version", TAGGED, ["c"], MemoryLostError, expect=7,
        ledger="gone"),
    Row("the ledger before the version, not strict", TAGGED, ["c"], MemoryLostError, expect=7,
        ledger="gone", strict=False),
    Row("the user before the version", TAGGED, ["c"], SessionUserError, expect=7, user="v"),
    Row("the ledger before the user", TAGGED, ["c"], MemoryLostError, ledger="gone", user="v"),
]


def _batch(row: Row, ledger: str | None) -> Batch:
    wanted = ledger if row.ledger == LEDGER else row.ledger
    return Batch(ids=row.ids, blobs=[f"entry {i}".encode() for i in row.ids],
                 expect_version=row.expect, ledger=wanted, strict=row.strict, user=row.user)


def _outcome(append: Callable[[Batch], Ack], batch: Batch) -> Outcome:
    try:
        ack = append(batch)
    except (ConflictError, InvalidMessage, MemoryLostError, SessionUserError) as refused:
        return type(refused)
    return ack.first_seq, ack.last_seq, ack.deduplicated


def _planned(row: Row) -> Outcome:
    """The row through the pure plan, from the state its appends leave."""
    state: RawInfo | None = None
    found: dict[str, StoredId] = {}
    for ids, user in row.built:
        version = state.version if state else 0
        first, last = version + 1, version + len(ids)
        found.update({m: (first + i, first, last) for i, m in enumerate(ids)})
        state = RawInfo(last, 1, 0.0, 0.0, None, LEDGER, state.user if state else user)
    batch = _batch(row, LEDGER)

    def append(batch: Batch) -> Ack:
        stored = {m: found[m] for m in batch.ids if m in found}
        plan = plan_append("s", batch, state, stored, now=1.0, expires=None)
        return plan if isinstance(plan, Ack) else plan.ack

    return _outcome(append, batch)


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_the_plan_gives_each_row_its_outcome(row: Row) -> None:
    assert _planned(row) == row.outcome


@pytest.mark.user_index
def test_every_backend_appends_as_the_plan_says(open_ledger: Any) -> None:
    builder, stranger = open_ledger(), open_ledger()
    wrong = []
    for index, row in enumerate(ROWS):
        for name, appender in (("its writer", builder), ("another store", stranger)):
            session = f"row-{index}-{name[0]}"
            ledger = None
            for ids, user in row.built:
                ledger = builder._backend.append(session, Batch(
                    ids=ids, blobs=[b"built"] * len(ids), user=user)).ledger
            seen = _outcome(partial(appender._backend.append, session), _batch(row, ledger))
            if seen != row.outcome:
                wrong.append(f"{row.name} (by {name}): {seen}, the plan says {row.outcome}")
    assert wrong == []
