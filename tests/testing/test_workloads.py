"""The checker is not vacuous: the same workload of several processes appending
user+assistant turns to one session and reading it back, checked on LangChain's
RedisChatMessageHistory (which pushes messages one at a time, so turns tear) and
on chatledger (one atomic batch per turn: a clean report)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from chatledger import open_store
from chatledger.testing import RedisServer, check_history, run_concurrently
from tests.testing import _workloads

WORKERS = 4


def _prefix() -> str:
    return f"lc-{uuid.uuid4().hex[:8]}:"


def test_langchain_redis_history_tears_turns(redis: RedisServer) -> None:
    # Every process on the spawned server; interleaving is up to the scheduler,
    # so the turns are retried on a fresh key until processes collide (they do
    # on the first try on any machine seen so far).
    for _ in range(5):
        run = run_concurrently(_workloads.langchain_turns, WORKERS,
                               args=(redis.url, _prefix()), timeout=120)
        run.raise_errors()
        report = check_history(run.records)
        if report.counts.get("torn"):
            break
    assert set(report.counts) <= {"torn", "reordered"}, str(report)
    torn = report.of_kind("torn")
    assert torn and report.figures.appends_torn == len(torn)
    assert all(a.session == _workloads.SESSION and a.seqs for a in torn), str(report)
    assert "torn (" in str(report) and "not contiguous" in str(report)


@pytest.mark.parametrize("scheme", ["sqlite", "redis"])
def test_chatledger_keeps_every_turn_whole(scheme: str, redis: RedisServer,
                                           tmp_path: Path) -> None:
    namespace = f"wl-{uuid.uuid4().hex[:8]}"
    url = (f"sqlite:///{tmp_path}/ledger.db?namespace={namespace}" if scheme == "sqlite"
           else f"{redis.url}?namespace={namespace}")
    run = run_concurrently(_workloads.chatledger_turns, WORKERS, args=(url,), timeout=120)
    run.raise_errors()
    with open_store(url) as store:
        final = store.session(_workloads.SESSION).read()
    report = check_history(run.records, {_workloads.SESSION: final})
    assert report.ok, str(report)
    turns = WORKERS * _workloads.TURNS
    assert report.figures.appends_acknowledged == turns == final.version // 2
    assert report.figures.reads == turns
