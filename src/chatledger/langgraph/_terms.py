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
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

from .._errors import CorruptEntryError
from ._item_layout import item_words, split_item_session_id
from ._layout import ROOT_PREFIX, split_session_id, thread_words

__all__ = ["in_item_terms", "in_thread_terms", "item_terms", "thread_terms"]

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def in_thread_terms() -> Iterator[None]:
    """Reword a CorruptEntryError raised inside as the thread's (checkpointer)."""
    try:
        yield
    except CorruptEntryError as exc:
        _reword(exc, _thread_words(exc.session))
        raise


@contextmanager
def in_item_terms() -> Iterator[None]:
    """Reword a CorruptEntryError raised inside as the item's (LedgerStore)."""
    try:
        yield
    except CorruptEntryError as exc:
        found = split_item_session_id(exc.session)
        _reword(exc, None if found is None else item_words(*found))
        raise


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


def thread_terms(method: F) -> F:
    """``method`` (sync or async, a function or a generator) under :func:`in_thread_terms`."""
    return _under(in_thread_terms, method)


def item_terms(method: F) -> F:
    """``method`` (sync or async, a function or a generator) under :func:`in_item_terms`."""
    return _under(in_item_terms, method)


def _under(terms: Callable[[], AbstractContextManager[None]], method: F) -> F:
    if inspect.isasyncgenfunction(method):
        async def agen(*args: Any, **kwargs: Any) -> Any:
            with terms():
                async for item in method(*args, **kwargs):
                    yield item
        wrapped: Any = agen
    elif inspect.iscoroutinefunction(method):
        async def coro(*args: Any, **kwargs: Any) -> Any:
            with terms():
                return await method(*args, **kwargs)
        wrapped = coro
    elif inspect.isgeneratorfunction(method):
        def gen(*args: Any, **kwargs: Any) -> Any:
            with terms():
                yield from method(*args, **kwargs)
        wrapped = gen
    else:
        def call(*args: Any, **kwargs: Any) -> Any:
            with terms():
                return method(*args, **kwargs)
        wrapped = call
    return functools.wraps(method)(wrapped)  # type: ignore[return-value]
