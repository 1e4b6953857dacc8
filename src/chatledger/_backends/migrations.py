"""Schema versions: one mechanism for every backend that has a schema; no I/O.

A backend with a schema (SQLite, PostgreSQL) lists its steps oldest first in
a :class:`Migrations`: step 1 is the initial schema, step ``i`` makes schema
version ``i``. The store records the version it is at (SQLite in the file's
``user_version``, PostgreSQL in its ``schema_version`` table); the backend
reads it, asks :meth:`Migrations.pending` which steps to apply, applies them
in one transaction under a lock of its own, and records the new version.

A store at a version this code does not know (written by a newer chatledger)
is refused, never read, with a ConfigError that says so. Redis and DynamoDB have no
schema: their layout is the one this code writes, and a later layout would
add a marker whose absence means this one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from .._errors import ConfigError

__all__ = ["Migrations"]

Step = TypeVar("Step")


@dataclass(frozen=True)
class Migrations(Generic[Step]):
    """One backend's schema steps, oldest first: ``steps[i]`` makes version ``i + 1``."""

    steps: Sequence[Step]

    @property
    def current(self) -> int:
        """The schema version this code reads and writes."""
        return len(self.steps)

    def pending(self, found: int, where: str) -> list[tuple[int, Step]]:
        """The steps a store at version ``found`` lacks, each with the version it makes.

        Raises ConfigError for a store newer than this code (``where`` names it).
        """
        self.check_not_newer(found, where)
        return [(version, self.steps[version - 1])
                for version in range(found + 1, self.current + 1)]

    def check_not_newer(self, found: int, where: str) -> None:
        """Raise ConfigError unless this code knows version ``found``."""
        if found > self.current:
            raise ConfigError(f"{where}: the chatledger schema is at version {found}, newer "
                              f"than this chatledger's {self.current}: upgrade chatledger")
