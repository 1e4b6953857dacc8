"""The async store keeps the same contract through the same core."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from chatledger import (
    AsyncSession,
    AsyncStore,
    ConflictError,
    InvalidMessage,
    MemoryLostError,
    RetryPolicy,
    Session,
    Store,
    open_async_store,
    user,
)
from tests.backends import BackendCase
from tests.conftest import FakeClock


async def _conversation(url: str, namespace: str, clock: FakeClock | None) -> None:
    options = {"clock": clock} if clock else {}
    async with await open_async_store(url, namespace=namespace, retry=RetryPolicy.none(),
                                      ttl=60, **options) as store:
        session = store.session("a")
        ack = await session.append([user("one"), user("two")], expect_version=0)
        assert (ack.first_seq, ack.last_seq) == (1, 2)
        assert (await session.append([user("three")])).version == 3
        with pytest.raises(ConflictError):
            await session.append([user("late")], expect_version=1)
        with pytest.raises(InvalidMessage):
            await session.append([user("\ud800")])
        assert [m.text for m in await session.read(last=2)] == ["two", "three"]
        assert [m.seq for m in await session.read(after=1, limit=1)] == [2]
        info = await session.info()
        assert info is not None and info.count == 3 and info.expires_at is not None
        assert await session.trim(keep_last=1) == 2
        await store.session("b").append([user("b")])
        assert sorted([sid async for sid in store.sessions()]) == ["a", "b"]
        assert await store.session("b").delete() is True
        with pytest.raises(MemoryLostError):
            await store.session("b").read(min_version=1)
        assert await store.purge(prefix="a") == 1
        assert [sid async for sid in store.sessions()] == []


def test_the_async_store_keeps_the_contract(backend: BackendCase, ledger_url: str,
                                            store: Store, clock: FakeClock) -> None:
    asyncio.run(_conversation(ledger_url, store.namespace,
                              clock if backend.injectable_clock else None))


@pytest.mark.parametrize(("sync", "async_"), [(Store, AsyncStore), (Session, AsyncSession)])
def test_sync_and_async_surfaces_do_not_drift(sync: type, async_: type) -> None:
    def surface(cls: type) -> dict[str, inspect.Signature]:
        return {name: inspect.signature(member) for name, member in vars(cls).items()
                if callable(member) and not name.startswith("_")}

    def normalized(cls: type) -> dict[str, list[tuple[str, object]]]:
        return {name: [(p.name, p.default) for p in sig.parameters.values()]
                for name, sig in surface(cls).items()}

    assert normalized(sync) == normalized(async_)


def test_async_describes_itself_and_lists_across_pages(backend: BackendCase, ledger_url: str,
                                                        store: Store, session_page: int) -> None:
    count = 2 * session_page + session_page // 5
    for index in range(count):
        store.session(f"p{index:04d}").append([user("x")])

    async def main() -> list[str]:
        async with await open_async_store(ledger_url, namespace=store.namespace) as astore:
            assert astore.namespace == store.namespace
            assert repr(astore).startswith("<AsyncStore ")
            assert repr(astore.session("p0001")).startswith("<AsyncSession 'p0001' of <AsyncStore")
            return [sid async for sid in astore.sessions(prefix="p")]

    assert sorted(asyncio.run(main())) == [f"p{index:04d}" for index in range(count)]
