"""``chatledger bench``: what one agent turn costs on this store as the history grows."""

from __future__ import annotations

import secrets
import time
import warnings
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from .._sync.store import Store
from .._turn_cost import WINDOW, Row, Turn, conversation, fill, measure, pair, session_turn
from .._url import parse_url
from .._wording import install_hint
from .console import advance, console, note, print_json, progress
from .failures import Unusable
from .target import Target, target_options

REDIS_SCHEMES = ("redis", "rediss", "unix")
PEER = "RedisChatMessageHistory"


def _lengths(_: click.Context, __: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        lengths = tuple(sorted({int(part) for part in value.split(",") if part.strip()}))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of numbers") from None
    if not lengths or lengths[0] < 0:
        raise click.BadParameter("give at least one history length, none negative")
    return lengths


@click.command()
@target_options
@click.option("--lengths", default="10,1000,10000", show_default=True, callback=_lengths,
              help="History lengths to measure at, comma-separated.")
@click.option("--turns", type=click.IntRange(min=1), default=50, show_default=True,
              help="Timed turns at each length.")
@click.option("--warmup", type=click.IntRange(min=0), default=5, show_default=True,
              help="Untimed turns first.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE.png", help="Draw turn time against history length (matplotlib: "
                                       "pip install -e \".[plot]\" in a checkout).")
@click.option("--json", "as_json", is_flag=True, help="The figures as one JSON document.")
@click.pass_obj
def bench(target: Target, *, lengths: tuple[int, ...], turns: int, warmup: int,
          plot: Path | None, as_json: bool) -> None:
    """Time one agent turn (read the last 20 messages, append a pair) at several lengths.

    Sessions bench-<random>-... are filled to each length in the namespace,
    timed, and deleted at the end. On a Redis URL, langchain_community's
    RedisChatMessageHistory runs beside chatledger when it is installed
    (pip install -e ".[bench]" in a checkout). A turn should cost the same whatever
    the history length: the last line gives the ratio of the longest to the
    shortest.

    \b
    Example: chatledger bench --url redis://localhost:6379/0 --lengths 10,10000 --plot turns.png
    """
    draw = _plotter() if plot else None
    tag = f"bench-{secrets.token_hex(3)}-"
    with target.store() as store, ExitStack() as cleanup:
        cleanup.callback(store.purge, tag)
        contenders = {"chatledger": _chatledger(store, tag, lengths)}
        peer = _peer(target.url, tag, lengths, cleanup)
        if peer is not None:
            contenders[PEER] = peer
        rows = _run(contenders, turns, warmup)
    if draw is not None and plot is not None:
        draw(rows, plot, store.url)
    if as_json:
        print_json({"url": store.url, "window": WINDOW, "turns": turns, "rows": [
            {"contender": r.contender, "length": r.length, "median_us": round(r.median_us, 1),
             "p90_us": round(r.p90_us, 1)} for r in rows]})
    else:
        _table(rows)


def _chatledger(store: Store, tag: str, lengths: tuple[int, ...]) -> dict[int, Turn]:
    turns = {}
    with progress("filling histories", sum(lengths)) as bar:
        for length in lengths:
            session = store.session(f"{tag}{length}")
            if length:
                fill(session, conversation(length))
            turns[length] = session_turn(session)
            advance(bar, length)
    return turns


def _peer(url: str, tag: str, lengths: tuple[int, ...],
          cleanup: ExitStack) -> dict[int, Turn] | None:
    """RedisChatMessageHistory's turns on the same Redis, when it is installed."""
    if parse_url(url).scheme not in REDIS_SCHEMES:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "being sunset"
            from langchain_community.chat_message_histories import (  # noqa: PLC0415
                RedisChatMessageHistory,
            )
        from langchain_core.messages import AIMessage, HumanMessage  # noqa: PLC0415
    except ImportError:
        note(f"{PEER} not installed ({install_hint('bench')}): chatledger alone")
        return None

    def turn_on(history: Any) -> Turn:
        def turn(n: int) -> int:
            said, answer = (m.text for m in pair(n))
            messages = [HumanMessage(said), AIMessage(answer)]
            start = time.perf_counter_ns()
            _ = history.messages[-WINDOW:]  # it loads the whole list: the point of comparing
            history.add_messages(messages)
            return time.perf_counter_ns() - start
        return turn

    turns = {}
    for length in lengths:
        # redis-py reads the URL's query as its own options: chatledger's are not
        history = RedisChatMessageHistory(f"{length}", url=url.partition("?")[0],
                                          key_prefix=f"chatledger-{tag}")
        cleanup.callback(history.clear)
        history.add_messages([HumanMessage(m.text) if m.role == "user" else AIMessage(m.text)
                              for m in conversation(length)])
        turns[length] = turn_on(history)
    return turns


def _run(contenders: dict[str, dict[int, Turn]], timed: int, warmup: int) -> list[Row]:
    rows: list[Row] = []
    with progress("timing turns", (timed + warmup) * len(contenders)) as bar:
        for name, turns in contenders.items():
            rows += measure(name, turns, timed=timed, warmup=warmup,
                            progress=lambda: advance(bar))
    return rows


def _table(rows: list[Row]) -> None:
    out = console()
    width = max(len(row.contender) for row in rows)
    out.print(f"{'contender':<{width}}  {'history':>9}  {'median µs':>11}  {'p90 µs':>11}",
              style="bold")
    for row in rows:
        out.print(f"{row.contender:<{width}}  {row.length:>9,}  {row.median_us:>11,.1f}  "
                  f"{row.p90_us:>11,.1f}")
    for name in dict.fromkeys(row.contender for row in rows):
        mine = [row for row in rows if row.contender == name]
        ratio = mine[-1].median_us / mine[0].median_us
        out.print(f"{name}: median at {mine[-1].length:,} / at {mine[0].length:,} = {ratio:.2f}")


def _plotter() -> Any:
    """The plotting function, checked before the run: a missing extra fails fast."""
    try:
        from . import plot  # noqa: PLC0415 -- matplotlib is an optional extra
    except ImportError as exc:
        raise Unusable(f"--plot needs {exc.name}: {install_hint('plot')}") from None
    return plot.draw


COMMANDS = (bench,)
