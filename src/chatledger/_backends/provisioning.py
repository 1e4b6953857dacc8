"""What a backend sets up when it opens, as the command line reads it back.

``chatledger migrate-schema`` opens a PostgreSQL store with ``migrate=true``,
``chatledger create-table`` a DynamoDB one with ``create=true``; each then
reports what opening did. A backend that provisions its storage this way has
the attributes of one of these protocols, so the command line narrows the
store's backend to it (``isinstance``) and reads them typed, never guessing
at a backend's attributes.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["CreatesTable", "MigratesSchema"]


@runtime_checkable
class MigratesSchema(Protocol):
    """A backend with a versioned schema (PostgreSQL; see :mod:`.migrations`)."""

    migrated: list[int]
    """The schema versions ``open()`` applied (none: it was up to date, or not asked to)."""

    schema_version: int
    """The version the schema is at, as ``open()`` found or left it."""


@runtime_checkable
class CreatesTable(Protocol):
    """A backend with a table of its own (DynamoDB)."""

    table: str
    """The table's name."""

    created: bool
    """Whether ``open()`` created it (``create=true`` on a missing table)."""
