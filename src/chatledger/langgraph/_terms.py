"""A CorruptEntryError in the words of its caller, not of the saver's layout.

The ledger names the session it read (``lg:1:t:``, ``lgs/a/=k``); a user of the
checkpointer knows a thread and a checkpoint namespace, a user of LedgerStore
an item's namespace and key. The public methods of both reword the error as it
leaves them: same class, same ``session``, ``seq`` and ``reason``, a message in
the caller's terms.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextlib import AbstractContextManager, aclosing
from types import TracebackType
from typing import Any, TypeVar

from .._errors import CorruptEntryError
from ._item_layout import item_words, split_item_session_id
from ._layout import ROOT_PREFIX, split_session_id, thread_words

__all__ = ["item_terms", "thread_terms"]

F = TypeVar("F", bound=Callable[..., Any])


class _Terms:
    """Rewords a CorruptEntryError leaving it with ``words(session)``. A class, not a
    generator: it wraps every public call of the saver and the store, the hot path."""

    __slots__ = ("words",)

    def __init__(self, words: Callable[[str], str | None]) -> None:
        self.words = words

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if isinstance(exc, CorruptEntryError):
            _reword(exc, self.words(exc.session))  # and it propagates, reworded


def _item_words(session: str) -> str | None:
    found = split_item_session_id(session)
    return None if found is None else item_words(*found)


def _reword(exc: CorruptEntryError, where: str | None) -> None:
    if where is not None:  # the args are the message (and what pickling keeps)
        exc.args = (f"{where}: a stored entry (seq {exc.seq}) cannot be decoded: "
                    f"{exc.reason}",)


def _thread_words(session: str) -> str | None:
    split = split_session_id(session)
    if split is not None:
        return thread_words(*split)
    length, sep, thread_id = session[len(ROOT_PREFIX):].partition(":")
    if session.startswith(ROOT_PREFIX) and sep and length.isdigit() and (
            len(thread_id) == int(length)):  # the thread's index of its namespaces
        return f"thread {thread_id!r} (its index of checkpoint namespaces)"
    return None


_THREAD_TERMS = _Terms(_thread_words)  # the checkpointer's: a thread and checkpoint_ns
_ITEM_TERMS = _Terms(_item_words)  # LedgerStore's: an item's namespace and key


def thread_terms(method: F) -> F:
    """``method`` (sync or async, a function or a generator), its CorruptEntryError
    reworded as the thread's."""
    return _under(_THREAD_TERMS, method)


def item_terms(method: F) -> F:
    """``method`` (sync or async, a function or a generator), its CorruptEntryError
    reworded as the item's."""
    return _under(_ITEM_TERMS, method)


def _under(terms: AbstractContextManager[None], method: F) -> F:
    if inspect.isasyncgenfunction(method):
        async def agen(*args: Any, **kwargs: Any) -> Any:
            # aclosing: unlike yield from, async for does not close what it
            # iterates; a consumer's aclose() would leave the method's finally to
            # the collector, after aclose() returned.
            with terms:
                async with aclosing(method(*args, **kwargs)) as items:
                    async for item in items:
                        yield item
        wrapped: Any = agen
    elif inspect.iscoroutinefunction(method):
        async def coro(*args: Any, **kwargs: Any) -> Any:
            with terms:
                return await method(*args, **kwargs)
        wrapped = coro
    elif inspect.isgeneratorfunction(method):
        def gen(*args: Any, **kwargs: Any) -> Any:
            with terms:
                yield from method(*args, **kwargs)
        wrapped = gen
    else:
        def call(*args: Any, **kwargs: Any) -> Any:
            with terms:
                return method(*args, **kwargs)
        wrapped = call
    return functools.wraps(method)(wrapped)  # type: ignore[return-value]
