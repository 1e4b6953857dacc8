"""A CorruptEntryError or SessionUserError in the words of its caller, not of the
saver's layout.

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

from .._errors import CorruptEntryError, SessionUserError
from ._item_layout import item_words, split_item_session_id
from ._layout import ROOT_PREFIX, split_session_id, thread_words

__all__ = ["item_terms", "thread_terms"]

F = TypeVar("F", bound=Callable[..., Any])


class _Terms:
    """Rewords a CorruptEntryError leaving it with ``words(session)``. A class, not a
    generator: it wraps every public call of the saver and the store, the hot path."""

    __slots__ = ("owner_words", "words")

    def __init__(self, words: Callable[[str], str | None],
                 owner_words: Callable[[str], str | None]) -> None:
        self.words = words
        self.owner_words = owner_words  # what a user tags: a whole thread, an item

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if isinstance(exc, CorruptEntryError):
            _reword(exc, self.words(exc.session))  # and it propagates, reworded
        elif isinstance(exc, SessionUserError):
            _reword_user(exc, self.owner_words(exc.session))


def _item_words(session: str) -> str | None:
    found = split_item_session_id(session)
    return None if found is None else item_words(*found)


def _reword(exc: CorruptEntryError, where: str | None) -> None:
    if where is not None:  # the args are the message (and what pickling keeps)
        exc.args = (f"{where}: a stored entry (seq {exc.seq}) cannot be decoded: "
                    f"{exc.reason}",)


def _reword_user(exc: SessionUserError, where: str | None) -> None:
    if where is not None:
        tagged = ("was written first without a user" if exc.owner is None
                  else f"belongs to user {exc.owner!r}")
        exc.args = (f"{where} {tagged}, not {exc.user!r}: its user is set by its first "
                    "write and never changes; nothing was stored",)


def _thread_words(session: str) -> str | None:
    split = split_session_id(session)
    if split is not None:
        return thread_words(*split)
    thread_id = _indexed_thread(session)
    return None if thread_id is None else (
        f"thread {thread_id!r} (its index of checkpoint namespaces)")


def _thread_of(session: str) -> str | None:
    """The thread a session is of: a user tags a whole thread, every namespace's."""
    split = split_session_id(session)
    thread_id = split[0] if split is not None else _indexed_thread(session)
    return None if thread_id is None else f"thread {thread_id!r}"


def _indexed_thread(session: str) -> str | None:
    """The thread whose index of namespaces ``session`` is, if it is one."""
    length, sep, thread_id = session[len(ROOT_PREFIX):].partition(":")
    if session.startswith(ROOT_PREFIX) and sep and length.isdigit() and (
            len(thread_id) == int(length)):
        return thread_id
    return None


# The checkpointer's: a thread and checkpoint_ns; LedgerStore's: an item's namespace and key.
_THREAD_TERMS = _Terms(_thread_words, _thread_of)
_ITEM_TERMS = _Terms(_item_words, _item_words)


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
