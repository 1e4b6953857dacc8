"""Under xdist, the costly tests (marked ``slow``) are handed out first, one at a time.

In the files' order the suite's longest tests (the Redis failovers, the support
agent's processes) came near the end, where one worker ran them while the others
had nothing left: a core idle for the length of the last long test. Handed out
longest first, each to the next free worker, the short tests fill in at the end
and the workers finish together. A run in one process keeps the files' order.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # xdist's load scheduling sends each worker a first batch of a quarter of its share,
    # consecutive tests: with the costly ones first, one worker would get them all. One
    # test at a time (unless the command line says otherwise) gives each the next.
    if getattr(config.option, "maxschedchunk", False) is None:
        config.option.maxschedchunk = 1


@pytest.hookimpl(trylast=True)  # after pytest's own reordering and the deselections
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts the same way
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
