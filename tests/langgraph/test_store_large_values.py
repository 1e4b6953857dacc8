"""LedgerStore keeps a value larger than one message may hold (``max_message_bytes``,
1 MiB by default): its entry is stored in parts within the put's one append, as
the checkpointer stores a large value, and comes back equal through every read."""

from __future__ import annotations

import asyncio
import base64
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import GetOp, PutOp
from langgraph.store.memory import InMemoryStore

from chatledger import ConflictError, CorruptEntryError, Keyring, open_store
from chatledger.langgraph import AsyncLedgerStore, LedgerStore, copy_items
from chatledger.langgraph._item_layout import item_session_id
from chatledger.langgraph._sync import item_store
from tests.conftest import FakeClock
from tests.langgraph.conftest import backend_url

MIB = 1 << 20
SPACE = ("docs", "big")


def _value(size: int) -> dict[str, Any]:
    """A value whose JSON is about ``size`` bytes: random text and some structure."""
    text = base64.b64encode(os.urandom(size * 3 // 4)).decode()[:size]
    return {"text": text, "accents": "é日本🙂\u2028", "n": [1, 2.5, None, True]}


def _reads(store: LedgerStore, key: str) -> list[Any]:
    """The value as get, search and list_namespaces give it back."""
    got = store.get(SPACE, key)
    found = [item.value for item in store.search(SPACE, limit=10) if item.key == key]
    return [got.value if got else None, found, store.list_namespaces(prefix=("docs",))]


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis", "postgres", "dynamodb"])
def test_a_mebibyte_value_round_trips_at_the_default_limit(
        kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    value = _value(MIB)
    with LedgerStore.from_url(backend_url(kind, request, tmp_path)) as store:
        store.put(SPACE, "k", value)
        assert _reads(store, "k") == [value, [value], [SPACE]]
        info = store.store.session(item_session_id(SPACE, "k")).info()
        assert info is not None and info.count == 2  # a part and the item's entry


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_a_20_mib_value_round_trips(kind: str, request: pytest.FixtureRequest,
                                    tmp_path: Path) -> None:
    value = _value(20 * MIB)
    with LedgerStore.from_url(backend_url(kind, request, tmp_path)) as store:
        store.put(SPACE, "k", value)
        store.put(SPACE, "small", {"n": 1})
        assert _reads(store, "k") == [value, [value], [SPACE]]
        assert store.get(SPACE, "small").value == {"n": 1}  # type: ignore[union-attr]


def test_the_async_store_keeps_a_large_value() -> None:
    value = _value(2 * MIB)

    async def scenario() -> list[Any]:
        async with AsyncLedgerStore.from_url("memory://") as store:
            await store.aput(SPACE, "k", value)
            got = await store.aget(SPACE, "k")
            found = await store.asearch(SPACE)
            return [got.value if got else None, [item.value for item in found],
                    await store.alist_namespaces()]

    assert asyncio.run(scenario()) == [value, [value], [SPACE]]


def _small_parts(clock: FakeClock | None = None) -> LedgerStore:
    """A store whose messages hold 4 KiB: a value of some KiB is in parts."""
    options: dict[str, Any] = {} if clock is None else {"clock": clock}
    return LedgerStore(open_store("memory://", max_message_bytes=4096, **options),
                       owns_store=True, ttl={"refresh_on_read": True})


def test_a_large_item_overwritten_by_a_small_one_and_back() -> None:
    large, small = _value(20_000), {"n": 1}
    with _small_parts() as store:
        for value in [large, small, large, small, large]:
            store.put(SPACE, "k", value)
            assert _reads(store, "k") == [value, [value], [SPACE]]


def test_trimming_old_versions_keeps_the_newest_parts() -> None:
    values = [_value(10_000 + i) for i in range(12)]
    with _small_parts() as store:
        for value in values:  # each put spans several seqs: many cross a multiple of 16
            store.put(SPACE, "k", value)
            assert store.get(SPACE, "k").value == value  # type: ignore[union-attr]
        info = store.store.session(item_session_id(SPACE, "k")).info()
        assert info is not None and info.count < 16 * 2  # the older versions were dropped


def test_refreshes_keep_an_item_to_a_bounded_number_of_versions(clock: FakeClock) -> None:
    """A read that pushes the expiry back stores the item again: reads alone trim the
    older versions as puts do, or a read-mostly item grew by a copy a read."""
    with _small_parts(clock) as store:
        store.put(SPACE, "small", {"n": 1}, ttl=5)
        store.put(SPACE, "large", _value(20_000), ttl=5)
        for _ in range(100):
            clock.advance(1)
            assert store.get(SPACE, "small") is not None
            assert store.get(SPACE, "large") is not None
            assert len(store.search(SPACE)) == 2
        for key, most in (("small", item_store.TRIM_EVERY),
                          ("large", item_store.TRIM_EVERY * 7)):  # 6 parts and the entry
            info = store.store.session(item_session_id(SPACE, key)).info()
            assert info is not None and info.version > 200 and info.count <= most, key


def test_a_batch_checks_every_key_before_any_op_runs() -> None:
    with _small_parts() as store:
        for bad, kind in (("x" * 1_100, ValueError), ("bad\ud800", ValueError), (7, TypeError)):
            with pytest.raises(kind):
                store.batch([PutOp(SPACE, "first", {"v": 1}), PutOp(SPACE, bad, {"v": 2})])
            with pytest.raises(kind):
                store.batch([PutOp(SPACE, "first", {"v": 1}), GetOp(SPACE, bad)])
            assert store.get(SPACE, "first") is None


def test_expiry_refresh_and_sweep_of_a_large_item(clock: FakeClock) -> None:
    value = _value(20_000)
    with _small_parts(clock) as store:
        store.put(SPACE, "k", value, ttl=1)
        clock.advance(50)
        assert store.get(SPACE, "k").value == value  # type: ignore[union-attr]  # refreshed
        clock.advance(50)
        assert _reads(store, "k") == [value, [value], [SPACE]]
        clock.advance(61)
        assert _reads(store, "k") == [None, [], []]
        assert store.sweep_ttl() == 1
        info = store.store.session(item_session_id(SPACE, "k")).info()
        assert info is not None and info.count == 0  # the parts went with the entry


def test_a_large_sealed_value_round_trips_and_is_unreadable_at_rest(tmp_path: Path) -> None:
    keyring = Keyring({"k1": Keyring.new_key()}, current="k1")
    value = _value(3 * MIB)
    url = f"sqlite:///{tmp_path / 'sealed.db'}"
    with LedgerStore.from_url(url, encryption=keyring) as store:
        store.put(SPACE, "k", value)
        assert _reads(store, "k") == [value, [value], [SPACE]]
    raw = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert value["text"][:64].encode() not in raw


def test_copy_items_copies_a_large_value() -> None:
    source, value = InMemoryStore(), _value(2 * MIB)
    source.put(SPACE, "k", value)
    with LedgerStore.from_url("memory://") as target:
        report = copy_items(source, target)
        assert report.copied == 1 and not report.refused
        assert _reads(target, "k") == [value, [value], [SPACE]]


def test_an_item_whose_parts_are_gone_raises() -> None:
    with _small_parts() as store:
        store.put(SPACE, "k", _value(20_000))
        store.store.session(item_session_id(SPACE, "k")).trim(keep_last=1)
        with pytest.raises(CorruptEntryError, match="a part of the item's value is missing"):
            store.get(SPACE, "k")
        with pytest.raises(CorruptEntryError, match="missing"):
            store.search(SPACE)


def test_an_entry_naming_malformed_parts_raises() -> None:
    with _small_parts() as store:
        store.put(SPACE, "k", {"n": 1})
        session = store.store.session(item_session_id(SPACE, "k"))
        entry = session.read(last=1).messages[0]
        session.append([replace(entry, id="again", metadata={**entry.metadata,
                                                             "parts": [0, 5]})])
        with pytest.raises(CorruptEntryError, match="an entry's parts are"):
            store.get(SPACE, "k")


def test_a_put_between_the_reads_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The newest entry read, then puts that trim its parts before they are read:
    the newest entries are read again in one read, the entry with its parts (one
    version: no put trims between); it gives up only when puts keep landing."""
    with _small_parts() as store:
        session_id = item_session_id(SPACE, "k")
        store.put(SPACE, "k", _value(20_000))
        stale = item_store.newest(store.store, session_id)
        last = {}
        for i in range(8):  # enough seqs to cross a multiple of 16: the stale parts go
            last = _value(20_000 + i)
            store.put(SPACE, "k", last)
        monkeypatch.setattr(item_store, "newest", lambda *_: stale)
        assert store.get(SPACE, "k").value == last  # type: ignore[union-attr]
        monkeypatch.setattr(item_store, "_PART_READS", 1)  # no second read
        with pytest.raises(ConflictError):
            store.get(SPACE, "k")


def test_the_async_store_reads_parts_again_and_refuses_missing_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from chatledger import open_async_store
    from chatledger.langgraph._async import item_store as async_item_store

    async def scenario() -> None:
        store = AsyncLedgerStore(await open_async_store("memory://", max_message_bytes=4096),
                                 owns_store=True)
        session_id = item_session_id(SPACE, "k")
        await store.aput(SPACE, "k", _value(20_000))
        stale = await async_item_store.newest(store.store, session_id)
        for i in range(8):
            await store.aput(SPACE, "k", _value(20_000 + i))

        async def always_stale(*_: Any) -> Any:
            return stale

        with monkeypatch.context() as patched:
            patched.setattr(async_item_store, "newest", always_stale)
            assert (await store.aget(SPACE, "k")) is not None  # read again, whole
            patched.setattr(async_item_store, "_PART_READS", 1)
            with pytest.raises(ConflictError):
                await store.aget(SPACE, "k")
        await store.store.session(session_id).trim(keep_last=1)
        with pytest.raises(CorruptEntryError, match="a part of the item's value is missing"):
            await store.aget(SPACE, "k")
        await store.aclose()

    asyncio.run(scenario())
