"""The ids hash over a session's life: one field per id, every id ever stored
(trimmed ones included) until the session goes, then nothing of it is left."""

from __future__ import annotations

import pytest
import redis

from chatledger import InvalidMessage, Message, Session, assistant, user
from chatledger._backends.redis.calls import index_key
from tests.redis.conftest import OpenRedis, keys_of, scan_all


def test_text_and_uuid_ids_in_one_batch(open_redis: OpenRedis, raw: redis.Redis) -> None:
    store = open_redis()
    session = store.session("s")
    batch = [user("a", id="order-1"), assistant("b"), user("c", id="order-2")]
    session.append(batch)
    assert raw.hgetall(keys_of(store, "s").ids) == {
        b"order-1": b"1:1:3", index_key(batch[1].id): b"2:1:3", b"order-2": b"3:1:3"}
    assert session.append(batch).deduplicated
    with pytest.raises(InvalidMessage, match="not as the whole batch"):
        session.append(batch[1:])


def _fill(session: Session, count: int) -> list[list[Message]]:
    batches = [[user(f"m{k}", id=f"text-{k}") if k % 7 == 0 else user(f"m{k}")
                for k in range(n, n + 50)] for n in range(0, count, 50)]
    for batch in batches:
        session.append(batch)
    return batches


def test_trim_keeps_the_index_and_delete_forget_purge_leave_nothing(
    open_redis: OpenRedis, raw: redis.Redis
) -> None:
    store = open_redis()
    first, *_ = _fill(store.session("trimmed"), 300)
    keys = keys_of(store, "trimmed")
    before = raw.hgetall(keys.ids)
    assert len(before) == 300
    assert store.session("trimmed").trim(keep_last=10) == 290
    # ids are never trimmed: a retry of a trimmed batch is still recognised
    assert raw.hgetall(keys.ids) == before
    ack = store.session("trimmed").append(first)
    assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (1, 50, True)
    for name in ("deleted", "purged-1", "purged-2"):
        _fill(store.session(name), 300)
    _fill(store.session("owned", user="ann"), 100)
    assert store.session("deleted").delete()
    assert store.forget_user("ann").deleted == ("owned",)
    assert store.purge(prefix="purged-") == 2
    ours = scan_all(raw, f"chatledger:{{{store.namespace}:*")
    assert ours == set(keys_of(store, "trimmed"))
