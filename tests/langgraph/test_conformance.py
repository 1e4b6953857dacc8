"""LangGraph's own conformance suite (langgraph-checkpoint-conformance) on every backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from chatledger.langgraph import AsyncLedgerSaver
from tests.langgraph.conftest import backend_url


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis", "sentinel", "cluster", "postgres",
                                  "dynamodb"])
def test_the_async_saver_passes_langgraph_conformance_in_full(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    def fresh_url() -> str:
        """A store of its own for each capability's suite, as LangGraph opens a fresh
        saver for each: a namespace, on moto's DynamoDB a table (its reads walk a
        whole table, and one shared by every suite made the last ones slow)."""
        if kind == "dynamodb":
            return str(request.getfixturevalue("dynamodb_server").table_url())
        return backend_url(kind, request, tmp_path)

    @checkpointer_test(name=f"AsyncLedgerSaver-{kind}")
    async def factory() -> AsyncIterator[AsyncLedgerSaver]:
        saver = await AsyncLedgerSaver.from_url(fresh_url())
        yield saver
        await saver.aclose()

    report = asyncio.run(validate(factory))

    failures = {cap: result.failures for cap, result in report.results.items() if result.failures}
    assert failures == {}
    # Every capability, the newer ones included, was detected and run, none skipped.
    assert set(report.results) == {cap.value for cap in ALL_CAPABILITIES}
    assert all(result.detected and result.passed for result in report.results.values())
    assert report.passed_all()
