"""The sync modules are exactly what scripts/unasync.py makes of the async sources."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _unasync() -> ModuleType:
    spec = importlib.util.spec_from_file_location("unasync", ROOT / "scripts" / "unasync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["unasync"] = module
    spec.loader.exec_module(module)
    return module


def test_every_sync_module_is_generated_from_its_async_source() -> None:
    unasync = _unasync()
    pairs = unasync.pairs()
    assert len(pairs) >= 8
    for source, target in pairs:
        assert target.read_text(encoding="utf-8") == unasync.generated_text(source), target
    assert unasync.strays() == []


def test_the_rewrites_turn_async_code_into_its_sync_twin() -> None:
    unasync = _unasync()
    lines = {
        "    async def append(self) -> Ack:\n": "    def append(self) -> Ack:\n",
        "        return await self._run(x)\n": "        return self._run(x)\n",
        "        async with self.client.pipeline() as pipe:\n":
            "        with self.client.pipeline() as pipe:\n",
        "class AsyncRedisBackend(AsyncBackend):\n": "class RedisBackend(Backend):\n",
        "from redis.asyncio.retry import Retry\n": "from redis.retry import Retry\n",
        "    await self.client.aclose()\n": "    self.client.close()\n",
        "op: Callable[[], Awaitable[T]]\n": "op: Callable[[], T]\n",
        "from .._async.x import ASYNC_CONNECTIONS\n": "from .._sync.x import CONNECTIONS\n",
        "from ..aio import AsyncDynamoClient\n": "from ..io import DynamoClient\n",
    }
    for source, expected in lines.items():
        assert unasync._rewritten(source) == expected


def test_check_reports_a_drifted_sync_module(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "src", copy / "src")
    shutil.copytree(ROOT / "scripts", copy / "scripts")
    unasync = _unasync()
    unasync.ROOT = copy
    assert unasync.main(["--check"]) == 0
    drifted = copy / "src/chatledger/_sync/store.py"
    drifted.write_text(drifted.read_text() + "# edited by hand\n")
    (copy / "src/chatledger/_sync/orphan.py").write_text("")
    assert unasync.main(["--check"]) == 1
    assert unasync.main([]) == 0  # regenerates, and removes the orphan
    assert not (copy / "src/chatledger/_sync/orphan.py").exists()
    assert unasync.main(["--check"]) == 0
