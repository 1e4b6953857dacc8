"""``ChatLedgerHistory``: a LangChain chat message history on a chatledger session."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, SystemMessage

from .._async.store import AsyncSession, AsyncStore
from .._context import summary_through
from .._errors import InvalidMessage
from .._langchain_messages import LANGCHAIN_KEY, from_ledger, to_ledger
from .._messages import Message
from .._results import History
from .._sync.store import Session, Store
from ._ids import with_batch_ids
from ._stores import shared_store
from ._watermark import Unwatched, Watermark, shared_watermark

__all__ = ["ChatLedgerHistory"]


class ChatLedgerHistory(BaseChatMessageHistory):
    """The messages of one chatledger session, as LangChain sees them.

    ``add_messages`` stores its whole batch as one atomic, idempotent append; a
    message's own id is its ledger id, so adding the same messages again stores
    nothing. ``last=N`` makes reads return only the last N messages.

    With ``detect_loss`` (the default) the history remembers the highest
    version it has seen of its session, shared with every history of that
    session on the same store in this process, and raises MemoryLostError when
    the store later holds less (evicted, expired, deleted behind its back,
    server restarted empty). ``clear()`` deletes on purpose, so it forgets.

    ``max_tokens=N`` makes reads return the newest messages that fit N tokens
    (counted by ``count_tokens``, see :meth:`chatledger.Session.read`), never
    splitting an assistant's tool calls from their results. ``with_summary``
    makes them start with the session's latest summary as a ``SystemMessage``,
    followed by the messages after it (see :meth:`chatledger.Session.maybe_compact`).
    Summary entries are never returned as conversation messages.

    ``user`` tags the session with a user id at its first append, so that
    ``store.forget_user(user)`` erases it (see :meth:`chatledger.Store.session`).

    On a sync :class:`~chatledger.Store` the async methods run the sync ones in
    LangChain's thread pool; on an :class:`~chatledger.AsyncStore` they are
    native and the sync ones raise TypeError.
    """

    def __init__(
        self,
        store: Store | AsyncStore,
        session_id: str,
        *,
        last: int | None = None,
        detect_loss: bool = True,
        max_tokens: int | None = None,
        with_summary: bool = False,
        count_tokens: Any = None,
        user: str | None = None,
    ) -> None:
        super().__init__()
        if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 1):
            raise ValueError(f"last must be a positive int or None, got {last!r}")
        if last is not None and (max_tokens is not None or with_summary):
            raise ValueError("last cannot be given with max_tokens or with_summary")
        self.store = store
        self.session_id = session_id
        self.last = last
        self.max_tokens = max_tokens
        self.with_summary = with_summary
        self.count_tokens = count_tokens
        self.user = user
        self._session: Session | AsyncSession = store.session(session_id, user=user)
        self._watermark: Watermark = (
            shared_watermark(store, session_id) if detect_loss else Unwatched()
        )

    @classmethod
    def from_url(
        cls,
        url: str,
        session_id: str,
        *,
        last: int | None = None,
        detect_loss: bool = True,
        max_tokens: int | None = None,
        with_summary: bool = False,
        count_tokens: Any = None,
        user: str | None = None,
        **options: Any,
    ) -> ChatLedgerHistory:
        """A history on the store at ``url`` (see :func:`chatledger.open_store`).

        Cheap to call per turn: the process opens one store per URL and options
        and reuses it (:func:`chatledger.langchain.close_shared_stores` closes them).
        """
        return cls(shared_store(url, options), session_id, last=last, detect_loss=detect_loss,
                   max_tokens=max_tokens, with_summary=with_summary, count_tokens=count_tokens,
                   user=user)

    @property
    def messages(self) -> list[BaseMessage]:
        """The session's messages (the last ``last`` of them), oldest first."""
        seen = self._watermark.seen()
        return self._received(self._sync().read(**self._window(), **seen.read_floor()))

    @messages.setter
    def messages(self, value: list[BaseMessage]) -> NoReturn:
        raise AttributeError("the ledger is append-only: use add_messages() or clear()")

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store ``messages`` as one atomic batch, once however often it is retried."""
        batch = _to_ledger_batch(messages)
        if batch:
            seen = self._watermark.seen()
            with _in_langchain_terms():
                ack = self._sync().append(batch, **seen.append_guard())
            seen.check_ack(self.session_id, ack)
            self._watermark.advance(ack)

    def clear(self) -> None:
        """Delete the session: its messages, its version, what was seen of it."""
        self._sync().delete()
        self._watermark.forget()

    async def aget_messages(self) -> list[BaseMessage]:
        session = self._async()
        if session is None:
            return await super().aget_messages()
        seen = self._watermark.seen()
        return self._received(await session.read(**self._window(), **seen.read_floor()))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        session = self._async()
        if session is None:
            await super().aadd_messages(messages)
            return
        batch = _to_ledger_batch(messages)
        if batch:
            seen = self._watermark.seen()
            with _in_langchain_terms():
                ack = await session.append(batch, **seen.append_guard())
            seen.check_ack(self.session_id, ack)
            self._watermark.advance(ack)

    async def aclear(self) -> None:
        session = self._async()
        if session is None:
            await super().aclear()
            return
        await session.delete()
        self._watermark.forget()

    def __repr__(self) -> str:
        return f"<ChatLedgerHistory {self.session_id!r} on {self.store!r}>"

    def _window(self) -> dict[str, Any]:
        if self.max_tokens is None and not self.with_summary:
            return {"last": self.last}
        return {"max_tokens": self.max_tokens, "with_summary": self.with_summary,
                "count_tokens": self.count_tokens}

    def _received(self, history: History) -> list[BaseMessage]:
        self._watermark.advance(history)
        summary = [] if history.summary is None else [
            SystemMessage(history.summary.text, id=history.summary.id)]
        return summary + [from_ledger(message, self.session_id) for message in history.messages
                          if summary_through(message) is None]

    def _sync(self) -> Session:
        if isinstance(self._session, AsyncSession):
            raise TypeError(
                f"{self!r} is on an async store: use aget_messages(), aadd_messages() and "
                "aclear(), or build the history on a store from open_store()"
            )
        return self._session

    def _async(self) -> AsyncSession | None:
        return self._session if isinstance(self._session, AsyncSession) else None


@contextmanager
def _in_langchain_terms() -> Iterator[None]:
    """A refused field named as the LangChain message has it: ``messages[1].
    additional_kwargs.k``, not the ledger's ``messages[1].metadata.langchain...``."""
    try:
        yield
    except InvalidMessage as refused:
        field = refused.field.replace(f".metadata.{LANGCHAIN_KEY}.", ".", 1)
        if field == refused.field:
            raise
        raise InvalidMessage(field, refused.reason) from None


def _to_ledger_batch(messages: Sequence[BaseMessage]) -> list[Message]:
    messages = list(messages)  # read twice below; a generator would be spent
    converted = [
        to_ledger(message, path=f"messages[{index}]") for index, message in enumerate(messages)
    ]
    return with_batch_ids(messages, converted)
