"""What `chatledger.testing` exports, and that importing it needs no redis driver
(and no pytest: the concurrency tools serve a CLI command too; and no LangGraph
until ``check_checkpointer`` is called)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import chatledger.testing
from chatledger.testing import (
    checker,
    checkpointer_report,
    checkpointers,
    cluster,
    concurrency,
    proxy,
    recorder,
    records,
    redis_server,
    report,
    sentinel,
)

SRC_DIR = Path(chatledger.testing.__file__).resolve().parents[2]


def test_the_public_names_are_pinned() -> None:
    assert sorted(chatledger.testing.__all__) == [
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


def test_the_package_exports_the_same_objects_as_the_modules() -> None:
    assert chatledger.testing.FaultProxy is proxy.FaultProxy
    assert chatledger.testing.RedisServer is redis_server.RedisServer
    assert chatledger.testing.RedisCommandError is redis_server.RedisCommandError
    assert chatledger.testing.free_port is redis_server.free_port
    assert chatledger.testing.SentinelGroup is sentinel.SentinelGroup
    assert chatledger.testing.RedisCluster is cluster.RedisCluster
    assert chatledger.testing.SentinelServer is sentinel.SentinelServer
    assert chatledger.testing.Recorder is recorder.Recorder
    assert chatledger.testing.AppendRecord is records.AppendRecord
    assert chatledger.testing.run_concurrently is concurrency.run_concurrently
    assert chatledger.testing.check_history is checker.check_history
    assert chatledger.testing.HistoryReport is report.HistoryReport
    assert chatledger.testing.check_checkpointer is checkpointers.check_checkpointer
    assert chatledger.testing.CheckpointerReport is checkpointer_report.CheckpointerReport
    assert all(hasattr(chatledger.testing, name) for name in chatledger.testing.__all__)


def test_importing_the_kit_works_without_redis_py() -> None:
    # A fresh interpreter where `import redis` fails, as without the [redis] extra.
    code = """
        import sys
        sys.modules["redis"] = None
        import chatledger.testing
        from chatledger.testing import FaultProxy, RedisServer, SentinelGroup, free_port
        from chatledger.testing import check_history, run_concurrently, check_checkpointer
        drivers = ("redis", "hiredis", "pytest", "_pytest", "langgraph")
        print(sorted(n for n, m in sys.modules.items() if m and n.split(".")[0] in drivers))
    """
    path = os.pathsep.join([str(SRC_DIR), os.environ.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env={**os.environ, "PYTHONPATH": path},
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
