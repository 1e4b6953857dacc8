"""LedgerStore's embeddings in a pgvector column: the table, its statements; no I/O.

An optional capability of the PostgreSQL backend, found when it opens
(:mod:`._async.vectors`): where the ``vector`` extension is created
in the database, the embeddings of each item version are also kept in::

    item_vectors(ns, sid, seq, path) -> embedding vector, expires double precision

one row per embedded field of the item entry at ``seq`` (``expires``: the
item's own expiry, stamped in its entry); a put's rows replace those of the
item's older versions. The row references its entry
(``ON DELETE CASCADE``): a delete, a trim or a sweep of the entry drops it, so
no row outlives its item version. It is written in the transaction of the
append storing the entry, by the backend, from what the append's caller put in
:data:`..vectors.PENDING`: an item and its vectors are never out of step. A search joins
the rows at each session's ``version`` (the newest entry, the item's current
version) and orders by distance there; the items with no rows there (without
embeddings, or whose entries came by another path than a put: an import, a
store before pgvector) are listed for LedgerStore to score (:attr:`VectorStatements.unrowed`).

Ids under a prefix are a range on ``sid`` ("C" collation), never ``LIKE``:
labels holding ``%`` or ``_`` need no escaping.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["VectorStatements"]

# The score of one row (higher is closer), as PostgresStore computes it.
_SCORES = {"cosine": "1 - (v.embedding OPERATOR({x}.<=>) q.q)",
           "l2": "-(v.embedding OPERATOR({x}.<->) q.q)",
           "inner_product": "-(v.embedding OPERATOR({x}.<#>) q.q)"}


@dataclass(frozen=True)
class VectorStatements:
    """The statements on ``item_vectors`` in schema ``schema`` (quoted), the
    extension's types and operators in ``extension`` (quoted)."""

    schema: str
    extension: str

    def _in(self, text: str) -> str:
        return text.replace("{s}", self.schema).replace("{x}", self.extension)

    @property
    def create(self) -> str:
        return self._in(
            "CREATE TABLE IF NOT EXISTS {s}.item_vectors ("
            " ns text COLLATE \"C\" NOT NULL, sid text COLLATE \"C\" NOT NULL,"
            " seq bigint NOT NULL, path text NOT NULL, embedding {x}.vector NOT NULL,"
            " expires double precision,"
            " PRIMARY KEY (ns, sid, seq, path),"
            " FOREIGN KEY (ns, sid, seq) REFERENCES {s}.entries ON DELETE CASCADE)")

    @property
    def insert(self) -> str:
        """The rows of the entry at ``seq``, if it holds message ``msg_id`` (None: it
        does, the caller inserted it): a look or a wrong guess writes nothing. The
        rows of the item's older versions go: a search reads only the newest."""
        return self._in(
            "WITH written AS (SELECT %(msg_id)s::bytea IS NULL OR EXISTS (SELECT 1"
            " FROM {s}.message_ids WHERE ns = %(ns)s AND sid = %(sid)s"
            " AND msg_id = %(msg_id)s AND seq = %(seq)s) AS yes),"
            " older AS (DELETE FROM {s}.item_vectors WHERE ns = %(ns)s AND sid = %(sid)s"
            " AND seq < %(seq)s AND (SELECT yes FROM written))"
            " INSERT INTO {s}.item_vectors (ns, sid, seq, path, embedding, expires)"
            " SELECT %(ns)s, %(sid)s, %(seq)s, p.path, p.vec::{x}.vector, %(expires)s"
            " FROM unnest(%(paths)s::text[], %(vecs)s::text[]) AS p(path, vec)"
            " WHERE (SELECT yes FROM written) ON CONFLICT DO NOTHING")

    def _scored(self, distance: str) -> str:
        """Each live item under the prefix with rows at its version, and its best score."""
        return ("SELECT v.sid, max(" + _SCORES[distance] + ") AS score"
                " FROM (SELECT %(q)s::{x}.vector AS q) AS q, {s}.item_vectors AS v"
                " JOIN {s}.sessions AS s ON s.ns = v.ns AND s.sid = v.sid AND s.version = v.seq"
                " WHERE v.ns = %(ns)s AND v.sid >= %(prefix)s"
                " AND (%(upper)s::text IS NULL OR v.sid < %(upper)s)"
                " AND (s.expires_at IS NULL OR s.expires_at > %(now)s)"
                " AND (v.expires IS NULL OR v.expires > %(now)s)"
                " GROUP BY v.sid")

    def search(self, distance: str) -> str:
        """A page of scored items, best first, with each one's session and newest entry."""
        return self._in(
            "SELECT t.sid, t.score, s.version, s.first_seq, s.ledger, e.body"
            " FROM (" + self._scored(distance) + " ORDER BY score DESC, v.sid"
            " LIMIT %(limit)s OFFSET %(offset)s) AS t"
            " JOIN {s}.sessions AS s ON s.ns = %(ns)s AND s.sid = t.sid"
            " JOIN {s}.entries AS e ON e.ns = %(ns)s AND e.sid = t.sid AND e.seq = s.version"
            " ORDER BY t.score DESC, t.sid")

    @property
    def unrowed(self) -> str:
        """The live items under the prefix with no rows at their version (those
        without embeddings, and those an import or a store before pgvector wrote),
        with each one's session and newest entry."""
        return self._in(
            "SELECT s.sid, s.version, s.first_seq, s.ledger, e.body FROM {s}.sessions AS s"
            " JOIN {s}.entries AS e ON e.ns = s.ns AND e.sid = s.sid AND e.seq = s.version"
            " WHERE s.ns = %(ns)s AND s.sid >= %(prefix)s"
            " AND (%(upper)s::text IS NULL OR s.sid < %(upper)s)"
            " AND (s.expires_at IS NULL OR s.expires_at > %(now)s)"
            " AND NOT EXISTS (SELECT 1 FROM {s}.item_vectors AS v"
            " WHERE v.ns = s.ns AND v.sid = s.sid AND v.seq = s.version)"
            " ORDER BY s.sid")

    @property
    def count(self) -> str:
        """How many live items under the prefix have rows (the scored ones)."""
        return self._in(
            "SELECT count(DISTINCT v.sid) FROM {s}.item_vectors AS v"
            " JOIN {s}.sessions AS s ON s.ns = v.ns AND s.sid = v.sid AND s.version = v.seq"
            " WHERE v.ns = %(ns)s AND v.sid >= %(prefix)s"
            " AND (%(upper)s::text IS NULL OR v.sid < %(upper)s)"
            " AND (s.expires_at IS NULL OR s.expires_at > %(now)s)"
            " AND (v.expires IS NULL OR v.expires > %(now)s)")
