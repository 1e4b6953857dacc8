"""chatledger for LangChain: a loss-proof chat message history, and migration.

``ChatLedgerHistory`` is a drop-in ``BaseChatMessageHistory`` for
``RunnableWithMessageHistory`` and ``ConversationBufferMemory``;
``migrate_from_langchain`` imports what ``RedisChatMessageHistory`` wrote.
Needs the ``langchain`` extra: ``pip install -e ".[langchain]"`` in a checkout.
"""

from __future__ import annotations

from .._wording import install_hint as _install_hint

try:
    import langchain_core as _langchain_core  # noqa: F401 -- only to name the missing extra
except ImportError as exc:
    raise ImportError(
        f"chatledger.langchain needs langchain-core: {_install_hint('langchain')}",
        name=exc.name or "langchain_core",  # the missing module, as ModuleNotFoundError names it
    ) from exc

from ._convert import from_ledger, to_ledger
from ._history import ChatLedgerHistory
from ._migrate import MigrationReport, Undecodable, migrate_from_langchain
from ._stores import close_shared_stores

__all__ = [
    "ChatLedgerHistory",
    "MigrationReport",
    "Undecodable",
    "close_shared_stores",
    "from_ledger",
    "migrate_from_langchain",
    "to_ledger",
]
