"""Testing toolkit for chatledger: real fault injection, private Redis servers,
concurrency checks of your own code (``run_concurrently``, ``check_history``), of
any LangGraph checkpointer (``check_checkpointer``) or store (``check_store``) and
of a deployment under faults (``verify_deployment``, which ``chatledger verify`` runs).

Only the standard library and a ``redis-server`` binary are needed: nothing here
imports the optional redis-py driver, and ``check_checkpointer`` imports
LangGraph only when called (so does ``check_store``).
"""

from ._checker import check_history
from ._checkpointer_report import CheckpointerReport, DuplicatedItem, Fork, LostTurn, Turn
from ._checkpointers import check_checkpointer
from ._cluster import RedisCluster
from ._concurrency import ConcurrentRun, WorkerError, WorkersFailed, run_concurrently
from ._fault_schedule import Fault
from ._ledger_faults import LedgerFaults
from ._ledger_probe import LedgerProbe
from ._proxy import FaultProxy
from ._recorder import Recorder
from ._records import AppendRecord, ReadRecord, SeenMessage, SummaryRecord, Window
from ._redis_server import CommandArg, RedisCommandError, RedisServer, RespReply, free_port
from ._report import Anomaly, Figures, HistoryReport, Latency
from ._sentinel import SentinelGroup, SentinelServer
from ._store_report import ClauseVerdict, StoreReport
from ._stores import check_store
from ._verify import Verification, verify_deployment

__all__ = [
    "Anomaly",
    "AppendRecord",
    "CheckpointerReport",
    "ClauseVerdict",
    "CommandArg",
    "ConcurrentRun",
    "DuplicatedItem",
    "Fault",
    "FaultProxy",
    "Figures",
    "Fork",
    "HistoryReport",
    "Latency",
    "LedgerFaults",
    "LedgerProbe",
    "LostTurn",
    "ReadRecord",
    "Recorder",
    "RedisCluster",
    "RedisCommandError",
    "RedisServer",
    "RespReply",
    "SeenMessage",
    "SentinelGroup",
    "SentinelServer",
    "StoreReport",
    "SummaryRecord",
    "Turn",
    "Verification",
    "Window",
    "WorkerError",
    "WorkersFailed",
    "check_checkpointer",
    "check_history",
    "check_store",
    "free_port",
    "run_concurrently",
    "verify_deployment",
]
