"""The migration example: the support agent on the chat-history path
(``ChatLedgerHistory`` and a hand-written tool loop), which LangChain deprecated.

New code: ``support_agent`` (``create_agent`` with ``LedgerSaver``). This one
is kept, tested, for apps still on ``RunnableWithMessageHistory`` or their own
loop over a chat history, to compare with before moving.
"""

from .agent import MEMORY_UNAVAILABLE, SupportAgent

__all__ = ["MEMORY_UNAVAILABLE", "SupportAgent"]
