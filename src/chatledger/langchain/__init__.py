"""chatledger for LangChain: the transcript of v1 agents, a loss-proof chat message
history, and migration.

``TranscriptMiddleware`` keeps every message of a ``create_agent`` agent in a
session while the agent's state is summarized or trimmed (needs the ``agents``
extra: ``pip install -e ".[agents]"``; imported on first use, so the rest of
this module needs langchain-core alone). ``ChatLedgerHistory`` is a drop-in
``BaseChatMessageHistory`` for ``RunnableWithMessageHistory`` and
``ConversationBufferMemory``, the path LangChain deprecated, kept for the apps
on it; ``migrate_from_langchain`` imports what ``RedisChatMessageHistory``
wrote. Needs the ``langchain`` extra: ``pip install -e ".[langchain]"`` in a checkout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from .._wording import install_hint as _install_hint

try:
    import langchain_core as _langchain_core  # noqa: F401 -- only to name the missing extra
except ImportError as exc:
    raise ImportError(
        f"chatledger.langchain needs langchain-core: {_install_hint('langchain')}",
        name=exc.name or "langchain_core",  # the missing module, as ModuleNotFoundError names it
    ) from exc

from .._langchain_messages import from_ledger, to_ledger
from ._history import ChatLedgerHistory
from ._migrate import MigrationReport, Undecodable, migrate_from_langchain
from ._stores import close_shared_stores

if _TYPE_CHECKING:  # pragma: no cover -- for type checkers: the import is lazy
    from ._transcript import TranscriptMiddleware

__all__ = [
    "ChatLedgerHistory",
    "MigrationReport",
    "TranscriptMiddleware",
    "Undecodable",
    "close_shared_stores",
    "from_ledger",
    "migrate_from_langchain",
    "to_ledger",
]


def __getattr__(name: str) -> _Any:
    """``TranscriptMiddleware``, imported on first use: it needs langchain itself."""
    if name != "TranscriptMiddleware":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        from ._transcript import TranscriptMiddleware  # noqa: PLC0415 -- the agents extra
    except ImportError as exc:
        raise ImportError(
            f"chatledger.langchain.TranscriptMiddleware needs langchain 1.x: "
            f"{_install_hint('agents')}", name=exc.name or "langchain") from exc
    return TranscriptMiddleware
