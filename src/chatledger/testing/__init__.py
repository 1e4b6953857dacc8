"""Testing toolkit for chatledger: real fault injection, private Redis servers,
concurrency checks of your own code (``run_concurrently``, ``check_history``) and
of any LangGraph checkpointer (``check_checkpointer``).

Only the standard library and a ``redis-server`` binary are needed: nothing here
imports the optional redis-py driver, and ``check_checkpointer`` imports
LangGraph only when called.
"""

from .checker import check_history
from .checkpointer_report import CheckpointerReport, DuplicatedItem, Fork, LostTurn, Turn
from .checkpointers import check_checkpointer
from .cluster import RedisCluster
from .concurrency import ConcurrentRun, WorkerError, WorkersFailed, run_concurrently
from .proxy import FaultProxy
from .recorder import Recorder
from .records import AppendRecord, ReadRecord, SeenMessage, Window
from .redis_server import CommandArg, RedisCommandError, RedisServer, RespReply, free_port
from .report import Anomaly, Figures, HistoryReport, Latency
from .sentinel import SentinelGroup, SentinelServer

__all__ = [
    "Anomaly",
    "AppendRecord",
    "CheckpointerReport",
    "CommandArg",
    "ConcurrentRun",
    "DuplicatedItem",
    "FaultProxy",
    "Figures",
    "Fork",
    "HistoryReport",
    "Latency",
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
    "Turn",
    "Window",
    "WorkerError",
    "WorkersFailed",
    "check_checkpointer",
    "check_history",
    "free_port",
    "run_concurrently",
]
