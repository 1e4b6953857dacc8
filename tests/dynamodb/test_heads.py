"""heads on DynamoDB: the meta items of a page, then the entries they name, by
BatchGetItem; a session written or deleted between the two is read again alone."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from chatledger import user
from tests.dynamodb.conftest import Opener, interleave, native


def _after_the_meta_items(operation: str, kwargs: dict[str, Any], fired: list[Any]) -> bool:
    return operation == "batch_get_item" and not fired


async def _deleted_then(deleted: Any, session: Any, rewrite: bool) -> None:
    await deleted
    if rewrite:
        await session.append([user("a, written again")])


@pytest.mark.parametrize("rewrite", [False, True], ids=["deleted", "written-again"])
def test_a_session_changed_between_its_meta_and_its_entry_is_read_again(
    opener: Opener, rewrite: bool
) -> None:
    reader, writer = opener(), opener()
    reader.session("a").append([user("a, first")])
    reader.session("b").append([user("b")])

    def change() -> Any:
        session = native(writer).session("a")
        deleted = session.delete()
        if inspect.isawaitable(deleted):
            return _deleted_then(deleted, session, rewrite)
        if rewrite:
            session.append([user("a, written again")])
        return None

    fired = interleave(reader, _after_the_meta_items, change)
    page = reader._backend.heads("", None)
    assert len(fired) == 1
    heads = dict(page.heads)
    assert sorted(heads) == (["a", "b"] if rewrite else ["b"])
    if rewrite:  # the new ledger's entry, not the old one's
        assert heads["a"].ledger == reader.session("a").info().ledger  # type: ignore[union-attr]
        assert reader.session("a").read().messages[0].text == "a, written again"
