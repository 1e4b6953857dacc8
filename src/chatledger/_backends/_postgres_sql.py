"""The PostgreSQL schema, its migrations and the statements on it; no I/O.

Tables, in the store's schema (``?schema=``, default ``chatledger``)::

    schema_version(version)                    one row per migration applied
    sessions(ns, sid) -> version, first_seq, created_at, updated_at, expires_at, ledger,
                         user_id               the user the session is tagged with
    entries(ns, sid, seq) -> body bytea        the ledger; windows are range scans
    message_ids(ns, sid, msg_id) -> seq, batch_first, batch_last
                                               the idempotency index; msg_id is
                                               the id's UTF-8 (a text column
                                               cannot hold NUL, an id can)

Indexes: the three primary keys, ``sessions_by_expiry`` (``expires_at``,
partial: sessions with a TTL) for the sweep, and ``sessions_by_user`` (``ns,
user_id``, partial: tagged sessions), the user index of ``forget_user``.
``ns`` and ``sid`` use the "C" collation, so that ids compare by code point
and a prefix is a range scan (:func:`~.contract.prefix_upper_bound`),
whatever the database's locale.

A migration is a step of :data:`MIGRATIONS`, applied once, in order, each
recorded in ``schema_version``; every one is applied under one advisory
lock, so two processes that start at once apply each step once.
"""

from __future__ import annotations

from dataclasses import dataclass

from .contract import LEGACY_LEDGER

__all__ = ["MIGRATIONS", "MIGRATION_LOCK", "SCHEMA_VERSION", "Statements", "statements"]

MIGRATIONS: list[str] = [
    f"""
    CREATE TABLE {{s}}.sessions (
        ns text COLLATE "C" NOT NULL, sid text COLLATE "C" NOT NULL,
        version bigint NOT NULL, first_seq bigint NOT NULL,
        created_at double precision NOT NULL, updated_at double precision NOT NULL,
        expires_at double precision,
        ledger text NOT NULL DEFAULT '{LEGACY_LEDGER}',
        PRIMARY KEY (ns, sid)
    );
    CREATE INDEX sessions_by_expiry ON {{s}}.sessions (expires_at)
        WHERE expires_at IS NOT NULL;
    CREATE TABLE {{s}}.entries (
        ns text COLLATE "C" NOT NULL, sid text COLLATE "C" NOT NULL,
        seq bigint NOT NULL, body bytea NOT NULL,
        PRIMARY KEY (ns, sid, seq)
    );
    CREATE TABLE {{s}}.message_ids (
        ns text COLLATE "C" NOT NULL, sid text COLLATE "C" NOT NULL,
        msg_id bytea NOT NULL, seq bigint NOT NULL,
        batch_first bigint NOT NULL, batch_last bigint NOT NULL,
        PRIMARY KEY (ns, sid, msg_id)
    );
    """,
    # 2: sessions tagged with a user, and the user index (existing sessions: untagged).
    """
    ALTER TABLE {s}.sessions ADD COLUMN user_id text COLLATE "C";
    CREATE INDEX sessions_by_user ON {s}.sessions (ns, user_id, sid)
        WHERE user_id IS NOT NULL;
    """,
]
"""Schema changes, oldest first: step ``i`` makes schema version ``i + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this code reads and writes."""

MIGRATION_LOCK = 0x63686C67  # "chlg": the advisory lock key that orders migrations


@dataclass(frozen=True)
class Statements:
    """Every statement, with the schema's quoted name in place."""

    schema: str

    def _in(self, text: str) -> str:
        return text.replace("{s}", self.schema)

    @property
    def create_versions(self) -> str:
        return self._in("CREATE SCHEMA IF NOT EXISTS {s};"
                        " CREATE TABLE IF NOT EXISTS {s}.schema_version ("
                        " version integer PRIMARY KEY,"
                        " applied_at timestamptz NOT NULL DEFAULT now())")

    @property
    def current_version(self) -> str:
        return self._in("SELECT coalesce(max(version), 0) FROM {s}.schema_version")

    @property
    def record_version(self) -> str:
        return self._in("INSERT INTO {s}.schema_version (version) VALUES (%s)")

    def migration(self, index: int) -> str:
        return MIGRATIONS[index].replace("{s}", self.schema)

    @property
    def version_table(self) -> str:
        return self._in("SELECT to_regclass(%s) IS NOT NULL")

    @property
    def load(self) -> str:
        return self._in("SELECT version, first_seq, created_at, updated_at, expires_at, ledger,"
                        " user_id FROM {s}.sessions WHERE ns = %s AND sid = %s")

    # Every writer of a session takes its lock first, even for a session that
    # does not exist yet (a row lock cannot cover a missing row): writers of one
    # session run one after another, each seeing what the previous committed.
    lock = "SELECT pg_advisory_xact_lock(hashtextextended(%s || '/' || %s, 0))"

    @property
    def insert_session(self) -> str:
        return self._in("INSERT INTO {s}.sessions (version, first_seq, created_at, updated_at,"
                        " expires_at, ledger, user_id, ns, sid)"
                        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)")

    @property
    def update_session(self) -> str:
        return self._in("UPDATE {s}.sessions SET version = %s, first_seq = %s, created_at = %s,"
                        " updated_at = %s, expires_at = %s, ledger = %s, user_id = %s"
                        " WHERE ns = %s AND sid = %s")

    @property
    def users_sessions(self) -> str:
        return self._in("SELECT sid FROM {s}.sessions WHERE ns = %s AND user_id = %s"
                        " ORDER BY sid")

    @property
    def stored_ids(self) -> str:
        return self._in("SELECT msg_id, seq, batch_first, batch_last FROM {s}.message_ids"
                        " WHERE ns = %s AND sid = %s AND msg_id = ANY(%s)")

    @property
    def insert_entries(self) -> str:
        return self._in("INSERT INTO {s}.entries (ns, sid, seq, body)"
                        " SELECT %s, %s, seq, body FROM unnest(%s::bigint[], %s::bytea[])"
                        " AS batch(seq, body)")

    @property
    def insert_ids(self) -> str:
        return self._in("INSERT INTO {s}.message_ids"
                        " (ns, sid, msg_id, seq, batch_first, batch_last)"
                        " SELECT %s, %s, msg_id, seq, %s, %s"
                        " FROM unnest(%s::bytea[], %s::bigint[]) AS batch(msg_id, seq)")

    @property
    def entries(self) -> str:
        return self._in("SELECT seq, body FROM {s}.entries WHERE ns = %s AND sid = %s"
                        " AND seq >= %s ORDER BY seq LIMIT %s")

    @property
    def cut(self) -> str:
        return self._in("DELETE FROM {s}.entries WHERE ns = %s AND sid = %s AND seq < %s")

    def drop(self) -> list[str]:
        return [self._in(f"DELETE FROM {{s}}.{table} WHERE ns = %s AND sid = ANY(%s)")
                for table in ("entries", "message_ids", "sessions")]

    @property
    def page(self) -> str:
        return self._in("SELECT sid FROM {s}.sessions WHERE ns = %s AND sid >= %s"
                        " AND (%s::text IS NULL OR sid < %s) AND sid > %s"
                        " AND (expires_at IS NULL OR expires_at > %s) ORDER BY sid LIMIT %s")

    @property
    def heads(self) -> str:
        """A page of live sessions (as ``page``), each with its entry at seq ``version``."""
        return self._in("SELECT s.sid, s.version, s.first_seq, s.ledger, e.body FROM"
                        " (SELECT sid, version, first_seq, ledger FROM {s}.sessions"
                        " WHERE ns = %s AND sid >= %s AND (%s::text IS NULL OR sid < %s)"
                        " AND sid > %s AND (expires_at IS NULL OR expires_at > %s)"
                        " ORDER BY sid LIMIT %s) AS s"
                        " LEFT JOIN {s}.entries AS e"
                        " ON e.ns = %s AND e.sid = s.sid AND e.seq = s.version ORDER BY s.sid")

    @property
    def lock_prefix(self) -> str:
        """Lock every session of a prefix, in id order (no two purges deadlock)."""
        return self._in("SELECT sid, expires_at IS NULL OR expires_at > %s,"
                        " pg_advisory_xact_lock(hashtextextended(ns || '/' || sid, 0))"
                        " FROM (SELECT ns, sid, expires_at FROM {s}.sessions WHERE ns = %s"
                        " AND sid >= %s AND (%s::text IS NULL OR sid < %s) ORDER BY sid) AS doomed")

    @property
    def lock_expired(self) -> str:
        return self._in("SELECT sid,"
                        " pg_advisory_xact_lock(hashtextextended(ns || '/' || sid, 0))"
                        " FROM (SELECT ns, sid FROM {s}.sessions WHERE expires_at <= %s AND ns = %s"
                        " ORDER BY sid LIMIT %s) AS doomed")

    @property
    def still_expired(self) -> str:
        return self._in("SELECT sid FROM {s}.sessions WHERE ns = %s AND sid = ANY(%s)"
                        " AND expires_at <= %s")

    # The role's privileges for doctor: USAGE on the schema, then one flag per
    # (table, privilege) pair; a table not there yet (no migration) counts as granted.
    schema_usage = "SELECT has_schema_privilege(current_user, %s, 'USAGE')"
    table_privileges = ("SELECT coalesce(has_table_privilege(to_regclass(t), p), true)"
                        " FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS x(t, p, i)"
                        " ORDER BY i")

    @property
    def reseal(self) -> str:
        """Each entry replaced only where it still holds the old bytes."""
        return self._in("UPDATE {s}.entries AS e SET body = r.new"
                        " FROM unnest(%s::bigint[], %s::bytea[], %s::bytea[]) AS r(seq, old, new)"
                        " WHERE e.ns = %s AND e.sid = %s AND e.seq = r.seq AND e.body = r.old")

    @property
    def corrupt(self) -> str:
        return self._in("UPDATE {s}.entries SET body = %s WHERE ns = %s AND sid = %s AND seq = %s")


def statements(quoted_schema: str) -> Statements:
    """The statements on the tables of ``quoted_schema`` (an identifier, quoted)."""
    return Statements(quoted_schema)
