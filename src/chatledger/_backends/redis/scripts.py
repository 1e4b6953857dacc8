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
local LEGACY_LEDGER = '0'
-- meta's 'ids' field says how the ids hash names ids: absent (older versions) every
-- id by its text; '2' a UUID id by its 17-byte packed form (calls.index_key), a field
-- each; '3:<fields>:<buckets>' UUID ids as records in buckets (_INDEX), any other id
-- a field of its own, and the hash holds <fields> fields of which <buckets> buckets.
local COMPACT_IDS = '2'

local function int(number)
  return string.format('%d', number)
end

-- version, first_seq and ledger id of an intact session, whether it has an expiry,
-- its ids layout, and (bucketed) its ids hash's fields and buckets; nil when absent
-- or damaged. A session stored before ledgers had ids has the legacy id.
local function state()
  local fields = redis.call('HMGET', meta, 'version', 'first_seq', 'ledger', 'expires', 'ids')
  local version, first = tonumber(fields[1]), tonumber(fields[2])
  if not (version and first) then
    return nil
  end
  local layout, count, buckets = fields[5], version, nil
  if layout and layout ~= COMPACT_IDS then
    count, buckets = string.match(layout, '^3:(%d+):(%d+)$')
    count, buckets = tonumber(count), tonumber(buckets)
    if not count then
      return nil
    end
  end
  if redis.call('LLEN', log) ~= version - first + 1 or redis.call('HLEN', ids) ~= count then
    return nil
  end
  return version, first, fields[3] or LEGACY_LEDGER, fields[4], layout, count, buckets
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

# The bucketed ids index (meta ids=3:...), APPEND's alone. One hash field per
# id costs Redis 7 some 72 bytes (table entry, field, value, bucket array)
# beside the id itself; a UUID id (the default, 16 bytes) is instead a 26-byte
# record in a bucket: the id's two halves swapped (its random half first, so
# that a search for it rarely stops at another record: UUIDv7s made close
# together share their first bytes), its seq (big-endian u32), then how far its
# batch reaches before and after it (u24 each). A bucket is one hash field,
# '\254<n>' (0xFE never occurs in UTF-8, so no id's text is a bucket's name),
# whose value is its records. Buckets grow by linear hashing: with m buckets
# and P the largest power of two <= m, the record of an id whose last four
# bytes are h is in bucket h % 2P, or h % P where that is >= m; past LOAD
# records per bucket, bucket m - P splits into itself and bucket m. So an id is
# looked for in one bucket of about LOAD records (one HMGET for the batch, a
# plain string.find), and every bucket always exists, maybe empty.
_INDEX = """
local RECORD, LOAD, MAX_SEQ, MAX_BATCH = 26, 64, 4294967295, 16777215
local m, power, values, dirty = 0, 1, {}, {}

local function u32_at(text, at)
  local a, b, c, d = string.byte(text, at, at + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local function u24_at(text, at)
  local a, b, c = string.byte(text, at, at + 2)
  return (a * 256 + b) * 256 + c
end

local function bytes(x, count)
  if count == 4 then
    return string.char(math.floor(x / 16777216) % 256, math.floor(x / 65536) % 256,
                       math.floor(x / 256) % 256, x % 256)
  end
  return string.char(math.floor(x / 65536) % 256, math.floor(x / 256) % 256, x % 256)
end

-- A UUID's record key from calls.index_key's 0xFF and 16 bytes; nil for any other id.
local function record_key(id)
  if #id == 17 and string.byte(id, 1) == 255 then
    return string.sub(id, 10) .. string.sub(id, 2, 9)
  end
end

local function address(key)
  local h = u32_at(key, 5)
  local at = h % (2 * power)
  if at >= m then
    at = h % power
  end
  return at
end

local function bucket(number)
  local value = values[number]
  if not value then
    value = redis.call('HGET', ids, '\\254' .. number) or ''
    values[number] = value
  end
  return value
end

local function split()
  local from, to = m - power, m
  local value, stay, move = bucket(from), {}, {}
  for at = 1, #value, RECORD do
    local record = string.sub(value, at, at + RECORD - 1)
    if u32_at(record, 5) % (2 * power) == to then
      move[#move + 1] = record
    else
      stay[#stay + 1] = record
    end
  end
  values[from], values[to] = table.concat(stay), table.concat(move)
  dirty[from], dirty[to] = true, true
  m = m + 1
  if m == 2 * power then
    power = m
  end
end
"""

APPEND = Script("append", _PRELUDE + _INDEX + """
-- ARGV: a header 'expect ttl_ms strict n confirm indexed now fresh expires' (one
-- argument: each costs the server more than parsing them), the wanted ledger ('':
-- any), the user ('': none), n ids (as calls.index_key names them: a UUID as 0xFF and
-- its 16 bytes), n entries. expect: -1 any version; ttl_ms: 0 none; strict 1: the
-- wanted ledger is checked before the ids (0: a retry of a batch already stored, on
-- whatever ledger, is a retry); confirm 1: the caller WAITs for replicas after this;
-- indexed 1: the caller added the session to the user's index; fresh: the ledger id
-- if this creates one; expires: the deadline to record ('': none).
local expect, ttl_ms, strict, n, confirm, indexed, now, fresh, expires = string.match(
  ARGV[1], '^(%-?%d+) (%d+) ([01]) (%d+) ([01]) ([01]) (%S+) (%S+) ?(.*)$')
expect, ttl_ms, n = tonumber(expect), tonumber(ttl_ms), tonumber(n)
local wanted, user, ID0 = ARGV[2], ARGV[3], 3
local ENTRY0 = ID0 + n

local version, first, ledger, had_expiry, layout, count, buckets = state()
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
local bucketed = not version or buckets ~= nil
if bucketed then
  m = buckets or 0
  while power * 2 <= m do
    power = power * 2
  end
end

-- Where each id of the batch is stored (false: not stored), bucketed: one HMGET of
-- the buckets of its UUIDs and the fields of its other ids.
local function lookup_bucketed()
  -- names: what to HMGET; numbers[i]: the bucket names[i] is, or nil for an id's field
  local names, numbers, keys, got = {}, {}, {}, {}
  for i = 1, n do
    local id = ARGV[ID0 + i]
    local key = record_key(id)
    keys[i] = key
    if not key then
      names[#names + 1] = id
    elseif m > 0 then
      local number = address(key)
      if not got[number] then
        got[number] = true
        names[#names + 1] = '\\254' .. number
        numbers[#names] = number
      end
    end
  end
  for low = 1, #names, CHUNK do
    local high = math.min(low + CHUNK - 1, #names)
    local part = redis.call('HMGET', ids, unpack(names, low, high))
    for i = low, high do
      if numbers[i] then
        values[numbers[i]] = part[i - low + 1] or ''
      else
        got[names[i]] = part[i - low + 1]
      end
    end
  end
  local found, stored = {}, false
  for i = 1, n do
    local key, place = keys[i], false
    if not key then
      place = got[ARGV[ID0 + i]] or false
    elseif m > 0 then
      local value = values[address(key)]
      if #value % RECORD ~= 0 then
        error('chatledger: unreadable message id record in bucket ' .. address(key))
      end
      local at = string.find(value, key, 1, true)
      while at and (at - 1) % RECORD ~= 0 do  -- bytes across two records: not this id
        at = string.find(value, key, at + 1, true)
      end
      if at then
        local seq = u32_at(value, at + 16)
        place = int(seq) .. ':' .. int(seq - u24_at(value, at + 20)) .. ':' ..
                int(seq + u24_at(value, at + 23))
      end
    end
    found[i] = place
    stored = stored or place
  end
  return found, stored
end

-- The same in the layouts before buckets: a field per id; a session without the
-- 'ids' field in meta may also name an id by its text.
local function lookup_fields()
  local compact = layout == COMPACT_IDS
  local function text(id)
    local key = record_key(id)
    if not key then
      return id
    end
    local hex = string.gsub(string.sub(id, 2), '.', function(c)
      return string.format('%02x', string.byte(c))
    end)
    return string.sub(hex, 1, 8) .. '-' .. string.sub(hex, 9, 12) .. '-' ..
           string.sub(hex, 13, 16) .. '-' .. string.sub(hex, 17, 20) .. '-' .. string.sub(hex, 21)
  end
  local found, stored = {}, false
  for low = 1, n, CHUNK do
    local high = math.min(low + CHUNK - 1, n)
    local part = redis.call('HMGET', ids, unpack(ARGV, ID0 + low, ID0 + high))
    local texts = {}
    if not compact then
      for i = low, high do
        texts[#texts + 1] = text(ARGV[ID0 + i])
      end
      texts = redis.call('HMGET', ids, unpack(texts))
    end
    for i = 1, #part do
      local place = part[i] or (not compact and texts[i])
      found[#found + 1] = place
      stored = stored or place
    end
  end
  return found, stored
end

if version then
  -- Idempotency: if any id is stored, write nothing; Python decides (contract.dedupe).
  local found, stored
  if bucketed then
    found, stored = lookup_bucketed()
  else
    found, stored = lookup_fields()
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
  version, first, ledger, created, count, buckets = 0, 1, fresh, true, 0, 0
end

if expect >= 0 and expect ~= version then
  return {'conflict', version}  -- refused: nothing written, leftovers kept for forensics
end
-- A tagged session is created only once the user's index names it (another slot).
if created and user ~= '' and indexed ~= '1' then
  return {'unindexed'}
end
if bucketed and (version + n > MAX_SEQ or n > MAX_BATCH) then
  return redis.error_reply('chatledger: on Redis a session holds at most ' .. int(MAX_SEQ) ..
                           ' messages, a batch at most ' .. int(MAX_BATCH))
end

-- A new ledger starts from nothing: remove leftovers, and only those, since a
-- script's first write decides whether a full server (maxmemory, noeviction)
-- refuses it, and that must be the RPUSH, not a DEL of nothing.
if created and redis.call('EXISTS', meta, log, ids) > 0 then
  redis.call('DEL', meta, log, ids)
end

-- Each id remembers its seq and its batch, so that only a whole batch counts as a retry.
local batch = ':' .. int(version + 1) .. ':' .. int(version + n)
local records, fields_added = {}, 0
for low = 1, n, CHUNK do
  local high = math.min(low + CHUNK - 1, n)
  redis.call('RPUSH', log, unpack(ARGV, ENTRY0 + low, ENTRY0 + high))
  local id_places = {}
  for i = low, high do
    local id = ARGV[ID0 + i]
    local key = bucketed and record_key(id)
    if key then
      records[#records + 1] = key .. bytes(version + i, 4) .. bytes(i - 1, 3) .. bytes(n - i, 3)
    else
      id_places[#id_places + 1] = id
      id_places[#id_places + 1] = int(version + i) .. batch
    end
  end
  if #id_places > 0 then
    redis.call('HSET', ids, unpack(id_places))
    fields_added = fields_added + #id_places / 2
  end
end
local index = {}
if bucketed then
  if #records > 0 then
    if m == 0 then
      m, values[0], dirty[0] = 1, '', true
    end
    local packed = version - (count - buckets)
    while packed + #records > LOAD * m do
      split()
    end
    local pending = {}
    for _, record in ipairs(records) do
      local number = address(record)
      local list = pending[number]
      if not list then
        list = {bucket(number)}
        pending[number] = list
      end
      list[#list + 1] = record
    end
    local bucket_fields = {}
    for number, list in pairs(pending) do
      values[number], dirty[number] = table.concat(list), true
    end
    for number in pairs(dirty) do
      bucket_fields[#bucket_fields + 1] = '\\254' .. number
      bucket_fields[#bucket_fields + 1] = values[number]
    end
    for low = 1, #bucket_fields, 2 * CHUNK do
      redis.call('HSET', ids, unpack(bucket_fields, low,
                                     math.min(low + 2 * CHUNK - 1, #bucket_fields)))
    end
  end
  if created or fields_added > 0 or m ~= buckets then
    index = {'ids', '3:' .. int(count + fields_added + m - buckets) .. ':' .. int(m)}
  end
end
if created then
  redis.call('HSET', meta, 'version', int(version + n), 'first_seq', int(first), 'updated', now,
             'created', now, 'ledger', ledger, unpack(index))
  if user ~= '' then
    redis.call('HSET', meta, 'user', user)
  end
else
  redis.call('HSET', meta, 'version', int(version + n), 'updated', now, unpack(index))
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
-- ARGV: user. Deletes the session only if it is that user's: one written again by
-- someone else since the index named it stays. What eviction left of a session
-- (no meta, so no owner to ask) goes too: the index says it was the user's.
local owner = redis.call('HMGET', meta, 'user')[1]
if owner and owner ~= ARGV[1] then
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
