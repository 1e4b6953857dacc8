"""The async backend's requests, through aiobotocore: on the event loop, no threads.

:class:`AsyncDynamoClient` is the seam the backend's one source
(``_async/backend.py``) calls; its sync twin is :class:`.io.DynamoClient`
(boto3), which ``scripts/unasync.py`` swaps in. Both send the same requests with
the same settings (:func:`.io.client_config`: no retries of their own,
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
from typing import Any

from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession
from botocore.exceptions import ClientError

from ..._errors import BackendError
from .io import DynamoSettings, client_config, error_code, translated

__all__ = ["AsyncDynamoClient"]

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
        self._closed = False

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
        if self._closed:  # else the next request would make a new client, as if still open
            raise BackendError(f"the store {self.where} is closed")
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
        self._closed = True
        client, self._client = self._client, None
        if client is not None:
            await client.close()
