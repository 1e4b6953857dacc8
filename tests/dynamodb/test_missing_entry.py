"""An entry item lost under the store (deleted by hand, or by a tool) is loud on
DynamoDB as on SQLite: a read whose window lacks it raises CorruptEntryError naming
its seq at once, where it read the window again and again as if a trim were racing
it and then gave up with BackendUnavailable; reads around it still answer."""

from __future__ import annotations

from typing import Any

import pytest

from chatledger import CorruptEntryError, Keyring, open_store, user
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


def test_a_read_racing_a_reseal_of_an_entry_in_parts_reads_it_again(
        dynamodb_url: str, namespace: str) -> None:
    """A reseal rewrites an entry's parts under a new token and leaves the meta as it
    was: a read between its Query and its parts' read meets a gap at the same meta,
    which only a second read finds again (a loss) or not (a reseal)."""
    old, new = Keyring.new_key(), Keyring.new_key()
    options: dict[str, Any] = {"namespace": namespace, "max_message_bytes": 2_000_000}
    with open_store(dynamodb_url, encryption=Keyring({"a": old}, current="a"), **options) as s:
        s.session("s").append([user("x" * 800_000)])
    keyring = Keyring({"b": new, "a": old}, current="b")
    with open_store(dynamodb_url, encryption=keyring, **options) as reader, \
            open_store(dynamodb_url, encryption=keyring, **options) as rotator:
        backend: Any = reader._backend
        parts_read = backend._get_many
        rotated: list[Any] = []

        def reseal_first(session: str, keys: list[str]) -> Any:
            if not rotated and any(key.startswith("p") for key in keys):
                rotated.append(rotator.rotate_key())
            return parts_read(session, keys)

        backend._get_many = reseal_first
        assert len(reader.session("s").read().messages[0].text) == 800_000
    assert [report.resealed for report in rotated] == [1]
