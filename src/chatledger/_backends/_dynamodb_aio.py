"""The async backend's requests, through aiobotocore: on the event loop, no threads.

:class:`AsyncDynamoClient` is the seam the backend's one source
(``_async/dynamodb.py``) calls; its sync twin is :class:`.._dynamodb_io.DynamoClient`
(boto3), which ``scripts/unasync.py`` swaps in. Both send the same requests with
the same settings (:func:`.._dynamodb_io.client_config`: no retries of their own,
each request bounded by the store's ``timeout``) and translate the same errors.

An aiobotocore client belongs to the event loop that made it (its aiohttp
session does): each backend makes its own on first use and closes it with the
store. So does an aiobotocore session (refreshable credentials hold an
asyncio lock): one per loop and profile, all sharing the process's loader of
botocore's data files, which is what makes a session cost (a third of a second).
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession
from botocore.exceptions import ClientError

from ._dynamodb_io import DynamoSettings, client_config, error_code, translated

__all__ = ["AsyncDynamoClient", "AsyncTurns"]

_SESSIONS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str | None, AioSession]]
_SESSIONS = weakref.WeakKeyDictionary()
_LOADERS: dict[int, Any] = {}  # pid -> botocore's loader, its parsed files cached


def _session(profile: str | None) -> AioSession:
    """The running loop's session for ``profile``."""
    sessions = _SESSIONS.setdefault(asyncio.get_running_loop(), {})
    session = sessions.get(profile)
    if session is None:
        session = sessions[profile] = AioSession(profile=profile)
        loader = _LOADERS.setdefault(os.getpid(), session.get_component("data_loader"))
        session.register_component("data_loader", loader)
    return session


class AsyncDynamoClient:
    """One aiobotocore DynamoDB client, made on the first request."""

    def __init__(self, settings: DynamoSettings, where: str) -> None:
        self.settings = settings
        self.where = where
        self._client: Any = None
        self._making: asyncio.Lock | None = None

    async def call(self, operation: str, *, tolerate: str | None = None, **kwargs: Any) -> Any:
        """One request; its errors in chatledger's terms (:func:`translated`). ``tolerate``:
        an error code answered with None instead (a table that exists already)."""
        client = await self.client()
        with translated(self.where):
            try:
                return await getattr(client, operation)(**kwargs)
            except ClientError as exc:
                if tolerate is None or error_code(exc) != tolerate:
                    raise
                return None

    async def client(self) -> Any:
        if self._client is None:
            if self._making is None:
                self._making = asyncio.Lock()
            async with self._making:  # two first requests at once make one client
                if self._client is None:
                    with translated(self.where):
                        self._client = await _session(self.settings.profile).create_client(
                            "dynamodb", region_name=self.settings.region,
                            endpoint_url=self.settings.endpoint_url,
                            config=AioConfig(**client_config(self.settings))).__aenter__()
        return self._client

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()


class AsyncTurns:
    """The backend's appends to one session, one at a time, in order of arrival.

    Appends of one backend (tasks on its loop) racing each other through DynamoDB would
    only waste transactions, and starve: a writer that lost backs off while the others,
    not backing off, win again; under load one lost 19 races in a row until its call's
    deadline. In line they cost one transaction each; races are left to writers of other
    backends and processes. ``asyncio.Lock`` wakes its waiters in order, and a waiter is
    cancelled at its call's deadline like any await.
    """

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # session -> lock, its users

    @asynccontextmanager
    async def of(self, session: str, where: str) -> AsyncIterator[None]:
        """The session's turn, held for the block (``where``: for the sync twin's error)."""
        lock, users = self._locks.get(session) or (asyncio.Lock(), 0)
        self._locks[session] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[session]
            if users == 1:
                del self._locks[session]
            else:
                self._locks[session] = (lock, users - 1)
