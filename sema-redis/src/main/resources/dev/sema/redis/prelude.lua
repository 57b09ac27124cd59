-- First part of every sema-redis script: the keys, the server clock, and the meta value, read with one GET
-- and written back with one SET, both in binary (Redis's struct library, C code): no decimal parsing or
-- formatting. The fast paths of ACQUIRE and RELEASE need nothing more; the keys, the meta value and the
-- invariants S1-S5 every script keeps are described in common.lua.

local K_META, K_HOLD, K_LEASE, K_QUEUE, K_WAIT, K_WLIVE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local VERSION = 3
local META = '<Bddddddddd' -- version, then limit, max, used, fence, seq, closed, idle, due, qlen
local META_SIZE = 73
local NEVER = 9007199254740991 -- 2^53 - 1: 'due' when no deadline is stored

local NOW_MS, NOW_US = nil, nil
local CREATED = false -- this script created the semaphore (its meta is written even if nothing else changes)
-- The meta fields, as numbers (integers below 2^53, exact in a Lua double).
local limit, max, used, fence, seq, closed, idle, due, qlen

-- Reads the meta value: one GET, which also checks the schema. Creates the semaphore when the key is
-- missing and the caller gave its limit; upgrades schemas 1 and 2 (a hash, holders in decimal) in place.
-- Inline, not a function: a fast path that returns early defines no function at all.
do
  local v = redis.pcall('GET', K_META)
  local err = nil
  if type(v) == 'string' then
    if #v == META_SIZE and string.byte(v) == VERSION then
      local _
      _, limit, max, used, fence, seq, closed, idle, due, qlen = struct.unpack(META, v)
    elseif #v > 0 and string.byte(v) < 32 then
      err = 'has schema version ' .. string.byte(v) .. ', expected ' .. VERSION
    else
      err = 'does not hold a semaphore: ' .. string.sub(v, 1, 60)
    end
  elseif v then -- an error reply: the key holds another type
    local kind = redis.call('TYPE', K_META)['ok']
    if kind ~= 'hash' then
      err = 'is a ' .. kind .. ', not a semaphore'
    else
      local h = redis.call('HMGET', K_META, 'ver', 'limit', 'max', 'used', 'fence', 'seq', 'closed', 'idle')
      if h[1] ~= '1' and h[1] ~= '2' then
        err = 'has schema version ' .. tostring(h[1] or 'none') .. ', expected ' .. VERSION
      else
        local fields = {'limit', 'max', 'used', 'fence', 'seq', 'closed'}
        for i, f in ipairs(fields) do
          if not err and not tonumber(h[i + 1]) then
            err = 'field ' .. f .. ' is missing or not a number'
          end
        end
        if not err then
          -- Schema 1 kept no due and no qlen: derive them (S3, S4). A client of an older schema now finds
          -- a string and refuses, rather than serve the queue out of order.
          limit, max, used = tonumber(h[2]), tonumber(h[3]), tonumber(h[4])
          fence, seq, closed = tonumber(h[5]), tonumber(h[6]), tonumber(h[7])
          idle, due, qlen = tonumber(h[8]) or 0, 0, redis.call('ZCARD', K_QUEUE)
          redis.call('DEL', K_META)
          -- Their holders values were 'permits|token|clientId': rewrite them in binary, once.
          local hv = redis.call('HGETALL', K_HOLD)
          for i = 1, #hv, 2 do
            local p, tok, hcid = string.match(hv[i + 1], '^(%d+)|(%d+)|(.*)$')
            if p then
              redis.call('HSET', K_HOLD, hv[i], struct.pack('<dd', tonumber(p), tonumber(tok)) .. hcid)
            end
          end
          CREATED = true
        end
      end
    end
  elseif ARGV[1] == '' then
    return {'ERR_MISSING'}
  else
    limit, max, used, fence, seq, closed, idle, due, qlen =
        tonumber(ARGV[1]), tonumber(ARGV[2]), 0, 0, 0, 0, tonumber(ARGV[3]) or 0, NEVER, 0
    CREATED = true
    -- The rest of the state went with the meta key (a restart without persistence, a deleted key):
    -- start clean so that S1 and S3 hold. Holders learn on their next renewal.
    redis.call('DEL', K_HOLD, K_LEASE, K_QUEUE, K_WAIT, K_WLIVE)
  end
  if err then
    return {'ERR_CORRUPT', K_META .. ' ' .. err}
  end
end
