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
-- meta's 'ids' field, how the ids hash names ids (see _INDEX): absent (older
-- versions) every id by its text; '2' a UUID id by its 17-byte packed form (calls.index_key);
-- '3' UUID ids as records in buckets, any other id by its text.
local COMPACT_IDS, BUCKETED_IDS = '2', '3'

local function int(number)
  return string.format('%d', number)
end

-- version, first_seq and ledger id of an intact session, whether it has an expiry,
-- its ids layout, and (bucketed) how many UUID ids its buckets hold and how many
-- buckets there are; nil when absent or damaged. A session stored before ledgers
-- had ids has the legacy id.
local function state()
  local fields = redis.call('HMGET', meta, 'version', 'first_seq', 'ledger', 'expires', 'ids',
                            'packed', 'buckets')
  local version, first = tonumber(fields[1]), tonumber(fields[2])
  if not (version and first) then
    return nil
  end
  local layout, packed, buckets = fields[5], tonumber(fields[6]) or 0, tonumber(fields[7]) or 0
  -- ids hash fields: one per id, but a bucket for all the UUID ids it holds.
  local fields_expected = version
  if layout == BUCKETED_IDS then
    fields_expected = version - packed + buckets
  end
  if redis.call('LLEN', log) ~= version - first + 1 or redis.call('HLEN', ids) ~= fields_expected
  then
    return nil
  end
  return version, first, fields[3] or LEGACY_LEDGER, fields[4], layout, packed, buckets
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

# The bucketed ids index (meta ids=3), APPEND's alone. One hash field per id
# costs Redis 7 some 72 bytes (table entry, field, value, bucket array) beside
# the id itself; a UUID id (the default, 16 bytes) is instead a 28-byte record
# (the id, then seq, batch_first and batch_last as big-endian u32) in a bucket,
# one hash field '\254<n>' (0xFE never occurs in UTF-8, so no id's text is a
# bucket's name) whose value is the records concatenated. Buckets grow by
# linear hashing: with m buckets and P the largest power of two <= m, a record
# whose id ends in the u32 h is in bucket h % 2P, or h % P where that is >= m;
# past LOAD records per bucket, bucket m - P splits into itself and bucket m.
# So an id is found in one bucket of at most ~2 LOAD records (one HMGET, a
# plain string.find), every bucket always exists (maybe empty), and the hash
# holds version - packed + buckets fields, which state() checks.
_INDEX = """
local RECORD, LOAD, MAX_SEQ = 28, 40, 4294967295

local function u32(x)
  return string.char(math.floor(x / 16777216) % 256, math.floor(x / 65536) % 256,
                     math.floor(x / 256) % 256, x % 256)
end

local function u32_at(text, at)
  local a, b, c, d = string.byte(text, at, at + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local function bucket_field(number)
  return '\\254' .. int(number)
end

-- The buckets of one call: m, P, and the values read or rewritten so far.
local Buckets = {}
Buckets.__index = Buckets

local function buckets_of(m)
  local power = 1
  while power * 2 <= m do
    power = power * 2
  end
  return setmetatable({m = m, power = power, values = {}, dirty = {}}, Buckets)
end

function Buckets:address(id)  -- id: 16 bytes
  local h = u32_at(id, 13)
  local at = h % (2 * self.power)
  if at >= self.m then
    at = h % self.power
  end
  return at
end

-- Read the buckets of these ids (16 bytes each) in one HMGET, as far as not read yet.
function Buckets:load(keys)
  local wanted, names = {}, {}
  for _, id in ipairs(keys) do
    local number = self:address(id)
    if not self.values[number] and not wanted[number] then
      wanted[number] = true
      names[#names + 1] = number
    end
  end
  for low = 1, #names, CHUNK do
    local high = math.min(low + CHUNK - 1, #names)
    local part = {}
    for i = low, high do
      part[#part + 1] = bucket_field(names[i])
    end
    local values = redis.call('HMGET', ids, unpack(part))
    for i = low, high do
      local value = values[i - low + 1] or ''
      if #value % RECORD ~= 0 then
        error('chatledger: unreadable message id record in bucket ' .. names[i])
      end
      self.values[names[i]] = value
    end
  end
end

-- "seq:batch_first:batch_last" of a stored id, or false.
function Buckets:find(id)
  local value = self.values[self:address(id)]
  local at = string.find(value, id, 1, true)
  while at and (at - 1) % RECORD ~= 0 do  -- bytes across two records: not this id
    at = string.find(value, id, at + 1, true)
  end
  if not at then
    return false
  end
  return int(u32_at(value, at + 16)) .. ':' .. int(u32_at(value, at + 20)) .. ':' ..
         int(u32_at(value, at + 24))
end

-- Add one bucket: split bucket m - P by the next bit of each record's h.
function Buckets:split()
  local from, to = self.m - self.power, self.m
  self:load_number(from)
  local value, stay, move = self.values[from], {}, {}
  for at = 1, #value, RECORD do
    local record = string.sub(value, at, at + RECORD - 1)
    if u32_at(record, 13) % (2 * self.power) == to then
      move[#move + 1] = record
    else
      stay[#stay + 1] = record
    end
  end
  self.values[from], self.values[to] = table.concat(stay), table.concat(move)
  self.dirty[from], self.dirty[to] = true, true
  self.m = self.m + 1
  if self.m == 2 * self.power then
    self.power = self.m
  end
end

function Buckets:load_number(number)
  if not self.values[number] then
    self.values[number] = redis.call('HGET', ids, bucket_field(number)) or ''
  end
end

-- Store records (id .. seq .. batch), after growing to fit them.
function Buckets:add(records, packed)
  if self.m == 0 and #records > 0 then
    self.m, self.power, self.values[0], self.dirty[0] = 1, 1, '', true
  end
  while packed + #records > LOAD * self.m do
    self:split()
  end
  local pending = {}
  for _, record in ipairs(records) do
    local number = self:address(record)
    pending[number] = pending[number] or {}
    table.insert(pending[number], record)
  end
  for number, list in pairs(pending) do
    self:load_number(number)
    self.values[number] = self.values[number] .. table.concat(list)
    self.dirty[number] = true
  end
end

function Buckets:save()
  local fields = {}
  for number in pairs(self.dirty) do
    fields[#fields + 1] = bucket_field(number)
    fields[#fields + 1] = self.values[number]
  end
  for low = 1, #fields, 2 * CHUNK do
    redis.call('HSET', ids, unpack(fields, low, math.min(low + 2 * CHUNK - 1, #fields)))
  end
end
"""

APPEND = Script("append", _PRELUDE + _INDEX + """
-- ARGV: expect_version (-1: any), now, ttl_ms (0: none), expires, wanted ledger
-- ('': any), strict ('1': the wanted ledger is checked before the ids; '0': a retry of
-- a batch already stored, on whatever ledger, is a retry), the ledger id if this
-- creates one, n, n ids (as calls.index_key names them: a UUID as 0xFF and its 16
-- bytes), n entries, confirm (1: the caller WAITs for replicas after this), the n ids
-- as text (what older versions stored), user ('': none), indexed ('1': the caller
-- added the session to the user's index)
local expect, now, ttl_ms, expires = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), ARGV[4]
local wanted, strict, fresh, n = ARGV[5], ARGV[6] == '1', ARGV[7], tonumber(ARGV[8])
local ID0, ENTRY0 = 8, 8 + n
local TEXT0 = ENTRY0 + n + 1
local user, indexed = ARGV[TEXT0 + n + 1], ARGV[TEXT0 + n + 2] == '1'

local version, first, ledger, had_expiry, layout, packed, buckets = state()
local function lost()
  return {'lost', version or 0, ledger or false}  -- the ledger aimed at is gone
end
if wanted ~= '' and strict and ledger ~= wanted then
  return lost()
end
-- A session's user is set by its first append and never changes.
if version and user ~= '' then
  local owner = redis.call('HMGET', meta, 'user')[1]
  if owner ~= user then
    return {'user', owner}
  end
end

-- The batch's ids, bucketed: a UUID's 16 bytes (its record's key), or its text (a field).
local function is_uuid(key)
  return #key == 17 and string.byte(key, 1) == 255
end
local index
if version == nil or layout == BUCKETED_IDS then
  index = buckets_of(buckets or 0)
end

-- Where each id of the batch is stored (false: not stored), in the session's layout.
local function lookup()
  local found, stored = {}, false
  if index then
    local uuids, texts = {}, {}
    for i = 1, n do
      local key = ARGV[ID0 + i]
      if is_uuid(key) then
        uuids[#uuids + 1] = string.sub(key, 2)
      else
        texts[#texts + 1] = key
      end
    end
    if index.m > 0 then
      index:load(uuids)
    end
    local by_text = {}
    for low = 1, #texts, CHUNK do
      local part = redis.call('HMGET', ids, unpack(texts, low, math.min(low + CHUNK - 1, #texts)))
      for i = 1, #part do
        by_text[texts[low + i - 1]] = part[i]
      end
    end
    for i = 1, n do
      local key = ARGV[ID0 + i]
      local place
      if is_uuid(key) then
        place = index.m > 0 and index:find(string.sub(key, 2))
      else
        place = by_text[key]
      end
      found[i] = place or false
      stored = stored or place
    end
    return found, stored
  end
  local compact = layout == COMPACT_IDS
  for low = 1, n, CHUNK do
    local high = math.min(low + CHUNK - 1, n)
    local part = redis.call('HMGET', ids, unpack(ARGV, ID0 + low, ID0 + high))
    local text = compact or redis.call('HMGET', ids, unpack(ARGV, TEXT0 + low, TEXT0 + high))
    for i = 1, #part do
      local place = part[i] or (not compact and text[i])
      found[#found + 1] = place
      stored = stored or place
    end
  end
  return found, stored
end

if version then
  -- Idempotency: if any id is stored, write nothing; Python decides (contract.dedupe).
  local found, stored = lookup()
  if stored then
    if ARGV[ENTRY0 + n + 1] == '1' then
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
  packed = 0
end

if expect >= 0 and expect ~= version then
  return {'conflict', version}  -- refused: nothing written, leftovers kept for forensics
end
-- A tagged session is created only once the user's index names it (another slot).
if created and user ~= '' and not indexed then
  return {'unindexed'}
end
if index and version + n > MAX_SEQ then
  return redis.error_reply('chatledger: a session holds at most ' .. int(MAX_SEQ) ..
                           ' messages on Redis')
end

-- A new ledger starts from nothing: remove leftovers, and only those, since a
-- script's first write decides whether a full server (maxmemory, noeviction)
-- refuses it, and that must be the RPUSH, not a DEL of nothing.
if created and redis.call('EXISTS', meta, log, ids) > 0 then
  redis.call('DEL', meta, log, ids)
end

-- Each id remembers its seq and its batch, so that only a whole batch counts as a retry.
local batch_first, batch_last = version + 1, version + n
local batch = ':' .. int(batch_first) .. ':' .. int(batch_last)
local records, batch_tail = {}, index and (u32(batch_first) .. u32(batch_last))
for low = 1, n, CHUNK do
  local high = math.min(low + CHUNK - 1, n)
  redis.call('RPUSH', log, unpack(ARGV, ENTRY0 + low, ENTRY0 + high))
  local id_places = {}
  for i = low, high do
    local key = ARGV[ID0 + i]
    if index and is_uuid(key) then
      records[#records + 1] = string.sub(key, 2) .. u32(version + i) .. batch_tail
    else
      id_places[#id_places + 1] = key
      id_places[#id_places + 1] = int(version + i) .. batch
    end
  end
  if #id_places > 0 then
    redis.call('HSET', ids, unpack(id_places))
  end
end
local index_fields = {}
if index then
  index:add(records, packed)
  index:save()
  index_fields = {'packed', int(packed + #records), 'buckets', int(index.m)}
end
if created then
  redis.call('HSET', meta, 'version', int(version + n), 'first_seq', int(first), 'updated', now,
             'created', now, 'ledger', ledger, 'ids', BUCKETED_IDS, unpack(index_fields))
  if user ~= '' then
    redis.call('HSET', meta, 'user', user)
  end
else
  redis.call('HSET', meta, 'version', int(version + n), 'updated', now, unpack(index_fields))
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
