"""chatledger for LangGraph: a checkpointer that never forks a thread silently.

``LedgerSaver`` (sync) and ``AsyncLedgerSaver`` implement LangGraph's
``BaseCheckpointSaver`` on any chatledger store: ``memory://``, ``sqlite://``,
plain Redis (no modules), Sentinel and Cluster. A put whose parent is not the
thread's latest checkpoint raises ``CheckpointConflict`` (a ``ConflictError``)
instead of forking the thread, unless the run asked for that fork (time
travel). ``LedgerStore`` and ``AsyncLedgerStore`` implement LangGraph's
``BaseStore`` (long-term memory) on the same stores. Needs the ``langgraph``
extra: ``pip install -e ".[langgraph]"`` in a checkout.
"""

from __future__ import annotations

from .._wording import install_hint as _install_hint

try:
    import langgraph.checkpoint.base as _checkpoint_base  # noqa: F401 -- names the missing extra
except ImportError as exc:  # pragma: no cover -- the test environment has it
    raise ImportError(
        f"chatledger.langgraph needs langgraph-checkpoint: {_install_hint('langgraph')}",
        name=exc.name or "langgraph",  # the missing module, as ModuleNotFoundError names it
    ) from exc

from ._async.item_store import AsyncLedgerStore
from ._async.saver import AsyncLedgerSaver
from ._chain import CheckpointConflict
from ._sync.item_store import LedgerStore
from ._sync.saver import LedgerSaver

__all__ = ["AsyncLedgerSaver", "AsyncLedgerStore", "CheckpointConflict", "LedgerSaver",
           "LedgerStore"]
