"""An entry item lost under the store (deleted by hand, or by a tool) is loud on
DynamoDB as on SQLite: a read whose window lacks it raises CorruptEntryError naming
its seq at once, where it read the window again and again as if a trim were racing
it and then gave up with BackendUnavailable; reads around it still answer."""

from __future__ import annotations

from typing import Any

import pytest

from chatledger import CorruptEntryError, user
from chatledger._backends.dynamodb.layout import entry_key, partition
from tests.dynamodb.conftest import Opener, items


def _delete(raw: Any, url: str, namespace: str, sort_key: str) -> None:
    table = url.split("://", 1)[1].split("?", 1)[0]
    raw.delete_item(TableName=table, Key={"pk": {"S": partition(namespace, "s")},
                                          "sk": {"S": sort_key}})


@pytest.mark.parametrize("read", [{}, {"last": 5}, {"after": 1, "limit": 3},
                                  {"max_tokens": 10_000}])
def test_a_window_lacking_an_entry_names_it(opener: Opener, raw: Any, dynamodb_url: str,
                                            namespace: str, read: dict[str, Any]) -> None:
    store = opener()
    store.session("s").append([user(f"m{n}") for n in range(1, 7)])
    _delete(raw, dynamodb_url, namespace, entry_key(3))
    with pytest.raises(CorruptEntryError, match="lost under the store") as lost:
        store.session("s").read(**read)
    assert (lost.value.session, lost.value.seq) == ("s", 3)
    assert [m.text for m in store.session("s").read(last=3)] == ["m4", "m5", "m6"]
    assert [m.text for m in store.session("s").read(after=3)] == ["m4", "m5", "m6"]


def test_an_entry_lacking_a_part_is_named(opener: Opener, raw: Any, dynamodb_url: str,
                                          namespace: str) -> None:
    store = opener()
    big = "x" * 600_000  # over an item's 400 KB: stored in parts
    store.session("s").append([user("m1"), user(big), user("m3")])
    mine = partition(namespace, "s")
    part = next(i["sk"]["S"] for i in items(raw, dynamodb_url)
                if i["pk"]["S"] == mine and i["sk"]["S"].startswith("p"))
    _delete(raw, dynamodb_url, namespace, part)
    with pytest.raises(CorruptEntryError) as lost:
        store.session("s").read()
    assert lost.value.seq == 2
    assert [m.text for m in store.session("s").read(last=1)] == ["m3"]
