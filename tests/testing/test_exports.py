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

SRC_DIR = Path(chatledger.testing.__file__).resolve().parents[2]


def test_the_public_names_are_pinned() -> None:
    assert sorted(chatledger.testing.__all__) == [
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


def test_importing_the_kit_works_without_redis_py() -> None:
    # A fresh interpreter where `import redis` fails, as without the [redis] extra.
    code = """
        import sys
        sys.modules["redis"] = None
        import chatledger.testing
        from chatledger.testing import FaultProxy, RedisServer, SentinelGroup, free_port
        from chatledger.testing import check_history, run_concurrently, check_checkpointer
        from chatledger.testing import check_store, StoreReport
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
