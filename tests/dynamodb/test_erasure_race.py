"""forget_user (and delete) against a large append to the user's session, on both paths.

A large append (over one transaction) takes a lease on a placeholder meta item,
writes its items in fenced transactions, then commits the meta item. These tests
stop such an append after its lease, its first chunk or its last one,
deterministically (``interleave``: a wrapped request of the writer's backend),
and run forget_user there: the table, scanned behind the store, must hold
nothing of the user once forget_user says it is complete. The placeholder and
its index item are written in one transaction (``_take_lease``). When the index
item came only with the commit, forget_user found nothing there, reported
complete, and left the placeholder (the user's id) and the chunks' messages in
the table with no index item to find them by: for good if the writer died
there (it does, in the last test): the placeholder has no TTL and is in no
listing, so only a delete of that session id, or an append to it after the lease
expired, would have cleaned them.

The later tests do the same to a session already indexed, whose lease is an Update
of its committed meta item: the erasure lands before or after the lease, between
the chunks, before or after the commit, or (``_inside``) with one of the writer's
requests sent from within the erasure, after its Query and before its first
delete; and after the writer died there. They found no fault: they pin the
behaviour (the Delete of the meta item is conditioned on the ledger, which a lease
does not change, and the chunks and the commit are fenced on the lease, which
that Delete takes with it).
"""
from __future__ import annotations

import inspect
from typing import Any

import pytest

from chatledger import BackendUnavailable, ConflictError, MemoryLostError, user
from chatledger._backends.dynamodb.layout import partition, user_partition
from tests.dynamodb.conftest import Opener, interleave, items, native, retrying

# A transaction of at most TX items here (DynamoDB's is 100): the chunking is the same
# code at any limit, and on moto, which serves one request at a time in Python, a large
# append of 24 items instead of 120 made each of these tests several times cheaper.
TX = 20
CHUNK = TX - 1  # a fenced chunk's items: the first item of its transaction is the fence
BATCH = 12  # 24 entry and id items: two fenced chunks (19 and 5) before the commit


@pytest.fixture(autouse=True)
def _small_transactions(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("transactions", "_async.erasure", "_sync.erasure"):
        monkeypatch.setattr(f"chatledger._backends.dynamodb.{module}.TX_ITEMS", TX)


def _first_chunk(operation: str, kwargs: dict[str, Any], fired: list[Any]) -> bool:
    """Whether this request is a large append's first fenced chunk (its first operation
    the check that the lease is still the writer's), and nothing ran there yet."""
    return _chunk(operation, kwargs) and not fired


def _chunk(operation: str, kwargs: dict[str, Any]) -> bool:
    if operation != "transact_write_items":
        return False
    check = kwargs["TransactItems"][0].get("ConditionCheck", {})
    return bool(check.get("ConditionExpression") == "lease = :lease")


def _lease(operation: str, kwargs: dict[str, Any]) -> bool:
    """Whether this request puts a new session's placeholder, leased."""
    if operation != "transact_write_items":
        return False
    put = kwargs["TransactItems"][0].get("Put", {})
    return "lease" in put.get("Item", {})


def _nth_write(n: int) -> Any:
    """A picker of the large append's n-th write: 0 its lease, then its chunks (n >= 1)."""
    seen: list[None] = []

    def pick(operation: str, kwargs: dict[str, Any], fired: list[Any]) -> bool:
        if fired or not (_lease(operation, kwargs) or _chunk(operation, kwargs)):
            return False
        seen.append(None)
        return len(seen) == n + 1

    return pick


def _in_turn(values: list[Any], places: list[str]) -> list[Any]:
    """Params ``(opener, value, place)``: the sync store on every pair; the async store
    on every place once, taking the values in turn. Its backend is the sync one's
    source (scripts/unasync.py): what differs is the client that sends the requests,
    which every place and every value still take."""
    cases = [("sync", value, place) for value in values for place in places]
    cases += [("async", values[i % len(values)], place) for i, place in enumerate(places)]
    return [pytest.param(*case, id="-".join(map(str, case))) for case in cases]


def _of(raw: Any, url: str, namespace: str, session: str, owner: str) -> list[str]:
    """The sort keys of every item of ``session`` and of ``owner``'s index, in the table."""
    keys = (partition(namespace, session), user_partition(namespace, owner))
    return sorted(item["sk"]["S"] for item in items(raw, url) if item["pk"]["S"] in keys)


@pytest.mark.parametrize("after", [0, 1, 2], ids=["lease", "first-chunk", "last-chunk"])
def test_forget_user_between_the_chunks_of_a_new_session_leaves_nothing(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str, after: int) -> None:
    """The erasure finds the placeholder through the index, deletes it and the chunks
    that landed; the writer's next chunk (or its commit) fails its fence, and the
    append starts over: a new session, written after the erasure and indexed, which
    the next forget_user takes."""
    writer, eraser = opener(retry=retrying()), opener()

    def erase() -> Any:
        """forget_user, then a Scan before the writer goes on: (report, what is left)."""
        forgetting = native(eraser).forget_user("u")
        if not inspect.isawaitable(forgetting):
            return forgetting, _of(raw, dynamodb_url, namespace, "s", "u")

        async def then_scan() -> Any:
            return await forgetting, _of(raw, dynamodb_url, namespace, "s", "u")

        return then_scan()

    fired = interleave(writer, _nth_write(after), erase)
    ack = writer.session("s", user="u").append([user(f"secret {i}") for i in range(BATCH)])
    [(report, left)] = fired
    assert report.complete and report.deleted + report.already_gone == ("s",)
    assert left == []  # nothing of the user, the moment forget_user returned complete
    assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (1, BATCH, False)
    assert writer._backend.user_sessions("u") == ["s"]  # the append that came after
    assert eraser.forget_user("u").deleted == ("s",)
    assert _of(raw, dynamodb_url, namespace, "s", "u") == []


def test_forget_user_finds_a_new_session_whose_large_append_died_midway(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str) -> None:
    """The writer dies after its first chunk: a placeholder no reader sees, CHUNK items
    of the user's messages, and (now) the index item naming them all."""
    writer, eraser = opener(), opener()

    def die() -> Any:
        raise BackendUnavailable("the writer died between its chunks")

    interleave(writer, _first_chunk, die)
    with pytest.raises(BackendUnavailable, match="died between its chunks"):
        writer.session("s", user="u").append([user(f"secret {i}") for i in range(BATCH)])
    assert eraser.session("s").info() is None
    assert len(_of(raw, dynamodb_url, namespace, "s", "u")) == 1 + CHUNK + 1
    report = eraser.forget_user("u")
    assert report.complete and report.already_gone == ("s",)
    assert _of(raw, dynamodb_url, namespace, "s", "u") == []


# -- an existing session: the lease is an Update of its committed meta item ----------

OLD = 3  # the session's messages before the large append
# Where the other store's call lands among the large append's writes to an existing
# session (0 its lease, 1 and 2 its chunks, 3 its commit): (n, before the n-th write?),
# and how many of the append's items are in the table by then.
PLACES = {"before-lease": (0, True, 0), "lease": (0, False, 0),
          "between-chunks": (1, False, CHUNK), "last-chunk": (2, False, 2 * BATCH),
          "commit": (3, False, 2 * BATCH)}


def _write(operation: str, kwargs: dict[str, Any]) -> bool:
    """Whether this request is a large append's lease on an existing session's meta item,
    one of its fenced chunks, or its commit."""
    if _chunk(operation, kwargs):
        return True
    if operation != "transact_write_items":
        return False
    update = kwargs["TransactItems"][0].get("Update", {})
    return bool(update.get("UpdateExpression", "").startswith("SET lease = :lease,")
                or update.get("ConditionExpression", "").endswith("AND lease = :lease"))


def _nth_existing(n: int) -> Any:
    """A picker of the large append's n-th write to an existing session; once."""
    seen: list[None] = []

    def pick(operation: str, kwargs: dict[str, Any], fired: list[Any]) -> bool:
        if fired or not _write(operation, kwargs):
            return False
        seen.append(None)
        return len(seen) == n + 1

    return pick


def _existing(opener: Opener, raw: Any, url: str, namespace: str, *,
              retry: bool = True) -> tuple[Any, str]:
    """A writer store (retrying, or not: one that dies stays dead), and the ledger of the
    tagged session "s" of "u" it just created (OLD messages, indexed)."""
    writer = opener(retry=retrying()) if retry else opener()
    ack = writer.session("s", user="u").append([user(f"old {i}") for i in range(OLD)])
    assert writer._backend.user_sessions("u") == ["s"]
    assert len(_of(raw, url, namespace, "s", "u")) == 1 + 2 * OLD + 1
    return writer, ack.ledger


def _ledgers(raw: Any, url: str, namespace: str) -> set[str]:
    """The ledgers of the items of session "s" in the table."""
    key = partition(namespace, "s")
    return {item["ledger"]["S"] for item in items(raw, url) if item["pk"]["S"] == key}


def _between(scan: Any, call: Any) -> Any:
    """A Scan, ``call()``'s result (awaited on the async path), and a Scan right after
    it, before the writer goes on."""
    before = scan()
    result = call()
    if not inspect.isawaitable(result):
        return before, result, scan()

    async def awaited() -> Any:
        return before, await result, scan()

    return awaited()


@pytest.mark.parametrize(("opener", "pin", "place"),
                         _in_turn([None, "expect_version", "ledger"], list(PLACES)),
                         indirect=["opener"])
def test_forget_user_during_a_large_append_to_an_existing_session_leaves_nothing(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str, place: str,
        pin: str | None) -> None:
    """forget_user lands before or after the lease, between the chunks, before the commit
    or after it. Up to the commit it deletes the meta item (which fences the writer's
    next chunk or its commit out), the old messages, what landed, then the index item:
    the table holds nothing of the user when it returns. The writer's append then starts
    over as a new session, whole, indexed, taken by the next forget_user; or, pinned to
    the erased session (expect_version, ledger), fails as after any delete and stores
    nothing. After the commit, the append went before the erasure and goes with it."""
    n, before, landed = PLACES[place]
    writer, old = _existing(opener, raw, dynamodb_url, namespace)
    eraser = opener()
    scan = lambda: _of(raw, dynamodb_url, namespace, "s", "u")  # noqa: E731
    fired = interleave(writer, _nth_existing(n),
                       lambda: _between(scan, lambda: native(eraser).forget_user("u")),
                       before=before)
    batch = [user(f"secret {i}") for i in range(BATCH)]
    pinned = {"expect_version": {"expect_version": OLD}, "ledger": {"ledger": old},
              None: {}}[pin]
    committed = place == "commit"
    failure = {"expect_version": ConflictError, "ledger": MemoryLostError}.get(pin or "")
    if failure is not None and not committed:
        with pytest.raises(failure):
            writer.session("s", user="u").append(batch, **pinned)
        ack = None
    else:
        ack = writer.session("s", user="u").append(batch, **pinned)
    [(present, report, left)] = fired
    assert len(present) == 1 + 2 * OLD + landed + 1  # the erasure ran where it was placed
    assert report.complete and report.deleted == ("s",) and report.already_gone == ()
    assert left == []  # nothing of the user, the moment forget_user returned complete
    if ack is None or committed:
        assert scan() == []  # nothing stored since, or nothing left of what went before
        assert eraser.session("s").info() is None
        if ack is not None:
            assert (ack.first_seq, ack.last_seq, ack.ledger) == (OLD + 1, OLD + BATCH, old)
        return
    # The append came after the erasure: a new session, all of it, nothing of the old one.
    assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (1, BATCH, False)
    assert ack.ledger != old and _ledgers(raw, dynamodb_url, namespace) == {ack.ledger}
    assert len(scan()) == 1 + 2 * BATCH + 1
    assert [m.text for m in eraser.session("s").read()] == [m.text for m in batch]
    assert writer._backend.user_sessions("u") == ["s"]
    assert eraser.forget_user("u").deleted == ("s",)
    assert scan() == []


@pytest.mark.parametrize("place", list(PLACES))
def test_delete_during_a_large_append_to_an_existing_session_leaves_nothing(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str, place: str) -> None:
    """The same with a delete of the session: its partition is empty when the delete
    returns (the index item stays, as after any delete), and the writer's append starts
    over as a new session (or, placed after the commit, went with the delete); the
    next forget_user leaves nothing."""
    n, before, landed = PLACES[place]
    writer, old = _existing(opener, raw, dynamodb_url, namespace)
    eraser = opener()
    session = lambda: _of(raw, dynamodb_url, namespace, "s", "nobody")  # noqa: E731
    fired = interleave(writer, _nth_existing(n),
                       lambda: _between(session, lambda: native(eraser).session("s").delete()),
                       before=before)
    ack = writer.session("s", user="u").append([user(f"secret {i}") for i in range(BATCH)])
    [(present, deleted, left)] = fired
    assert len(present) == 1 + 2 * OLD + landed
    assert deleted is True and left == []
    if place == "commit":
        assert (ack.first_seq, ack.ledger) == (OLD + 1, old) and session() == []
    else:
        assert (ack.first_seq, ack.last_seq) == (1, BATCH) and ack.ledger != old
        assert _ledgers(raw, dynamodb_url, namespace) == {ack.ledger}
    report = eraser.forget_user("u")
    assert report.complete and report.deleted + report.already_gone == ("s",)
    assert _of(raw, dynamodb_url, namespace, "s", "u") == []


@pytest.mark.parametrize(("opener", "erase", "place"),
                         _in_turn(["forget_user", "delete"], ["lease", "between-chunks",
                                                              "last-chunk"]),
                         indirect=["opener"])
def test_erasing_an_existing_session_whose_large_append_died_midway(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str, place: str,
        erase: str) -> None:
    """The writer dies after its lease, its first chunk or its last one: the session
    still reads its old messages (the lease hides nothing committed), and forget_user (or
    a delete, then forget_user for the index item) takes the session, the dead append's
    items and the lease with it."""
    n, _, landed = PLACES[place]
    writer, _ = _existing(opener, raw, dynamodb_url, namespace, retry=False)
    eraser = opener()

    def die() -> Any:
        raise BackendUnavailable("the writer died midway")

    interleave(writer, _nth_existing(n), die)
    with pytest.raises(BackendUnavailable, match="died midway"):
        writer.session("s", user="u").append([user(f"secret {i}") for i in range(BATCH)])
    assert len(_of(raw, dynamodb_url, namespace, "s", "u")) == 1 + 2 * OLD + landed + 1
    assert [m.text for m in eraser.session("s").read()] == [f"old {i}" for i in range(OLD)]
    if erase == "delete":
        assert eraser.session("s").delete() is True
        assert _of(raw, dynamodb_url, namespace, "s", "nobody") == []
        report = eraser.forget_user("u")
        assert report.complete and report.already_gone == ("s",)
    else:
        report = eraser.forget_user("u")
        assert report.complete and report.deleted == ("s",)
    assert _of(raw, dynamodb_url, namespace, "s", "u") == []
    assert eraser.session("s").info() is None


# -- the writer's request inside the erasure: after its Query, before its first delete --

def _inside(writer: Any, pick: Any, eraser: Any, erase: Any) -> list[Any]:
    """Hold the writer's request that ``pick`` chooses, run ``erase()`` (the eraser's
    call, awaited on the async path) there, and send the held request from inside it:
    right before the eraser's first transaction (its meta item's Delete, after the
    Query that read the partition). The writer gets that request's own reply. The list
    returned gets ``erase()``'s result, then whether the held request was sent."""
    writer_io, eraser_io = writer._backend.io, eraser._backend.io
    writer_call, eraser_call = writer_io.call, eraser_io.call
    held: list[Any] = []  # (operation, kwargs), then its reply or the exception it raised
    results: list[Any] = []

    def chosen(operation: str, kwargs: dict[str, Any]) -> bool:
        return not held and pick(operation, kwargs, results)

    def due(operation: str) -> bool:
        return len(held) == 1 and operation == "transact_write_items"

    def outcome() -> Any:
        if isinstance(held[1], BaseException):
            raise held[1]
        return held[1]

    if inspect.iscoroutinefunction(writer_call):
        async def send_async() -> None:
            operation, kwargs = held[0]
            try:
                held.append(await writer_call(operation, **kwargs))
            except Exception as error:  # handed to the writer as is
                held.append(error)

        async def eraser_spy_async(operation: str, **kwargs: Any) -> Any:
            if due(operation):
                await send_async()
            return await eraser_call(operation, **kwargs)

        async def writer_spy_async(operation: str, **kwargs: Any) -> Any:
            if not chosen(operation, kwargs):
                return await writer_call(operation, **kwargs)
            held.append((operation, kwargs))
            results.append(await erase())
            results.append(len(held) == 2)
            if len(held) == 1:  # the erasure sent no transaction: the request goes now
                await send_async()
            return outcome()

        writer_io.call, eraser_io.call = writer_spy_async, eraser_spy_async
        return results

    def send() -> None:
        operation, kwargs = held[0]
        try:
            held.append(writer_call(operation, **kwargs))
        except Exception as error:  # handed to the writer as is
            held.append(error)

    def eraser_spy(operation: str, **kwargs: Any) -> Any:
        if due(operation):
            send()
        return eraser_call(operation, **kwargs)

    def writer_spy(operation: str, **kwargs: Any) -> Any:
        if not chosen(operation, kwargs):
            return writer_call(operation, **kwargs)
        held.append((operation, kwargs))
        results.append(erase())
        results.append(len(held) == 2)
        if len(held) == 1:
            send()
        return outcome()

    writer_io.call, eraser_io.call = writer_spy, eraser_spy
    return results


@pytest.mark.parametrize(("opener", "erase", "place"),
                         _in_turn(["forget_user", "delete"], ["lease", "first-chunk",
                                                              "last-chunk", "commit"]),
                         indirect=["opener"])
def test_a_large_append_writing_inside_the_erasure_leaves_nothing(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str, place: str,
        erase: str) -> None:
    """The writer's lease, a chunk or its commit lands after the erasure read the
    partition and before it deleted the meta item: the Delete (on the ledger, not the
    version) still goes through, and the second Query finds what landed since. Nothing
    of the session is left when the erasure returns; the append then starts over as a
    new session (or, its commit inside, went before the erasure and went with it)."""
    n = ["lease", "first-chunk", "last-chunk", "commit"].index(place)
    writer, old = _existing(opener, raw, dynamodb_url, namespace)
    eraser = opener()
    what = "u" if erase == "forget_user" else "nobody"
    scan = lambda: _of(raw, dynamodb_url, namespace, "s", what)  # noqa: E731
    call = ((lambda: native(eraser).forget_user("u")) if erase == "forget_user"
            else (lambda: native(eraser).session("s").delete()))
    fired = _inside(native(writer), _nth_existing(n), native(eraser),
                    lambda: _between(scan, call))
    batch = [user(f"secret {i}") for i in range(BATCH)]
    ack = writer.session("s", user="u").append(batch)
    [(present, result, left), sent] = fired
    assert sent  # the writer's request went in between the erasure's Query and Delete
    landed = [0, 0, CHUNK, 2 * BATCH][n]  # the writer's items before the held request
    assert len(present) == 1 + 2 * OLD + landed + (what == "u")
    if erase == "forget_user":
        assert result.complete and result.deleted == ("s",) and result.already_gone == ()
    else:
        assert result is True
    assert left == []  # nothing of the session (nor the index item), as the erasure returned
    if place == "commit":
        assert (ack.first_seq, ack.last_seq, ack.ledger) == (OLD + 1, OLD + BATCH, old)
        assert scan() == [] and eraser.session("s").info() is None
    else:
        assert (ack.first_seq, ack.last_seq) == (1, BATCH) and ack.ledger != old
        assert _ledgers(raw, dynamodb_url, namespace) == {ack.ledger}
        assert [m.text for m in eraser.session("s").read()] == [m.text for m in batch]
    report = eraser.forget_user("u")  # the new session, or the index item a delete left
    gone = () if (place, erase) == ("commit", "forget_user") else ("s",)
    assert report.complete and report.deleted + report.already_gone == gone
    assert _of(raw, dynamodb_url, namespace, "s", "u") == []


def _new_session_commit(operation: str, kwargs: dict[str, Any], fired: list[Any]) -> bool:
    """Whether this request is the commit of a new session's large append: the Put of
    its meta item over the placeholder, on the condition that the lease is the writer's."""
    if fired or operation != "transact_write_items":
        return False
    put = kwargs["TransactItems"][0].get("Put", {})
    return put.get("ConditionExpression") == "lease = :lease" and "sid" in put.get("Item", {})


def test_a_delete_whose_query_saw_a_placeholder_and_the_commit_landed_since_deletes_it(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str) -> None:
    """A new session's first large append commits after the delete's Query (which saw
    only the placeholder: no session yet) and before its Delete: a delete either
    reports the acknowledged batch deleted (True) or leaves it. The Delete of a
    placeholder is conditioned on its being one still, so the commit sends the delete
    round again, and the second round finds the session and deletes it."""
    writer, eraser = opener(), opener()
    session = lambda: _of(raw, dynamodb_url, namespace, "s", "nobody")  # noqa: E731
    fired = _inside(native(writer), _new_session_commit, native(eraser),
                    lambda: _between(session, lambda: native(eraser).session("s").delete()))
    ack = writer.session("s").append([user(f"secret {i}") for i in range(BATCH)])
    [(present, deleted, left), sent] = fired
    assert sent  # the commit went in between the delete's Query and its Delete
    assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (1, BATCH, False)
    assert len(present) == 1 + 2 * BATCH  # the placeholder and every chunk, uncommitted
    assert deleted is True and left == []  # the acknowledged batch went with the delete
    assert eraser.session("s").info() is None
