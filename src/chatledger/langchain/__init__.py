"""chatledger for LangChain: a loss-proof chat message history, and migration.

``ChatLedgerHistory`` is a drop-in ``BaseChatMessageHistory`` for
``RunnableWithMessageHistory`` and ``ConversationBufferMemory``;
:mod:`chatledger.langchain.migrate` imports what ``RedisChatMessageHistory``
wrote. Needs the ``langchain`` extra: ``pip install "chatledger[langchain]"``.
"""

from __future__ import annotations

try:
    import langchain_core  # noqa: F401 -- only to name the extra when it is missing
except ImportError as exc:
    raise ImportError(
        'chatledger.langchain needs langchain-core: pip install "chatledger[langchain]"'
    ) from exc

from .convert import from_ledger, to_ledger
from .history import ChatLedgerHistory
from .stores import close_shared_stores

__all__ = ["ChatLedgerHistory", "close_shared_stores", "from_ledger", "to_ledger"]
