"""chatledger for LangGraph: a checkpointer that never forks a thread silently.

``LedgerSaver`` (sync) and ``AsyncLedgerSaver`` implement LangGraph's
``BaseCheckpointSaver`` on any chatledger store: ``memory://``, ``sqlite://``,
plain Redis (no modules), Sentinel and Cluster. A put whose parent is not the
thread's latest checkpoint raises ``CheckpointConflict`` (a ``ConflictError``)
instead of forking the thread, unless the run asked for that fork (time
travel). A config naming the checkpoint the application last saw
(``known_checkpoint_id``, see ``thread_config``) makes a thread that lost it
raise ``CheckpointLost`` (a ``MemoryLostError``) instead of starting over; a
state value the serializer would alter (a lone surrogate) raises
``InvalidStateValue`` before anything is stored. ``ThreadRuns`` and
``AsyncThreadRuns`` run a graph one run at a time per thread, across
processes, as LangGraph Platform's ``multitask_strategy`` ``"reject"``
(``ThreadBusy``) or ``"enqueue"``. ``copy_threads`` (``acopy_threads``) brings
threads over from any other saver, and ``compare_threads``
(``acompare_threads``) checks the copy. ``LedgerStore`` and
``AsyncLedgerStore`` implement LangGraph's ``BaseStore`` (long-term memory) on
the same stores; ``copy_items`` (``acopy_items``) brings items over from any
other store. Needs the ``langgraph`` extra: ``pip install -e ".[langgraph]"``
in a checkout.
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

from ._async.copy import acompare_threads, acopy_threads
from ._async.item_copy import acopy_items
from ._async.item_store import AsyncLedgerStore
from ._async.runs import AsyncThreadRuns
from ._async.saver import AsyncLedgerSaver
from ._chain import CheckpointConflict
from ._copying import CopyReport, ThreadCopy, ThreadDifference
from ._exact import InvalidStateValue
from ._item_copying import ItemCopyReport
from ._loss import CheckpointLost, alatest_checkpoint_id, latest_checkpoint_id, thread_config
from ._runs import LeaseLost, ThreadBusy
from ._sync.copy import compare_threads, copy_threads
from ._sync.item_copy import copy_items
from ._sync.item_store import LedgerStore
from ._sync.runs import ThreadRuns
from ._sync.saver import LedgerSaver

__all__ = [
    "AsyncLedgerSaver",
    "AsyncLedgerStore",
    "AsyncThreadRuns",
    "CheckpointConflict",
    "CheckpointLost",
    "CopyReport",
    "InvalidStateValue",
    "ItemCopyReport",
    "LeaseLost",
    "LedgerSaver",
    "LedgerStore",
    "ThreadBusy",
    "ThreadCopy",
    "ThreadDifference",
    "ThreadRuns",
    "acompare_threads",
    "acopy_items",
    "acopy_threads",
    "alatest_checkpoint_id",
    "compare_threads",
    "copy_items",
    "copy_threads",
    "latest_checkpoint_id",
    "thread_config",
]
