-- First part of every sema-redis script: the keys, the server clock, and the meta value, read with one GET
-- and written back with one SET (a fast path: SETRANGE of the fields it changed), both in binary (Redis's
-- struct library, C code): no decimal parsing or formatting. The fast paths of ACQUIRE and RELEASE need nothing more; the keys, the meta value and the
-- invariants S1-S5 every script keeps are described in common.lua.

local K_META, K_HOLD, K_LEASE, K_QUEUE = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local VERSION = 4
local META = '<Bddddddddd' -- version, then limit, max, used, fence, seq, closed, idle, due, qlen
local META_SIZE = 73
-- Offsets in the meta value of 'used' (then fence, seq, closed, idle, due, qlen) and of 'seq'. A fast path
-- writes the fields it changes, from the first to the last, with SETRANGE: packing all ten fields and
-- writing the whole value costs Redis more than the command does (a SET is still needed when this script
-- created the value).
local META_USED, META_SEQ = '17', '33'
local NEVER = 9007199254740991 -- 2^53 - 1: 'due' when no deadline is stored

local NOW_MS, NOW_US = nil, nil
local CREATED = false -- this script created the semaphore (its meta is written even if nothing else changes)
-- The meta fields, as numbers (integers below 2^53, exact in a Lua double); for a partitioned semaphore
-- (schema 5, see partitions.lua), pv: its whole meta value, and pn: its number of partitions; partitioned:
-- true in the scripts of a partitioned semaphore, set on the next line in theirs only (Script.java), so
-- that the others pay nothing for it.
local limit, max, used, fence, seq, closed, idle, due, qlen, pv, pn, partitioned
--@partitioned

-- Reads the meta value: one GET, which also checks the schema. Creates the semaphore when the key is
-- missing and the caller gave its limit (the creation argument). A semaphore of an older schema (1 or 2: a hash; 3: waiters in
-- keys of their own) is left alone: the reply ERR_UPGRADE asks the client to run upgrade.lua, which
-- declares the older keys, and then this script again.
-- Inline, not a function: a fast path that returns early defines no function at all.
do
  local v = redis.pcall('GET', K_META)
  local err = nil
  if type(v) == 'string' then
    local ver = string.byte(v)
    if #v == META_SIZE and ver == VERSION then
      local _
      _, limit, max, used, fence, seq, closed, idle, due, qlen = struct.unpack(META, v)
    elseif #v == META_SIZE and ver == 3 then
      return {'ERR_UPGRADE'}
    elseif ver == 5 and #v > META_SIZE + 16 then
      -- Partitioned (API.md §11a): schema 4's fields in another order, with the partitions' (partitions.lua).
      -- Only a partitioned semaphore's script runs on it; any other replies with the stored partitions, which
      -- a handle being built takes as its own (the stored ones win, like the stored limit).
      local _
      _, limit, max, closed, idle, pn, _, seq, due, qlen = struct.unpack(META, v)
      if not partitioned then
        return {'ERR_LAYOUT', string.sub(v, META_SIZE + 17 + 24 * pn)}
      end
      fence, used = struct.unpack('<dd', v, META_SIZE + 1 + 8 * pn)
      pv = v
    elseif #v > 0 and ver < 32 then
      err = 'has schema version ' .. ver .. ', expected ' .. VERSION
    else
      err = 'does not hold a semaphore: ' .. string.sub(v, 1, 60)
    end
  elseif v then -- an error reply: the key holds another type
    local kind = redis.call('TYPE', K_META)['ok']
    if kind ~= 'hash' then
      err = 'is a ' .. kind .. ', not a semaphore'
    else
      local ver = redis.call('HGET', K_META, 'ver')
      if ver == '1' or ver == '2' then
        return {'ERR_UPGRADE'}
      end
      err = 'has schema version ' .. tostring(ver or 'none') .. ', expected ' .. VERSION
    end
  else
    -- The creation argument, '+limit ceiling idleMs', comes last, and only in a call resent after the
    -- reply ERR_MISSING: every argument costs Redis a string and a table slot in every call. A
    -- partitioned semaphore's goes on with ' ' and the partitions as stored (partitions.lua).
    local c = ARGV[#ARGV] or ''
    if string.byte(c) ~= 43 then
      return {'ERR_MISSING'}
    end
    local l, m, i, spec = string.match(c, '^%+(%d+) (%d+) (%d+)(.*)$')
    if not l or (spec == '') ~= not partitioned then
      return {'ERR_CORRUPT', K_META .. ' cannot be created from "' .. c .. '": not "+limit ceiling idleMs"'
          .. (partitioned and ' and the partitions' or '')}
    end
    limit, max, used, fence, seq, closed, idle, due, qlen = tonumber(l), tonumber(m), 0, 0, 0, 0, tonumber(i), NEVER, 0
    CREATED = true
    -- The rest of the state went with the meta key (a restart without persistence, a deleted key):
    -- start clean so that S1 and S3 hold. Holders learn on their next renewal.
    redis.call('DEL', K_HOLD, K_LEASE, K_QUEUE)
    if spec ~= '' then
      pn = 0
      for _ in string.gmatch(string.match(spec, '^ ([^|]*)'), '[^;]+') do
        pn = pn + 1
      end
      pv = struct.pack(META, 5, limit, max, closed, idle, pn, -1, seq, due, qlen) .. string.rep(struct.pack('<d', 0), pn)
          .. struct.pack('<dd', fence, used) .. string.rep(struct.pack('<dd', 0, 0), pn) .. string.sub(spec, 2)
    end
  end
  if err then
    return {'ERR_CORRUPT', K_META .. ' ' .. err}
  end
end
