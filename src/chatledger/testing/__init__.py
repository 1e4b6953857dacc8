"""Testing toolkit for chatledger: real fault injection, private Redis servers,
and concurrency checks of your own code (``run_concurrently``, ``check_history``).

Only the standard library and a ``redis-server`` binary are needed: nothing here
imports the optional redis-py driver.
"""

from .checker import check_history
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
    "CommandArg",
    "ConcurrentRun",
    "FaultProxy",
    "Figures",
    "HistoryReport",
    "Latency",
    "ReadRecord",
    "Recorder",
    "RedisCluster",
    "RedisCommandError",
    "RedisServer",
    "RespReply",
    "SeenMessage",
    "SentinelGroup",
    "SentinelServer",
    "Window",
    "WorkerError",
    "WorkersFailed",
    "check_history",
    "free_port",
    "run_concurrently",
]
