"""``TranscriptMiddleware``: the whole conversation of a LangChain v1 agent, in a
chatledger session, while the agent's own state is summarized or trimmed.

Where it writes, and why there: ``before_agent`` stores the turn's input
before any other middleware can rewrite the state; ``wrap_model_call`` stores,
before each model call, what arrived since (the previous reply, tool results);
``after_agent`` stores the turn's last messages. So every message is stored
the first time a hook sees it, at most three appends a turn (more only for
more model calls), and none adds a model call or a graph step beyond the two
agent hooks. What is already stored is kept in private state channels (see
``_transcript_plan``), checkpointed with the state: a retried step or a resumed
run resends the same batch, which the store stores once.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain.agents.middleware.types import PrivateStateAttr, ToolCallRequest
from langchain_core.messages import BaseMessage, ToolMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import NotRequired

from .._async.store import AsyncSession, AsyncStore
from .._errors import InvalidMessage
from .._langchain_messages import to_ledger
from .._sync.store import Session, Store
from .._validation import encode_batch
from ._transcript_plan import Plan, TranscriptAt, plan, state_ids

__all__ = ["TranscriptMiddleware", "TranscriptState"]

SessionOf = Callable[[RunnableConfig], str]


class TranscriptState(AgentState[Any]):
    """The agent's state with the middleware's private progress channels."""

    chatledger_transcript: NotRequired[Annotated[list[list[Any]], PrivateStateAttr]]
    chatledger_transcript_at: NotRequired[Annotated[TranscriptAt, PrivateStateAttr]]


class TranscriptMiddleware(AgentMiddleware[TranscriptState, Any, Any]):
    """Appends every message of the agent's turns to a chatledger session.

    ``store`` is a :class:`~chatledger.Store` (for ``invoke``/``stream``) or an
    :class:`~chatledger.AsyncStore` (for ``ainvoke``/``astream``; a sync store
    serves those too, in a worker thread). The session is named by the run's
    ``thread_id``, or by ``session_id(config)``. Messages are stored by their
    LangChain ids, so nothing is stored twice; a summary written by
    ``SummarizationMiddleware`` is stored as a summary entry covering what it
    replaced. If the session loses what it stored (a server restarted empty),
    the next write raises ``MemoryLostError`` instead of starting a partial
    transcript. ``user_key``: the key of ``config["configurable"]`` naming the
    user the session belongs to, so that ``store.forget_user`` erases it with
    the user's threads (None: no user).
    """

    state_schema = TranscriptState

    def __init__(self, store: Store | AsyncStore, *, session_id: SessionOf | None = None,
                 user_key: str | None = "user_id") -> None:
        super().__init__()
        self.store = store
        self.session_id = session_id or _thread_id
        self.user_key = user_key
        self.tools = []

    # -- hooks ---------------------------------------------------------------------

    def before_agent(self, state: TranscriptState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._record(state, get_config())

    async def abefore_agent(self, state: TranscriptState,
                            runtime: Runtime[Any]) -> dict[str, Any] | None:
        return await self._arecord(state)

    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
                        ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        update = self._record(request.state, get_config())  # stored before the call
        return _with_update(handler(request), update)

    async def awrap_model_call(
        self, request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        update = await self._arecord(request.state)
        return _with_update(await handler(request), update)

    def wrap_tool_call(self, request: ToolCallRequest,
                       handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
                       ) -> ToolMessage | Command[Any]:
        return self._storable(request, handler(request))

    async def awrap_tool_call(
        self, request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        return self._storable(request, await handler(request))

    def after_agent(self, state: TranscriptState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._record(state, get_config())

    async def aafter_agent(self, state: TranscriptState,
                           runtime: Runtime[Any]) -> dict[str, Any] | None:
        return await self._arecord(state)

    # -- writing -------------------------------------------------------------------

    def _record(self, state: Any, config: RunnableConfig) -> dict[str, Any] | None:
        session = self._session(config)
        if isinstance(session, AsyncSession):
            raise TypeError(
                f"{type(self).__name__} is on an async store: run the agent with ainvoke() "
                "or astream(), or give it a store from open_store()")
        step = plan(state["messages"], state, session.id)
        if step.empty:
            return None
        summary = (session.summarize(step.summary, through_seq=step.through_seq,
                                     expect_version=None, ledger=step.known["ledger"])
                   if step.summary is not None and step.through_seq >= 1 else None)
        with _named(step):
            batch = (session.append(step.batch, ledger=_ledger(step, summary))
                     if step.batch else None)
        return step.after(summary, batch, state_ids(state["messages"], session.id))

    async def _arecord(self, state: Any) -> dict[str, Any] | None:
        config = get_config()
        session = self._session(config)
        if isinstance(session, Session):  # a sync store: its calls block, so not on the loop
            return await asyncio.to_thread(self._record, state, config)
        step = plan(state["messages"], state, session.id)
        if step.empty:
            return None
        summary = (await session.summarize(step.summary, through_seq=step.through_seq,
                                           expect_version=None, ledger=step.known["ledger"])
                   if step.summary is not None and step.through_seq >= 1 else None)
        with _named(step):
            batch = (await session.append(step.batch, ledger=_ledger(step, summary))
                     if step.batch else None)
        return step.after(summary, batch, state_ids(state["messages"], session.id))

    def _storable(self, request: ToolCallRequest, result: ToolMessage | Command[Any],
                  ) -> ToolMessage | Command[Any]:
        """``result``, or InvalidMessage naming the tool when the transcript could not
        keep a message of it: raised here, the tool call fails and the result never
        reaches the state, where every later hook of the thread would meet it."""
        for message in _result_messages(result):
            if message is not None:
                try:
                    encode_batch([to_ledger(message)], self.store.options.max_message_bytes)
                except InvalidMessage as refused:
                    tool, call = request.tool_call["name"], request.tool_call["id"]
                    raise InvalidMessage(
                        f"the result of tool {tool!r} (call {call!r})"
                        f"{_langchain_field(refused.field.removeprefix('messages[0]'))}",
                        f"{refused.reason}; the transcript could not keep it") from None
        return result

    def _session(self, config: RunnableConfig) -> Session | AsyncSession:
        user = (config.get("configurable") or {}).get(self.user_key) if self.user_key else None
        return self.store.session(self.session_id(config),
                                  user=None if user is None else str(user))


def _thread_id(config: RunnableConfig) -> str:
    thread = (config.get("configurable") or {}).get("thread_id")
    if thread is None:
        raise ValueError("TranscriptMiddleware names the session after the run's thread_id: "
                         "give the run one (config={'configurable': {'thread_id': ...}}), "
                         "or give the middleware session_id=")
    return str(thread)


def _result_messages(result: ToolMessage | Command[Any]) -> list[BaseMessage | None]:
    """The messages a tool's result adds: itself, or a Command's ``messages`` update, in
    whichever form ``add_messages`` takes them (messages, dicts, ``(role, content)``
    pairs, strings); None for one it would refuse in its own words. (An agent's tools
    update a dict: LangGraph's ToolNode refuses other updates before they reach here.)"""
    if not isinstance(result, Command):
        return [result]
    found = result.update.get("messages", []) if isinstance(result.update, dict) else []
    return [_as_message(item) for item in (found if isinstance(found, list) else [found])]


def _as_message(item: Any) -> BaseMessage | None:
    if isinstance(item, BaseMessage):
        return item
    try:
        return convert_to_messages([item])[0]
    except (ValueError, TypeError, KeyError, NotImplementedError):
        return None  # add_messages refuses it in its own words


@contextmanager
def _named(step: Plan) -> Iterator[None]:
    """An InvalidMessage of the batch names the agent's message (its id and role),
    not its place in a batch the user never saw."""
    try:
        yield
    except InvalidMessage as refused:
        found = re.match(r"messages\[(\d+)\]", refused.field)
        if found is None or int(found[1]) >= len(step.batch):
            raise
        message = step.batch[int(found[1])]
        raise InvalidMessage(
            f"the agent's {message.role} message {message.id!r}"
            f"{_langchain_field(refused.field[found.end():])}",
            f"{refused.reason}; the transcript could not keep it") from None


def _langchain_field(path: str) -> str:
    """A path in a ledger message, as the LangChain message's field."""
    return path.replace(".metadata.langchain", "", 1)


def _ledger(step: Plan, summary: Any) -> str | None:
    """The ledger the batch must land on: the one the transcript has so far."""
    return summary.ledger if summary is not None else step.known["ledger"]


def _with_update(response: ModelResponse[Any], update: dict[str, Any] | None,
                 ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
    """The model's response, with the channel's update beside it (the handler
    always gives a plain ModelResponse: LangChain unwraps inner middleware's)."""
    if update is None:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update=update))
