"""Python objects a command is given by name: ``module:name`` (``name`` may be dotted)."""

from __future__ import annotations

import importlib
from typing import Any

from .failures import Unusable

__all__ = ["named_object", "serializer"]


def named_object(spec: str) -> Any:
    """The object ``module:name`` names (``name`` may be ``Class.method``); Unusable
    (exit 2) when there is none."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise Unusable(f"{spec!r} names no object: give module:name")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise Unusable(f"cannot find {spec}: {exc}") from exc
    return found


def serializer(spec: str) -> Any:
    """A LangGraph serializer named by ``spec``: one, or a callable that returns one
    (called with no arguments, e.g. ``EncryptedSerializer.from_pycryptodome_aes``,
    which reads its key from the environment, or a class). Unusable (exit 2) otherwise."""
    found = named_object(spec)
    # A class has the methods too, unbound: it is made, not used as one.
    if isinstance(found, type) or (not _is_serializer(found) and callable(found)):
        try:
            found = found()
        except Exception as exc:  # the factory's own: a missing key, a bad argument
            raise Unusable(f"cannot make the serializer {spec}: {type(exc).__name__}: "
                           f"{exc}") from exc
    if not _is_serializer(found):
        raise Unusable(f"{spec} is not a LangGraph serializer (it has no dumps_typed and "
                       "loads_typed), nor a callable that returns one")
    return found


def _is_serializer(value: Any) -> bool:
    return callable(getattr(value, "dumps_typed", None)) and callable(
        getattr(value, "loads_typed", None))
