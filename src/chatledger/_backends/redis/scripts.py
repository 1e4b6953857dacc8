"""Every Redis operation on a session is one of these Lua scripts.

A script runs atomically on the server, so each one does all of its checks
and all of its effects in one round trip, with nothing in between: this file
is the whole write path. Every script takes the session's three keys (see
:mod:`.keys`) as ``KEYS = {meta, log, ids}``; they share a hash tag, so the
scripts run unchanged on Redis Cluster.

Integrity. A session exists when its meta hash does. Two invariants tie the
keys together: the log holds ``version - first_seq + 1`` entries and the ids
hash holds ``version`` ids (ids are never trimmed). Eviction under an
``allkeys-*`` policy, or a hand-made ``DEL``, can remove one key and leave the
others; every script checks both invariants (O(1): LLEN, HLEN) and treats a
damaged session as absent. Reads then report version 0, so
``read(min_version=v)`` raises MemoryLostError, and the next append removes
the leftovers before it starts a new ledger, never appending to a torn one.

Numbers written by a script are formatted with ``%d``: Lua 5.1 would print a
large double in exponent form.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

__all__ = ["APPEND", "DELETE", "FORGET", "INDEX_ADD", "INDEX_MEMBERS", "INDEX_REMOVE", "INFO",
           "READ", "RESEAL", "TRIM", "Script"]


@dataclass(frozen=True)
class Script:
    """A script's text and the SHA1 that EVALSHA names it by (computed here, no I/O)."""

    name: str
    text: str

    @cached_property
    def sha(self) -> str:
        return hashlib.sha1(self.text.encode()).hexdigest()


_PRELUDE = """
local meta, log, ids = KEYS[1], KEYS[2], KEYS[3]

-- Integers as text, %d: Lua 5.1 would print a large double in exponent form.
-- Each costs the server a printf (~3k instructions): scripts format each number once.
local function int(number)
  return string.format('%d', number)
end

-- version, first_seq and ledger id of an intact session, and whether it has an
-- expiry; nil when absent or damaged.
local function state()
  local fields = redis.call('HMGET', meta, 'version', 'first_seq', 'ledger', 'expires')
  local version, first = tonumber(fields[1]), tonumber(fields[2])
  if not (version and first and fields[3]) then
    return nil
  end
  if redis.call('LLEN', log) ~= version - first + 1 or redis.call('HLEN', ids) ~= version then
    return nil
  end
  return version, first, fields[3], fields[4]
end

-- One expiry for every key of the session, so that none outlives the others.
-- The server expires the keys; meta also records when, by the store's clock.
-- Without a ttl, the keys are made persistent only if they had an expiry (the
-- 'expires' field, which state() read, says so): most stores have no ttl and
-- pay nothing here.
local function expire(ttl_ms, expires, had_expiry)
  if ttl_ms > 0 then
    for _, key in ipairs(KEYS) do
      redis.call('PEXPIRE', key, ttl_ms)
    end
    redis.call('HSET', meta, 'expires', expires)
  elseif had_expiry then
    redis.call('HDEL', meta, 'expires')
    for _, key in ipairs(KEYS) do
      redis.call('PERSIST', key)
    end
  end
end

-- unpack() is limited by Lua's C stack: commands take ARGV in chunks.
local CHUNK = 1000
"""

APPEND = Script("append", _PRELUDE + """
-- ARGV: a header 'expect ttl_ms strict n confirm indexed now fresh expires' (one
-- argument: the server pays more for each argument than the script pays to parse
-- them), the wanted ledger ('': any), the user ('': none), n ids (as calls.index_key
-- names them: a UUID as 0xFF and its 16 bytes), n entries. expect: -1 any version;
-- ttl_ms: 0 none; strict 1: the wanted ledger is checked before the ids (0: a retry of
-- a batch already stored, on whatever ledger, is a retry); confirm 1: the caller WAITs
-- for replicas after this; indexed 1: the caller added the session to the user's
-- index; fresh: the ledger id if this creates one; expires: the deadline to record
-- ('': none).
local expect, ttl_ms, strict, n, confirm, indexed, now, fresh, expires = string.match(
  ARGV[1], '^(%-?%d+) (%d+) ([01]) (%d+) ([01]) ([01]) (%S+) (%S+) ?(.*)$')
expect, ttl_ms, n = tonumber(expect), tonumber(ttl_ms), tonumber(n)
local wanted, user, ID0 = ARGV[2], ARGV[3], 3
local ENTRY0 = ID0 + n

local version, first, ledger, had_expiry = state()
local function lost()
  return {'lost', version or 0, ledger or false}  -- the ledger aimed at is gone
end
if wanted ~= '' and strict == '1' and ledger ~= wanted then
  return lost()
end
-- A session's user is set by its first append and never changes.
if version and user ~= '' then
  local owner = redis.call('HMGET', meta, 'user')[1]
  if owner ~= user then
    return {'user', owner}
  end
end

if version then
  -- Idempotency: if any id is stored, write nothing; Python decides (contract.dedupe).
  local found, stored = {}, false
  for low = 1, n, CHUNK do
    local high = math.min(low + CHUNK - 1, n)
    local part = redis.call('HMGET', ids, unpack(ARGV, ID0 + low, ID0 + high))
    for i = 1, #part do
      found[#found + 1] = part[i]
      stored = stored or part[i]
    end
  end
  if stored then
    if confirm == '1' then
      -- A retry after a short WAIT: rewrite one field as it is, so that this
      -- connection's WAIT covers the replication stream up to the original.
      redis.call('HSET', meta, 'version', int(version))
    end
    return {'dup', found, ledger}
  end
end
if wanted ~= '' and ledger ~= wanted then
  return lost()
end
local created = false
if not version then
  version, first, ledger, created = 0, 1, fresh, true  -- new, or what eviction left
end

if expect >= 0 and expect ~= version then
  return {'conflict', version}  -- refused: nothing written, leftovers kept for forensics
end
-- A tagged session is created only once the user's index names it (another slot).
if created and user ~= '' and indexed ~= '1' then
  return {'unindexed'}
end

-- A new ledger starts from nothing: remove leftovers, and only those, since a
-- script's first write decides whether a full server (maxmemory, noeviction)
-- refuses it, and that must be the RPUSH, not a DEL of nothing.
if created and redis.call('EXISTS', meta, log, ids) > 0 then
  redis.call('DEL', meta, log, ids)
end

-- Each id remembers its seq and its batch, so that only a whole batch counts as a
-- retry. The batch's first and last seq are formatted once, and reused for them.
local first_seq, last_seq = int(version + 1), int(version + n)
local batch = ':' .. first_seq .. ':' .. last_seq
for low = 1, n, CHUNK do
  local high = math.min(low + CHUNK - 1, n)
  redis.call('RPUSH', log, unpack(ARGV, ENTRY0 + low, ENTRY0 + high))
  local id_places = {}
  for i = low, high do
    local seq = (i == 1 and first_seq) or (i == n and last_seq) or int(version + i)
    id_places[#id_places + 1] = ARGV[ID0 + i]
    id_places[#id_places + 1] = seq .. batch
  end
  redis.call('HSET', ids, unpack(id_places))
end
if created then
  redis.call('HSET', meta, 'version', last_seq, 'first_seq', '1', 'updated', now,
             'created', now, 'ledger', ledger)
  if user ~= '' then
    redis.call('HSET', meta, 'user', user)
  end
else
  redis.call('HSET', meta, 'version', last_seq, 'updated', now)
end
expire(ttl_ms, expires, had_expiry)
return {'ok', version + 1, version + n, ledger}
""")

READ = Script("read", _PRELUDE + """
-- ARGV: last (-1: read by after), after, limit (-1: none), touch_ttl_ms (0: no touch),
-- expires. The window is ReadQuery.window, here so that a read is one round trip.
local last, after, limit, touch = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),
  tonumber(ARGV[4])

local version, first, ledger = state()
if not version then
  return {0, 1, 1, {}, false}
end
if touch > 0 then
  expire(touch, ARGV[5])
end
local low, count
if last >= 0 then
  low, count = math.max(first, version - last + 1), last
else
  low, count = math.max(first, after + 1), limit
end
-- Never past the version: LRANGE gets small exact integers, whatever was asked.
local available = version - low + 1
if count < 0 or count > available then
  count = available
end
if count <= 0 then
  return {version, first, low, {}, ledger}
end
local start = low - first
return {version, first, low, redis.call('LRANGE', log, start, start + count - 1), ledger}
""")

INFO = Script("info", _PRELUDE + """
local version, first, ledger = state()
if not version then
  return false
end
local times = redis.call('HMGET', meta, 'created', 'updated', 'expires', 'user')
return {version, first, times[1], times[2], redis.call('PTTL', meta), times[3], ledger,
        times[4]}
""")

TRIM = Script("trim", _PRELUDE + """
-- ARGV: keep_last, through_seq ('': none; else entries above it are kept).
-- Never renumbers, never lowers the version, keeps the expiry.
local keep = tonumber(ARGV[1])
local through = tonumber(ARGV[2])
local version, first = state()
if not version then
  return 0
end
local cut = version - keep + 1
if through then
  cut = math.min(cut, through + 1)
end
cut = math.max(first, cut)
if cut > first then
  redis.call('LTRIM', log, cut - first, -1)
  redis.call('HSET', meta, 'first_seq', int(cut))
end
return cut - first
""")

# The end of DELETE and FORGET: the session goes whole, every key of it; 1 if it
# was intact, 0 if absent or only what eviction left of it.
_REMOVE = """
local version = state()
redis.call('UNLINK', meta, log, ids)
if version then
  return 1
end
return 0
"""

DELETE = Script("delete", _PRELUDE + _REMOVE)

FORGET = Script("forget", _PRELUDE + """
-- ARGV: user. Deletes the session only if it is that user's: one written again
-- since the index named it, by another user or by no user (no 'user' field),
-- stays. What eviction left of a session (no meta, so no owner to ask) goes
-- too: the index says it was the user's.
if redis.call('EXISTS', meta) == 1 and redis.call('HMGET', meta, 'user')[1] ~= ARGV[1] then
  return 0
end
""" + _REMOVE)

# The user index: KEYS = {the user's SET}. Scripts, not bare commands, so that
# they travel as every other call (EVALSHA, WAIT after a write, cluster routing).
INDEX_ADD = Script("index_add", "return redis.call('SADD', KEYS[1], ARGV[1])")
INDEX_REMOVE = Script("index_remove", "return redis.call('SREM', KEYS[1], ARGV[1])")
INDEX_MEMBERS = Script("index_members", "return redis.call('SMEMBERS', KEYS[1])")

RESEAL = Script("reseal", _PRELUDE + """
-- ARGV: n, then n triples (seq, the entry it must still be, its new entry). Key
-- rotation: an entry is replaced in place (LSET: same seq, version, ids and
-- expiry) only while it is still the old one; trimmed or rewritten, it is left.
local n = tonumber(ARGV[1])
local version, first = state()
if not version then
  return 0
end
local replaced = 0
for i = 0, n - 1 do
  local seq = tonumber(ARGV[2 + 3 * i])
  if seq >= first and seq <= version then
    local index = seq - first
    if redis.call('LRANGE', log, index, index)[1] == ARGV[3 + 3 * i] then
      redis.call('LSET', log, index, ARGV[4 + 3 * i])
      replaced = replaced + 1
    end
  end
end
return replaced
""")
