"""The append's ``bytea[]`` parameters, built in binary form, arrive as the lists they are."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from chatledger._backends.postgres.arrays import bytea_array, register


@pytest.mark.parametrize("items", [[], [b""], [b"a"], [b"one", b"\x00\xff two", b"x" * 70_000]])
def test_a_bytea_array_arrives_as_the_list_it_holds(raw: psycopg.Connection[Any],
                                                     items: list[bytes]) -> None:
    register(raw)
    row = raw.execute("SELECT %s, cardinality(%s), array_lower(%s, 1)",
                      [bytea_array(items)] * 3).fetchone()
    assert row is not None
    found, count, lower = row
    assert [bytes(item) for item in found] == items
    assert count == len(items)
    assert lower == (1 if items else None)  # a list of PostgreSQL's kind: from 1


def test_a_connection_not_told_of_the_arrays_refuses_them(raw: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.ProgrammingError, match="ByteaArray"):
        raw.execute("SELECT %s", [bytea_array([b"a"])])
