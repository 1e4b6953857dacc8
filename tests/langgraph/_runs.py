"""A graph run through the sync saver, or through the async one on the background loop.

The tests hold ``LedgerSaver`` or ``BlockingSaver`` (the async saver behind
sync method names, ``_blocking.py``); a graph on the async saver runs its
``a``-methods on the loop that saver lives on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatledger.langgraph import alatest_checkpoint_id, latest_checkpoint_id
from tests.blocking import _the_loop
from tests.langgraph._blocking import BlockingSaver
from tests.langgraph._graphs import agent_graph

__all__ = ["latest", "run"]


def run(saver: Any, method: str, *args: Any, graph: Callable[[Any], Any] = agent_graph,
        **kwargs: Any) -> Any:
    """``graph(saver).<method>(...)``; on the async saver, ``a<method>`` on its loop."""
    if isinstance(saver, BlockingSaver):
        compiled = graph(saver.saver)
        return _the_loop().run(getattr(compiled, "a" + method)(*args, **kwargs))
    return getattr(graph(saver), method)(*args, **kwargs)


def latest(saver: Any, config: Any) -> str | None:
    """The thread's latest checkpoint id, read as a web service would after a turn."""
    if isinstance(saver, BlockingSaver):
        return _the_loop().run(alatest_checkpoint_id(agent_graph(saver.saver), config))
    return latest_checkpoint_id(agent_graph(saver), config)
