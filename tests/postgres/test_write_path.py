"""The append's cost by construction: one round trip, and the ids found through their index.

Round trips are counted on the wire protocol as libpq traces it (``PQtrace``):
each run of messages the client sends before it reads a reply is one. The
plans are PostgreSQL's own (``EXPLAIN``), custom and generic (psycopg prepares
a statement run five times), on a schema no ``ANALYZE`` has seen and on one
that holds thousands of ids.
"""

from __future__ import annotations

import json
import re
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from psycopg import pq

from chatledger import Store, assistant, open_store, user
from chatledger._backends.postgres._sync.backend import _append_params, _guessed
from chatledger._backends.postgres.arrays import bytea_array
from chatledger._backends.postgres.arrays import register as register_arrays
from chatledger._backends.postgres.sql import GROW_LISTED, statements
from chatledger._core import make_batch
from tests.postgres.conftest import OpenPostgres


def _traced(store: Store, call: Any) -> list[tuple[str, int]]:
    """The protocol messages of the store's one connection during ``call()``:
    (F: sent by the client, B: by the server; the message's length)."""
    pool = store._backend._pool  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace"
        with path.open("w") as out:
            connection = pool.getconn()
            connection.pgconn.trace(out.fileno())
            connection.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
            pool.putconn(connection)
            try:
                call()
            finally:
                connection.pgconn.untrace()
        # A message's first line; a statement's text goes on over more lines.
        messages = [line.split("\t")[:2] for line in path.read_text().splitlines()
                    if line.startswith(("F\t", "B\t"))]
    assert messages, "nothing was traced: the call did not use the traced connection"
    return [(direction, int(length)) for direction, length in messages]


def _round_trips(store: Store, call: Any) -> int:
    """How many times the store's one connection waits for the server during ``call()``:
    each run of messages the client sends before a reply."""
    directions = [direction for direction, _ in _traced(store, call)]
    return sum(1 for i, sent in enumerate(directions)
               if sent == "F" and (i == 0 or directions[i - 1] == "B"))


def test_an_append_and_a_read_are_one_round_trip_each(open_postgres: OpenPostgres) -> None:
    store = open_postgres(max_connections=1)
    session = store.session("s")
    assert _round_trips(store, lambda: session.append([user("first")])) == 1  # a new session
    pair = [user("q"), assistant("a")]
    assert _round_trips(store, lambda: session.append(pair)) == 1
    # Its retry, planned at the version it made: the ids' key refuses it, then a look
    # finds them (an append does not look before it writes), and Acks.
    assert _round_trips(store, lambda: session.append(pair)) == 2
    assert session.append(pair).deduplicated
    assert _round_trips(store, lambda: session.read(last=2)) == 1
    assert [m.text for m in session.read(last=2)] == ["q", "a"]
    assert session.read().version == 3


def test_an_append_by_a_store_that_never_saw_the_session_takes_two(
        open_postgres: OpenPostgres) -> None:
    writer, other = open_postgres(), open_postgres(max_connections=1)
    writer.session("s").append([user("a")])
    session = other.session("s")
    # The guess (no session) is wrong: the first trip writes nothing and brings the state back.
    assert _round_trips(other, lambda: session.append([user("b")])) == 2
    assert _round_trips(other, lambda: session.append([user("c")])) == 1
    writer.session("s").append([user("d")])  # the guess is stale again
    assert _round_trips(other, lambda: session.append([user("e")])) == 2
    assert [m.text for m in writer.session("s").read()] == ["a", "b", "c", "d", "e"]
    session.delete()  # by this store: it knows the next append starts a session
    assert _round_trips(other, lambda: session.append([user("f")])) == 1


def test_a_large_batch_looks_before_it_sends_and_its_retry_sends_only_its_ids(
        open_postgres: OpenPostgres) -> None:
    store = open_postgres(max_connections=1)
    session = store.session("s")
    session.append([user("a")])
    batch = [user("big", data=b"x" * 200_000), assistant("ok")]
    assert _round_trips(store, lambda: session.append(batch)) == 2
    sent = sum(length for direction, length in _traced(store, lambda: session.append(batch))
               if direction == "F")
    assert sent < 20_000  # the ids and the statement, not the 200 KB entry again
    assert session.read().version == 3


# -- the idempotency lookup's plan ------------------------------------------------

@pytest.fixture
def fresh(postgres_url: str) -> Iterator[tuple[Store, psycopg.Connection[Any], str]]:
    """A store on a schema of its own, just created: no ANALYZE has run on its tables."""
    schema = f"fresh_{uuid.uuid4().hex[:10]}"
    store = open_store(f"{postgres_url}?schema={schema}&migrate=true", namespace="n")
    with psycopg.connect(postgres_url, autocommit=True) as raw:
        try:
            yield store, raw, schema
        finally:
            store.close()
            raw.execute(f"DROP SCHEMA {schema} CASCADE")


_TYPES = {"ns": "text", "sid": "text", "ids": "bytea[]", "write": "boolean", "was": "bigint",
          "ledger": "text", "user": "text", "now": "float8",
          "blobs": "bytea[]", "first": "bigint", "last": "bigint", "first_seq": "bigint",
          "created": "float8", "expires": "float8"}


def _positional(statement: str) -> tuple[str, list[str]]:
    """``statement`` with $n for each %(name)s, and the names in $n order."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return re.sub(r"%\((\w+)\)[sb]", number, statement), names


def _id_scans(raw: psycopg.Connection[Any], statement: str, params: dict[str, Any],
              mode: str, table: str = "message_ids") -> list[dict[str, Any]]:
    """The plan's nodes that read ``table``, under ``plan_cache_mode`` ``mode``."""
    text, names = _positional(statement)
    name = f"p_{uuid.uuid4().hex[:8]}"
    types = ", ".join(_TYPES[n] for n in names)
    raw.execute(f"PREPARE {name}({types}) AS {text}")
    raw.execute(f"SET plan_cache_mode = {mode}")
    try:
        placeholders = ", ".join(["%s"] * len(names))
        # The values inlined by the client: EXECUTE's arguments take no $n.
        row = psycopg.ClientCursor(raw).execute(
            f"EXPLAIN (FORMAT JSON) EXECUTE {name}({placeholders})",
            [params[n] for n in names]).fetchone()
    finally:
        raw.execute("RESET plan_cache_mode")
        raw.execute(f"DEALLOCATE {name}")
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return [node for node in _nodes(plan[0]["Plan"])
            if node.get("Relation Name") == table and "Scan" in node["Node Type"]]


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def _assert_by_index(scans: list[dict[str, Any]]) -> None:
    assert scans, "the plan reads no message_ids"
    for scan in scans:
        assert scan["Node Type"] in ("Index Scan", "Index Only Scan"), scan
        assert "msg_id" in scan["Index Cond"], scan  # the whole key, not a filter after it
        assert "Filter" not in scan, scan


def _assert_lookups_use_the_index(store: Store, raw: psycopg.Connection[Any]) -> None:
    backend: Any = store._backend
    batch = make_batch([user("q"), assistant("a")], None, None, 1 << 20)
    now = 1.0
    params = _append_params("n", "s", batch, _guessed("s", batch, None, now, None), now)
    # The arrays as lists: the statement's go in binary form, which a client-side
    # cursor (inlining the values as text) cannot send.
    params.update(ids=[i.encode() for i in batch.ids], blobs=batch.blobs)
    for mode in ("force_custom_plan", "force_generic_plan"):
        # The function's lookups (a batch of one id, of another size) and the step-by-step one.
        for lookup in (backend.sql.found_one, backend.sql.found_all, backend.sql.stored_ids):
            _assert_by_index(_id_scans(raw, lookup, params, mode))
        # The plain statement's look after writing nothing, for listed and unnested batches.
        for created in (False, True):
            for count in (1, 2, GROW_LISTED + 1):
                grow = backend.sql.grow(created=created, count=count)
                _assert_by_index(_id_scans(raw, grow, params, mode))
                sessions = _id_scans(raw, grow, params, mode, "sessions")
                assert sessions, "the plan reads no session"
                for scan in sessions:  # the session by its key, however few rows are known
                    assert scan["Node Type"] == "Index Scan", scan
                    assert "sid" in scan["Index Cond"], scan


def test_the_idempotency_lookup_uses_its_index_on_a_new_table_and_a_large_one(
        fresh: tuple[Store, psycopg.Connection[Any], str]) -> None:
    store, raw, schema = fresh
    never = raw.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass",
                        (f"{schema}.message_ids",)).fetchone()
    assert never == (-1,)  # -1: never analyzed (nor vacuumed)
    _assert_lookups_use_the_index(store, raw)
    session = store.session("s")
    for start in range(0, 3_000, 1_000):
        session.append([user(f"m{i}") for i in range(start, start + 1_000)])
    raw.execute(f"ANALYZE {schema}.message_ids")
    _assert_lookups_use_the_index(store, raw)


def test_a_store_remembers_a_bounded_number_of_sessions(
        open_postgres: OpenPostgres, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chatledger._backends.postgres._sync.backend._KNOWN", 2)
    store = open_postgres(max_connections=1)
    for name in ("s1", "s2", "s3"):
        store.session(name).append([user("a")])
    # s1 was forgotten: planned for no session, its append writes nothing, then goes again.
    assert _round_trips(store, lambda: store.session("s1").append([user("b")])) == 2
    assert _round_trips(store, lambda: store.session("s3").append([user("b")])) == 1


# -- the function's answers, branch by branch -------------------------------------

_S1 = (3, 1, 5.0, 11.0, None, "L", "u")  # s1: ids a (seq 1) and b, c (2 and 3), user u
_NOTHING = (None,) * 7


def _call(raw: psycopg.Connection[Any], schema: str, sid: str, ids: list[bytes], *,
          write: bool = True, was: int | None = None, ledger: str = "L",
          user_id: str | None = "u", now: float = 20.0, blobs: list[bytes] | None = None,
          expires: float | None = None) -> tuple[Any, ...]:
    """One call of the schema's function (the batch's entries: its ids as bodies)."""
    blobs = list(ids) if blobs is None else blobs
    first = 1 if was is None else was + 1
    row = raw.execute(
        f"SELECT * FROM {schema}.append('n', %s, %b, %s, %s, %s, %s, %s, %b, %s, %s, 1, 5.0, %s)",
        (sid, ids, write, was, ledger, user_id, now, blobs, first, first + len(blobs) - 1,
         expires)).fetchone()
    assert row is not None
    return tuple(row)


def _stored(raw: psycopg.Connection[Any], schema: str, sid: str) -> list[Any]:
    return [raw.execute(f"SELECT version, updated_at, expires_at FROM {schema}.sessions"
                        " WHERE sid = %s", (sid,)).fetchall(),
            raw.execute(f"SELECT seq, body FROM {schema}.entries WHERE sid = %s ORDER BY seq",
                        (sid,)).fetchall(),
            raw.execute(f"SELECT msg_id, seq, batch_first, batch_last FROM {schema}.message_ids"
                        " WHERE sid = %s ORDER BY seq", (sid,)).fetchall()]


_CASES = [
    # Written: only that is said (the client knows the state it planned).
    ("new", [b"q"], {}, (True, *_NOTHING, None, None, None, None)),
    ("new", [b"q", b"r"], {"expires": 99.0}, (True, *_NOTHING, None, None, None, None)),
    ("s1", [b"d"], {"was": 3, "expires": 50.0}, (True, *_NOTHING, None, None, None, None)),
    ("s1", [b"d", b"e"], {"was": 3}, (True, *_NOTHING, None, None, None, None)),
    ("s3", [b"d"], {"was": 1, "ledger": "M", "user_id": None},
     (True, *_NOTHING, None, None, None, None)),
    # Not as planned: nothing written, the state and where the ids are.
    ("s1", [b"q"], {}, (False, *_S1, None, None, None, None)),  # a new one exists
    ("s1", [b"d"], {"was": 2}, (False, *_S1, None, None, None, None)),
    ("s1", [b"d"], {"was": 4}, (False, *_S1, None, None, None, None)),
    ("s1", [b"d"], {"was": 3, "ledger": "M"}, (False, *_S1, None, None, None, None)),
    ("s1", [b"d"], {"was": 3, "user_id": "v"}, (False, *_S1, None, None, None, None)),
    ("s1", [b"d"], {"was": 3, "user_id": None}, (False, *_S1, None, None, None, None)),
    ("s3", [b"d"], {"was": 1, "ledger": "M"},
     (False, 1, 1, 5.0, 10.0, 100.0, "M", None, None, None, None, None)),
    ("s2", [b"d"], {"was": 1, "user_id": None},  # expired
     (False, 1, 1, 5.0, 10.0, 12.0, "L", None, None, None, None, None)),
    ("gone", [b"d"], {"was": 1}, (False, *_NOTHING, None, None, None, None)),
    # Ids stored, planned from an older version (a retry whose reply was lost): one id,
    # several, a batch partly stored; planned as a new session.
    ("s1", [b"a"], {"was": 2}, (False, *_S1, [b"a"], [1], [1], [1])),
    ("s1", [b"b", b"c"], {"was": 1}, (False, *_S1, [b"b", b"c"], [2, 3], [2, 2], [3, 3])),
    ("s1", [b"c", b"z"], {"was": 2}, (False, *_S1, [b"c"], [3], [2], [3])),
    ("s1", [b"a"], {}, (False, *_S1, [b"a"], [1], [1], [1])),
    # Only a look (write false).
    ("s1", [b"a", b"z"], {"write": False}, (False, *_S1, [b"a"], [1], [1], [1])),
    ("s1", [b"z"], {"write": False}, (False, *_S1, None, None, None, None)),
    ("gone", [b"a"], {"write": False}, (False, *_NOTHING, None, None, None, None)),
]


def _grown(raw: psycopg.Connection[Any], schema: str, sid: str, ids: list[bytes], *,
           was: int | None = None, ledger: str = "L", user_id: str | None = "u",
           now: float = 20.0, expires: float | None = None) -> tuple[Any, ...]:
    """One planned append by the plain statement (Statements.grow), as ``_call`` plans it."""
    first = 1 if was is None else was + 1
    register_arrays(raw)
    row = raw.execute(statements(schema).grow(created=was is None, count=len(ids)), {
        "ns": "n", "sid": sid, "ids": bytea_array(ids), "was": was, "ledger": ledger,
        "user": user_id, "now": now, "blobs": bytea_array(list(ids)), "first": first,
        "last": first + len(ids) - 1, "first_seq": 1, "created": 5.0, "expires": expires},
        binary=True).fetchone()
    assert row is not None
    return tuple(row)


_SENDERS = {"function": _call, "plain statement": _grown}
"""The function, and the plain statement that replaced it for planned appends: the same
cases, the same writes and answers (the plain statement only writes: no look)."""


@pytest.mark.parametrize(("sender", "sid", "ids", "options", "answer"), [
    (sender, *case) for sender in _SENDERS for case in _CASES
    if sender == "function" or case[2].get("write", True)])
def test_the_append_writes_only_as_planned_and_answers_what_it_saw(
        postgres_url: str, raw: psycopg.Connection[Any], sender: str, sid: str,
        ids: list[bytes], options: dict[str, Any], answer: tuple[Any, ...]) -> None:
    send = _SENDERS[sender]
    schema = f"fn_{uuid.uuid4().hex[:10]}"
    open_store(f"{postgres_url}?schema={schema}&migrate=true").close()
    try:
        assert send(raw, schema, "s1", [b"a"], now=10.0)[0]
        assert send(raw, schema, "s1", [b"b", b"c"], was=1, now=11.0)[0]
        assert send(raw, schema, "s2", [b"x"], user_id=None, now=10.0, expires=12.0)[0]
        assert send(raw, schema, "s3", [b"y"], ledger="M", user_id=None, now=10.0,
                    expires=100.0)[0]
        before = _stored(raw, schema, sid)
        assert send(raw, schema, sid, ids, **options) == answer
        after = _stored(raw, schema, sid)
        if not answer[0]:
            assert after == before  # nothing written
            return
        was = options.get("was")
        last = len(ids) if was is None else was + len(ids)
        assert after[0] == [(last, 20.0, options.get("expires"))]
        seqs = range(last - len(ids) + 1, last + 1)
        assert after[1][len(before[1]):] == list(zip(seqs, ids, strict=True))
        assert after[2][len(before[2]):] == [(mid, seq, seqs[0], last)
                                             for seq, mid in zip(seqs, ids, strict=True)]
    finally:
        raw.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.parametrize("ids", [[b"a"], [b"b", b"c"], [b"c", b"z"]])
def test_the_function_refuses_a_stored_id_planned_at_the_current_version(
        postgres_url: str, raw: psycopg.Connection[Any], ids: list[bytes]) -> None:
    """Step 3 writes without looking first: the ids' primary key refuses the call whole
    (the client then looks: test_an_append_and_a_read_are_one_round_trip_each)."""
    schema = f"fn_{uuid.uuid4().hex[:10]}"
    open_store(f"{postgres_url}?schema={schema}&migrate=true").close()
    try:
        assert _call(raw, schema, "s1", [b"a"], now=10.0)[0]
        assert _call(raw, schema, "s1", [b"b", b"c"], was=1, now=11.0)[0]
        before = _stored(raw, schema, "s1")
        with pytest.raises(psycopg.errors.UniqueViolation) as refused:
            _call(raw, schema, "s1", ids, was=3)
        assert refused.value.diag.constraint_name == "message_ids_pkey"
        assert _stored(raw, schema, "s1") == before
    finally:
        raw.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.parametrize("isolation", [r"read\ committed", r"repeatable\ read"])
def test_a_batch_stored_already_is_its_own_retry_after_the_refusal_on_either_path(
        open_postgres: OpenPostgres, postgres_url: str, isolation: str) -> None:
    """The refused call is rolled back on the connection it ran on, alone or in the
    pipeline of BEGIN and COMMIT (another default isolation), and the look answers."""
    options = quote(f"-c default_transaction_isolation={isolation}")
    store = open_postgres(url=f"{postgres_url}{'&' if '?' in postgres_url else '?'}"
                              f"options={options}", max_connections=1)
    session = store.session("s")
    pair = [user("q", id="q1"), assistant("a", id="a1")]
    first = session.append(pair)
    again = session.append(pair)
    assert (again.deduplicated, again.first_seq, again.last_seq) == (True, 1, 2)
    assert not first.deduplicated
    after = session.append([user("next")])  # the connection is usable, the state known
    assert after.version == 3
    assert [m.text for m in session.read()] == ["q", "a", "next"]


def test_the_append_statements_are_planned_once_per_connection(
        open_postgres: OpenPostgres) -> None:
    """A prepared statement whose generic plan costs more than its custom ones (an
    unnest of a parameter) is planned again on every call: more server time than its
    execution. Each length of batch listed has a statement whose generic plan is kept."""
    store = open_postgres(max_connections=1)
    for i in range(16):  # psycopg prepares at the 6th call; the server's 6th plan may be generic
        store.session("grown").append([user(f"q{i}")])
        store.session("grown").append([user(f"q{i}"), assistant("a")])
        store.session(f"new-{i}").append([user("first")])
    pool = store._backend._pool  # type: ignore[attr-defined]
    connection = pool.getconn()
    try:
        plans = connection.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
            " WHERE statement LIKE 'WITH grown%'").fetchall()
    finally:
        pool.putconn(connection)
    assert len(plans) == 3  # a new session's (of one), an existing one's of one and of two
    for generic, custom in plans:
        assert custom <= 5 and generic >= 5, plans
