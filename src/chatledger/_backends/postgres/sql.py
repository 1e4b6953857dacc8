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

Every append updates its session's row (``version``, ``updated_at``,
``expires_at``): ``sessions`` keeps 30% of each page free (``fillfactor``)
so that the update can stay on its page, HOT (no index entry) when
``expires_at`` is unchanged. One function, ``append`` (:data:`_APPEND_FUNCTION`):
an append in one call, called only to look (where a batch's ids are stored, and the
session's state): a planned append is one plain statement (:meth:`Statements.grow`).

Indexes: the three primary keys, ``sessions_by_expiry`` (``expires_at``,
partial: sessions with a TTL) for the sweep, and ``sessions_by_user`` (``ns,
user_id``, partial: tagged sessions), the user index of ``forget_user``.
``ns`` and ``sid`` use the "C" collation, so that ids compare by code point
and a prefix is a range scan (:func:`~.contract.prefix_upper_bound`),
whatever the database's locale.

A migration is a step of :data:`MIGRATIONS` (one so far: the schema above),
applied once, in order, each recorded in ``schema_version`` (:mod:`.migrations`
is the mechanism); every one is applied under one advisory lock, so two
processes that start at once apply each step once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

from ..migrations import Migrations

__all__ = ["APPEND_ARGS", "MIGRATIONS", "MIGRATION_LOCK", "SCHEMA", "SCHEMA_VERSION", "Statements",
           "statements"]

# The tables (the function, _APPEND_FUNCTION, is defined below).
_TABLES = """
    CREATE TABLE {s}.sessions (
        ns text COLLATE "C" NOT NULL, sid text COLLATE "C" NOT NULL,
        version bigint NOT NULL, first_seq bigint NOT NULL,
        created_at double precision NOT NULL, updated_at double precision NOT NULL,
        expires_at double precision,
        ledger text NOT NULL,
        user_id text COLLATE "C",
        PRIMARY KEY (ns, sid)
    ) WITH (fillfactor = 70);
    CREATE INDEX sessions_by_expiry ON {s}.sessions (expires_at)
        WHERE expires_at IS NOT NULL;
    CREATE INDEX sessions_by_user ON {s}.sessions (ns, user_id, sid)
        WHERE user_id IS NOT NULL;
    CREATE TABLE {s}.entries (
        ns text COLLATE "C" NOT NULL, sid text COLLATE "C" NOT NULL,
        seq bigint NOT NULL, body bytea NOT NULL,
        PRIMARY KEY (ns, sid, seq)
    );
    CREATE TABLE {s}.message_ids (
        ns text COLLATE "C" NOT NULL, sid text COLLATE "C" NOT NULL,
        msg_id bytea NOT NULL, seq bigint NOT NULL,
        batch_first bigint NOT NULL, batch_last bigint NOT NULL,
        PRIMARY KEY (ns, sid, msg_id)
    );
"""

"""The steps as the migration mechanism applies them."""

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

    def step(self, text: str) -> str:
        """A migration step (of :data:`MIGRATIONS`) on this schema."""
        return self._in(text)

    @property
    def version_table(self) -> str:
        return self._in("SELECT to_regclass(%s) IS NOT NULL")

    @property
    def load(self) -> str:
        return self._in("SELECT version, first_seq, created_at, updated_at, expires_at, ledger,"
                        " user_id FROM {s}.sessions WHERE ns = %s AND sid = %s")

    @property
    def load_for_update(self) -> str:
        """A writer's load: the row's lock too, after the advisory lock (the append
        statement's UPDATE, which takes no advisory lock on an existing session, waits
        for it)."""
        return self.load + " FOR UPDATE"

    # Every writer of a session takes its lock first, even for a session that
    # does not exist yet (a row lock cannot cover a missing row): writers of one
    # session run one after another, each seeing what the previous committed. The
    # append statement takes it only to create a session; on an existing one its
    # UPDATE takes the row's lock, which every other writer takes after this one.
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
        return self._in("SELECT m.msg_id, m.seq, m.batch_first, m.batch_last"
                        f" FROM unnest(%(ids)s::bytea[]) AS wanted(msg_id), {_FOUND}")

    @property
    def found_one(self) -> str:
        """The function's lookup of a batch of one id (see :data:`_LOOKUP`)."""
        return self._in(_FOUND_ONE)

    @property
    def found_all(self) -> str:
        """The function's lookup of a batch of any other number of ids."""
        return self._in(_FOUND_ALL)

    def grow(self, *, created: bool, count: int) -> str:
        """A planned append in one plain statement (:data:`_GROW`): a new session's
        (``created``) or an existing one's, of ``count`` entries."""
        return _grow(self.schema, created, min(count, GROW_LISTED + 1))

    @cached_property
    def call_append(self) -> str:
        """The append in one statement: ``{s}.append`` with :data:`APPEND_ARGS`.

        Its ``bytea[]`` arguments are sent in binary (``%b``): psycopg sends a list
        in text unless told, and writing bytes as an array's text (hex, then
        quoted and escaped) costs the client some 20 times the binary form, in
        proportion to the batch's bytes (benchmarks/RESULTS.md, 2026-12-06).
        """
        names = ", ".join(f"%({name})b" if kind == "bytea[]" else f"%({name})s"
                          for name, kind in APPEND_ARGS)
        return self._in(f"SELECT * FROM {{s}}.append({names})")

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
    def window(self) -> str:
        """A read in one statement (one snapshot): the live session's state, and the
        window of :meth:`~.contract.ReadQuery.window` (``last``, or ``after`` and
        ``limit``) on each row; no row when there is no live session."""
        return self._in(
            "SELECT s.version, s.first_seq, s.ledger, e.seq, e.body FROM {s}.sessions AS s"
            " LEFT JOIN LATERAL (SELECT seq, body FROM {s}.entries"
            " WHERE ns = s.ns AND sid = s.sid AND seq >= CASE"
            " WHEN %(last)s::bigint IS NULL THEN greatest(s.first_seq, %(after)s::bigint + 1)"
            " ELSE greatest(s.first_seq, s.version - %(last)s::bigint + 1) END"
            " ORDER BY seq LIMIT coalesce(%(last)s::bigint, %(limit)s::bigint)) AS e ON true"
            " WHERE s.ns = %(ns)s AND s.sid = %(sid)s"
            " AND (s.expires_at IS NULL OR s.expires_at > %(now)s::float8) ORDER BY e.seq")

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
    def namespaces(self) -> str:
        return self._in("SELECT DISTINCT ns FROM {s}.sessions"
                        " WHERE expires_at IS NULL OR expires_at > %s ORDER BY ns")

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

    def group_heads(self, *, bounded: bool) -> str:
        """The first live session of each group (``group_heads``), each with its entry at
        seq ``version``: a recursive query whose each step is one seek of the primary
        key, from where the group of the step before ends (:func:`~.contract.next_group`:
        ``start`` is where the text after the prefix starts, ``next`` the character
        after ``sep``). ``bounded``: the prefix has an upper bound, ``upper``."""
        first = ("(SELECT sid FROM {s}.sessions WHERE ns = %(ns)s AND sid >= {low}"
                 + (" AND sid < %(upper)s" if bounded else "")
                 + " AND (expires_at IS NULL OR expires_at > %(now)s) ORDER BY sid LIMIT 1)")
        at = "strpos(substr(f.sid, %(start)s), %(sep)s)"
        after = (f"CASE WHEN {at} > 0 THEN substr(f.sid, 1, %(start)s + {at} - 2) || %(next)s"
                 " ELSE f.sid || chr(1) END")
        return self._in(
            "WITH RECURSIVE firsts(sid, n) AS ("
            f" SELECT {first.replace('{low}', '%(low)s')}, 1"
            f" UNION ALL SELECT {first.replace('{low}', after)}, f.n + 1 FROM firsts AS f"
            " WHERE f.sid IS NOT NULL AND f.n < %(count)s)"
            " SELECT s.sid, s.version, s.first_seq, s.ledger, e.body FROM firsts AS f"
            " JOIN {s}.sessions AS s ON s.ns = %(ns)s AND s.sid = f.sid"
            " LEFT JOIN {s}.entries AS e ON e.ns = %(ns)s AND e.sid = s.sid AND e.seq = s.version"
            " ORDER BY s.sid")

    @property
    def lock_prefix(self) -> str:
        """Lock every session of a prefix, in id order (no two purges deadlock)."""
        return self._in("SELECT sid, pg_advisory_xact_lock(hashtextextended(ns || '/' || sid, 0))"
                        " FROM (SELECT ns, sid FROM {s}.sessions WHERE ns = %s"
                        " AND sid >= %s AND (%s::text IS NULL OR sid < %s) ORDER BY sid) AS doomed")

    @property
    def lock_expired(self) -> str:
        return self._in("SELECT sid,"
                        " pg_advisory_xact_lock(hashtextextended(ns || '/' || sid, 0))"
                        " FROM (SELECT ns, sid FROM {s}.sessions WHERE expires_at <= %s AND ns = %s"
                        " ORDER BY sid LIMIT %s) AS doomed")

    @property
    def lock_rows(self) -> str:
        """The rows of sessions locked by ``lock_prefix``, locked in id order, each with
        whether it is live: an append statement's UPDATE that committed before is
        counted and deleted whole, one that comes after waits and finds no row."""
        return self._in("SELECT sid, expires_at IS NULL OR expires_at > %s FROM {s}.sessions"
                        " WHERE ns = %s AND sid = ANY(%s) ORDER BY sid FOR UPDATE")

    @property
    def still_expired(self) -> str:
        """The candidates still expired, their rows locked (in id order): a renewal by
        the append statement, which takes no advisory lock, either committed before
        (the row is checked again as committed, and stays) or waits for the delete."""
        return self._in("SELECT sid FROM {s}.sessions WHERE ns = %s AND sid = ANY(%s)"
                        " AND expires_at <= %s ORDER BY sid FOR UPDATE")

    # The role's privileges for doctor: USAGE on the schema, then one flag per
    # (table, privilege) pair; a table not there yet (no migration) counts as granted.
    schema_usage = "SELECT has_schema_privilege(current_user, %s, 'USAGE')"
    table_privileges = ("SELECT coalesce(has_table_privilege(to_regclass(t), p), true)"
                        " FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS x(t, p, i)"
                        " ORDER BY i")

    # Whether this role may execute the function (true while it is absent: the schema
    # check names that), given its signature (:attr:`append_signature`).
    append_execute = "SELECT coalesce(has_function_privilege(to_regprocedure(%s), 'EXECUTE'), true)"

    @property
    def append_signature(self) -> str:
        """The schema's function ``append``, as ``to_regprocedure`` reads it."""
        return f"{self.schema}.append({', '.join(kind for _, kind in APPEND_ARGS)})"

    @property
    def reseal(self) -> str:
        """Each entry replaced only where it still holds the old bytes."""
        return self._in("UPDATE {s}.entries AS e SET body = r.new"
                        " FROM unnest(%s::bigint[], %s::bytea[], %s::bytea[]) AS r(seq, old, new)"
                        " WHERE e.ns = %s AND e.sid = %s AND e.seq = r.seq AND e.body = r.old")

    @property
    def corrupt(self) -> str:
        return self._in("UPDATE {s}.entries SET body = %s WHERE ns = %s AND sid = %s AND seq = %s")


# Where each wanted id is stored: one lookup of the whole primary key per id. The
# LIMIT keeps the planner from flattening it into a join that it may cost, on a
# table autovacuum has not analyzed yet, as a scan of the session's ids.
_FOUND = ("LATERAL (SELECT seq, batch_first, batch_last, msg_id FROM {s}.message_ids"
          " WHERE ns = %(ns)s AND sid = %(sid)s AND msg_id = wanted.msg_id LIMIT 1) AS m")

# The common append, a planned write (contract.Growth), as one plain statement
# rather than a call of the function: the same checks and writes, without PL/pgSQL's
# cost per statement nor the function's setting of plan_cache_mode (a prepared
# statement's plan is the server's to cache): half the server's time of a call
# (benchmarks/RESULTS.md, 2026-12-07). It writes only if the session is as planned.
# An existing session: the UPDATE that checks the planned version takes the row's
# lock, waits behind any other writer, and under READ COMMITTED checks its WHERE
# again on the row as committed (as the function's UPDATE does); the inserts read nothing but
# its RETURNING row. A new session: the session's advisory lock first (every
# step-by-step writer takes it before it looks for the row), then an INSERT that
# does nothing if the row exists, committed since the statement's snapshot or not
# (ON CONFLICT checks the index, not the snapshot). An id the session holds
# already breaks message_ids' primary key: the statement fails whole, and the
# client looks (the function, %(write)s false).
# It answers as the function does: whether it wrote and, if not, the session and
# where the ids are stored, read from the statement's snapshot. After a wait for
# another writer's lock, that snapshot is older than the row (it shows the session
# as planned from, or none where a new session's row was in the way): the client
# looks then, with the function (a snapshot per statement), and plans from that.
_GROW = {
    False: """UPDATE {s}.sessions SET version = %(last)s::bigint, updated_at = %(now)s::float8,
            expires_at = %(expires)s::float8
        WHERE ns = %(ns)s::text AND sid = %(sid)s::text AND version = %(was)s::bigint
            AND ledger = %(ledger)s::text AND user_id IS NOT DISTINCT FROM %(user)s::text
            AND (expires_at IS NULL OR expires_at > %(now)s::float8)
        RETURNING 1""",
    True: """INSERT INTO {s}.sessions
            (ns, sid, version, first_seq, created_at, updated_at, expires_at, ledger, user_id)
        SELECT %(ns)s::text, %(sid)s::text, %(last)s::bigint, %(first_seq)s::bigint,
            %(created)s::float8, %(now)s::float8, %(expires)s::float8, %(ledger)s::text,
            %(user)s::text
        FROM (SELECT pg_advisory_xact_lock(hashtextextended(%(ns)s::text || '/' || %(sid)s::text,
            0))) AS locked
        ON CONFLICT (ns, sid) DO NOTHING
        RETURNING 1""",
}
# The batch's rows: up to GROW_LISTED entries, one VALUES row per entry, each an
# element of the array parameters; a longer batch unnests them. Why: the planner
# estimates an unnest of a parameter at 10 rows and of a value at its length, so a
# prepared statement's generic plan costs more than its custom one, and the server
# plans the statement again on every call (some 240 µs, more than its execution);
# with the elements listed both plans cost the same, and the generic one is kept.
GROW_LISTED = 16


def _batch_rows(count: int, array: str, *, numbered: bool) -> str:
    """``array``'s elements as rows (``x``, and ``k`` from 0 if ``numbered``)."""
    if count > GROW_LISTED:
        return (f"(SELECT x, k - 1 AS k FROM unnest({array}) WITH ORDINALITY AS u(x, k))"
                if numbered else f"(SELECT x FROM unnest({array}) AS u(x))")
    return "(VALUES " + ", ".join(
        f"(({array})[{i + 1}]" + (f", {i})" if numbered else ")") for i in range(count)) + ")"


def _grow_rows(count: int) -> str:
    ids, blobs = "%(ids)b::bytea[]", "%(blobs)b::bytea[]"
    return f"""ids AS (INSERT INTO {{s}}.message_ids (ns, sid, msg_id, seq, batch_first, batch_last)
        SELECT %(ns)s::text, %(sid)s::text, x, %(first)s::bigint + k, %(first)s::bigint,
            %(last)s::bigint
        FROM grown, {_batch_rows(count, ids, numbered=True)} AS batch(x, k)),
    entries AS (INSERT INTO {{s}}.entries (ns, sid, seq, body)
        SELECT %(ns)s::text, %(sid)s::text, %(first)s::bigint + k, x
        FROM grown, {_batch_rows(count, blobs, numbered=True)} AS batch(x, k))"""


def _grow_seen(count: int) -> str:
    """What the statement saw, read only when it wrote nothing (each lateral's WHERE
    is then a one-time filter)."""
    return f"""
SELECT w.written, s.version, s.first_seq, s.created_at, s.updated_at, s.expires_at, s.ledger,
    s.user_id, f.ids, f.seqs, f.firsts, f.lasts
FROM (SELECT count(*) > 0 AS written FROM grown) AS w
LEFT JOIN LATERAL (SELECT * FROM {{s}}.sessions
    WHERE NOT w.written AND ns = %(ns)s::text AND sid = %(sid)s::text) AS s ON true
LEFT JOIN LATERAL (SELECT array_agg(m.msg_id) AS ids, array_agg(m.seq) AS seqs,
        array_agg(m.batch_first) AS firsts, array_agg(m.batch_last) AS lasts
    FROM {_batch_rows(count, "%(ids)b::bytea[]", numbered=False)} AS wanted(msg_id),
        {_FOUND}
    WHERE NOT w.written) AS f ON true"""


@lru_cache(maxsize=4 * GROW_LISTED + 4)
def _grow(schema: str, created: bool, count: int) -> str:
    """The statement for a batch of ``count`` (past GROW_LISTED, one for any length)."""
    text = f"WITH grown AS ({_GROW[created]}),\n    {_grow_rows(count)}{_grow_seen(count)}"
    return text.replace("{s}", schema)


APPEND_ARGS: tuple[tuple[str, str], ...] = (
    ("ns", "text"), ("sid", "text"), ("ids", "bytea[]"), ("write", "boolean"),
    ("was", "bigint"), ("ledger", "text"), ("user", "text"), ("now", "float8"),
    ("blobs", "bytea[]"), ("first", "bigint"), ("last", "bigint"),
    ("first_seq", "bigint"), ("created", "float8"), ("expires", "float8"))
"""The append's parameters (their names in :data:`_APPEND_BODY`), in the order the function
takes them."""

# Where a batch of one id is stored (the common batch: an item, a checkpoint): one
# lookup of the whole primary key, three columns, no arrays built unless it is found.
_FOUND_ONE = ("SELECT m.seq, m.batch_first, m.batch_last FROM {s}.message_ids AS m"
              " WHERE m.ns = %(ns)s AND m.sid = %(sid)s AND m.msg_id = %(ids)s[1]")

# Where each id of a batch of any other size is stored, as the four arrays returned.
_FOUND_ALL = ("SELECT array_agg(m.msg_id), array_agg(m.seq), array_agg(m.batch_first),"
              f" array_agg(m.batch_last) FROM unnest(%(ids)s::bytea[]) AS wanted(msg_id), {_FOUND}")

def _positional(text: str) -> str:
    """``text`` with each %(name)s of :data:`APPEND_ARGS` as the function's $n."""
    names = [name for name, _ in APPEND_ARGS]
    return re.sub(r"%\((\w+)\)s", lambda match: f"${names.index(match.group(1)) + 1}", text)


# Where the batch's ids are stored, into the result's four arrays (NULL: none is).
_LOOKUP = f"""
    IF cardinality(%(ids)s) = 1 THEN
        {_FOUND_ONE} INTO at_seq, at_first, at_last;
        IF FOUND THEN
            ids := %(ids)s; seqs := ARRAY[at_seq]; firsts := ARRAY[at_first];
            lasts := ARRAY[at_last];
        END IF;
    ELSE
        {_FOUND_ALL} INTO ids, seqs, firsts, lasts;
    END IF;"""

# The function's append: the session's checks and writes as PL/pgSQL branches of small
# statements (PL/pgSQL initializes the executor only for the branch that runs), three
# on an existing session for the common call (a write whose session is as planned).
# (1) No lookup of the ids before writing: their primary key refuses an id the
# session holds already (also after a trim: ids are kept), the call fails with
# unique_violation on message_ids_pkey and writes nothing, and the client asks again
# with a look (%(write)s false; AsyncPostgresBackend._send). An id stored again with
# the version it was stored at is rare (a retry whose reply was lost finds a newer
# version, and is answered by the lookup of a call that wrote nothing, below). (2) The
# session's advisory lock only where its row is to be created (%(was)s NULL: a row lock
# cannot cover a missing row). On an existing session the row is the lock: the UPDATE
# that checks the version takes the row's lock, and one that finds it locked waits for
# the commit, then checks its WHERE again on the row as committed (READ COMMITTED's
# re-check), so it writes only if no writer wrote since the plan. Every other writer
# of an existing session locks the row too, after the advisory lock
# (Statements.load_for_update, lock_rows, still_expired): writers of one session still
# run one after the other. A call that writes nothing looks the ids up after its
# UPDATE or INSERT (a new statement: a new snapshot, after any wait), then reads the
# session: what the client plans again from.
_APPEND_BODY = f"""
#variable_conflict use_column
DECLARE
    at_seq bigint; at_first bigint; at_last bigint;
BEGIN
    IF %(write)s THEN
        IF %(was)s IS NULL THEN
            PERFORM pg_advisory_xact_lock(hashtextextended(%(ns)s || '/' || %(sid)s, 0));
            INSERT INTO {{s}}.sessions
                (ns, sid, version, first_seq, created_at, updated_at, expires_at, ledger, user_id)
            SELECT %(ns)s, %(sid)s, %(last)s, %(first_seq)s, %(created)s, %(now)s, %(expires)s,
                   %(ledger)s, %(user)s
            WHERE NOT EXISTS (SELECT FROM {{s}}.sessions WHERE ns = %(ns)s AND sid = %(sid)s);
        ELSE
            UPDATE {{s}}.sessions SET version = %(last)s, updated_at = %(now)s,
                expires_at = %(expires)s
            WHERE ns = %(ns)s AND sid = %(sid)s AND version = %(was)s AND ledger = %(ledger)s
                AND user_id IS NOT DISTINCT FROM %(user)s
                AND (expires_at IS NULL OR expires_at > %(now)s);
        END IF;
        IF FOUND THEN
            IF cardinality(%(blobs)s) = 1 AND cardinality(%(ids)s) = 1 THEN
                INSERT INTO {{s}}.message_ids (ns, sid, msg_id, seq, batch_first, batch_last)
                VALUES (%(ns)s, %(sid)s, %(ids)s[1], %(first)s, %(first)s, %(last)s);
                INSERT INTO {{s}}.entries (ns, sid, seq, body)
                VALUES (%(ns)s, %(sid)s, %(first)s, %(blobs)s[1]);
            ELSE
                INSERT INTO {{s}}.message_ids (ns, sid, msg_id, seq, batch_first, batch_last)
                SELECT %(ns)s, %(sid)s, msg_id, %(first)s + i - 1, %(first)s, %(last)s
                FROM unnest(%(ids)s) WITH ORDINALITY AS batch(msg_id, i);
                INSERT INTO {{s}}.entries (ns, sid, seq, body)
                SELECT %(ns)s, %(sid)s, %(first)s + i - 1, body
                FROM unnest(%(blobs)s) WITH ORDINALITY AS batch(body, i);
            END IF;
            written := true;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;{_LOOKUP}
    written := false;
    SELECT s.version, s.first_seq, s.created_at, s.updated_at, s.expires_at, s.ledger, s.user_id
    INTO version, first_seq, created_at, updated_at, expires_at, ledger, user_id
    FROM {{s}}.sessions AS s WHERE s.ns = %(ns)s AND s.sid = %(sid)s;
    RETURN NEXT;
END
"""

# Its plans generic: PostgreSQL keeps choosing custom plans for it otherwise (a generic
# plan costs unnest() of a parameter at 10 rows, a custom one at the batch's length).
_APPEND_FUNCTION = (
    "CREATE OR REPLACE FUNCTION {s}.append("
    + ", ".join(kind for _, kind in APPEND_ARGS) + ")\n"
    "    RETURNS TABLE (written boolean, version bigint, first_seq bigint,"
    " created_at float8, updated_at float8, expires_at float8, ledger text, user_id text,"
    " ids bytea[], seqs bigint[], firsts bigint[], lasts bigint[])\n"
    "    LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan"
    " AS $chatledger_append$" + _positional(_APPEND_BODY) + "$chatledger_append$;")

MIGRATIONS: list[str] = [_TABLES + _APPEND_FUNCTION]
"""Schema changes, oldest first: step ``i`` makes schema version ``i + 1``."""

SCHEMA: Migrations[str] = Migrations(MIGRATIONS)
"""The steps as the migration mechanism applies them."""

SCHEMA_VERSION = SCHEMA.current
"""The schema version this code reads and writes."""


def statements(quoted_schema: str) -> Statements:
    """The statements on the tables of ``quoted_schema`` (an identifier, quoted)."""
    return Statements(quoted_schema)
