#!/usr/bin/env python3
"""Generate the sync modules from their async sources, as httpcore does.

The async code is the source: every ``_async/`` folder of the package has a ``_sync/``
twin made from it by the word-for-word rewrites of ``RULES``. Edit the async
module and run this script; ``--check`` (run by ``scripts/check`` and so by
CI) fails when a generated file differs from what its source makes, so the
two can never drift.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Every ``_async`` folder of the package: a new one (a backend's) needs no entry here.
FOLDERS = sorted(str(path.relative_to(ROOT))
                 for path in (ROOT / "src" / "chatledger").rglob("_async") if path.is_dir())

# (pattern, replacement), applied in order to every line.
RULES = [
    (r"\bAbstractAsyncContextManager\b", "AbstractContextManager"),
    (r"\basynccontextmanager\b", "contextmanager"),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\bAwaitable\[(\w+)\]", r"\1"),
    (r"\bAwaitable, ", ""),
    (r"\bStopAsyncIteration\b", "StopIteration"),
    # The async saver's hand-written additions (langgraph/_bridge.py): sync calls
    # bridged to its loop, and a from_url that is awaited or entered.
    (r"^from \.\._bridge import AsyncOpening, LoopBridge$", "from .._sync_only import SyncOnly"),
    (r"\bLoopBridge, ", "SyncOnly, "),  # async methods refused by name (langgraph/_sync_only.py)
    (r"\bAsyncOpening\[(\w+)\]", r"\1"),
    (r"return AsyncOpening\((.*)\)$", r"return \1"),
    (r"\bAsync([A-Z]\w*)", r"\1"),  # AsyncStore -> Store, AsyncRedisBackend -> RedisBackend
    (r"\bopen_async_store(_once)?\b", r"open_store\1"),
    (r"\bbuild_async_backend\b", "build_backend"),
    (r"\bacall_with_retry\b", "call_with_retry"),
    (r"\bASYNC_(\w+)", r"\1"),  # ASYNC_CONNECTIONS -> CONNECTIONS
    (r"\b_async\b", "_sync"),
    (r"\basynchronous\b", "synchronous"),
    (r"\basync def\b", "def"),
    (r"\basync with\b", "with"),
    (r"\basync for\b", "for"),
    (r"\bawait ", ""),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\baclose\b", "close"),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"\bainvoke\b", "invoke"),  # a LangChain Runnable's call
    (r"\bastream\b", "stream"),
    (r"\bahold\b", "hold"),  # ThreadRuns: hold a thread's lease
    (r"\.asettled\(", ".settled("),  # EarlyWrites: wait without blocking the loop
    (r"\batask_paths\b", "task_paths"),  # a source saver's task paths (langgraph/_task_paths.py)
    (r"\baabort_at_deadline\b", "abort_at_deadline"),  # postgres: a loop timer, a thread
    (r"\bredis\.asyncio\b", "redis"),  # the driver: redis.asyncio.retry -> redis.retry
    (r"(?<=\.\.)aio\b", "io"),  # the DynamoDB seam: dynamodb/aio.py (aiobotocore) -> io.py (boto3)
    # LangGraph's checkpointer methods: aput -> put, alist -> list, ...
    (r"\ba(get_tuple|list|put_writes|put|delete_thread|delete_for_runs|copy_thread|prune"
     r"|get_delta_channel_history)\b",
     r"\1"),
    (r"\ba(copy_threads|compare_threads)\b", r"\1"),  # langgraph/_async/copy.py
    (r"\ba(copy_items|read_source)\b", r"\1"),  # langgraph/_async/item_copy.py
    (r"\ba(iter|next)\(", r"\1("),  # aiter(...), anext(...): iter(...), next(...)
    # LangGraph's store and embeddings: abatch -> batch, aget -> get, aembed_query -> embed_query.
    (r"\ba(batch|get|embed_documents|embed_query)\b", r"\1"),
]
_COMPILED = [(re.compile(pattern), replacement) for pattern, replacement in RULES]
_DROPPED_LINES = {
    "import asyncio\n",
    "from .._bridge import AsyncOpening\n",
    "        self.bind_loop()\n",
}


def generated_text(source: Path) -> str:
    """The sync module that ``source`` makes."""
    relative = source.relative_to(ROOT)
    lines = [f"# Generated from {relative} by scripts/unasync.py: edit that file, not this one.\n"]
    for line in source.read_text(encoding="utf-8").splitlines(keepends=True):
        if line not in _DROPPED_LINES:
            lines.append(_rewritten(line))
    return "".join(lines)


def _rewritten(line: str) -> str:
    for pattern, replacement in _COMPILED:
        line = pattern.sub(replacement, line)
    return line


def pairs() -> list[tuple[Path, Path]]:
    """Every async source and the sync file generated from it."""
    found = []
    for folder in FOLDERS:
        source_dir = ROOT / folder
        target_dir = source_dir.parent / "_sync"
        found += [(source, target_dir / source.name) for source in sorted(source_dir.glob("*.py"))]
    return found


def strays() -> list[Path]:
    """Files in a ``_sync`` folder that no source makes (a source was removed)."""
    made = {target for _, target in pairs()}
    return [path for folder in FOLDERS
            for path in sorted((ROOT / folder).parent.joinpath("_sync").glob("*.py"))
            if path not in made]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for source, target in pairs():
        text = generated_text(source)
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        stale.append(target)
        if not check:
            target.parent.mkdir(exist_ok=True)
            target.write_text(text, encoding="utf-8")
    for stray in strays():
        stale.append(stray)
        if not check:
            stray.unlink()
    for path in stale:
        verb = "differs from its async source" if check else "regenerated"
        print(f"{path.relative_to(ROOT)}: {verb}")
    if check and stale:
        print("run scripts/unasync.py and commit the result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
