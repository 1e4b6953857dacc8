"""The pages' query parameters, checked: a bad one is a 400 that says why."""

from __future__ import annotations

from collections.abc import Mapping

from .._validation import check_key

__all__ = ["BadRequest", "choice", "number", "text"]


class BadRequest(ValueError):
    """A query parameter the page cannot use; its text is shown to the reader."""


def number(query: Mapping[str, str], name: str, default: int, *, low: int,
           high: int | None = None) -> int:
    """The whole number ``name`` in ``[low, high]``, or ``default`` when absent."""
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name} must be a whole number, got {raw!r}") from None
    if value < low or (high is not None and value > high):
        upper = "" if high is None else f" and at most {high}"
        raise BadRequest(f"{name} must be at least {low}{upper}, got {value}")
    return value


def choice(query: Mapping[str, str], name: str, options: tuple[str, ...]) -> str:
    """One of ``options`` (the first by default)."""
    raw = query.get(name) or options[0]
    if raw not in options:
        raise BadRequest(f"{name} must be one of {', '.join(options)}, got {raw!r}")
    return raw


def text(query: Mapping[str, str], name: str) -> str:
    """Literal text usable as a prefix of session ids ("" when absent)."""
    raw = query.get(name, "")
    try:
        return check_key(raw, name, empty=True)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
