-- First part of every sema-redis script: the keys, the server clock, and the meta hash read with one
-- HMGET and written back with one HSET. The fast paths of ACQUIRE and RELEASE need nothing more; the
-- keys, the meta fields and the invariants S1-S5 every script keeps are described in common.lua.

local K_META, K_HOLD, K_LEASE, K_QUEUE, K_WAIT, K_WLIVE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local PREFIX = string.sub(K_META, 1, -5) -- 'sem:{name}:'
local VERSION = '2'
local REAP_BATCH = 64
local NEVER = 9007199254740991 -- 2^53 - 1: 'due' when no deadline is stored

local NOW_MS, NOW_US = nil, nil
local M = nil
local dirty = {} -- meta fields changed by this script, written back once by save_meta()

local function fmt(n)
  return string.format('%.0f', n)
end

-- Only the server's clock: deadlines are server ms, tokens have a server us floor. Read once, when
-- first needed (S5).
local function now()
  if not NOW_MS then
    local time = redis.call('TIME')
    NOW_MS = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    NOW_US = tonumber(time[1]) * 1000000 + tonumber(time[2])
  end
  return NOW_MS
end

local function set(field, value)
  M[field] = value
  dirty[field] = true
end

local function corrupt(why)
  return {'ERR_CORRUPT', K_META .. ' ' .. why}
end

local ALL_FIELDS = {'limit', 'max', 'used', 'fence', 'seq', 'closed', 'idle', 'due', 'qlen'}

-- One HMGET reads the whole state and checks the schema; TYPE and EXISTS run only when it finds no
-- semaphore (a wrong type, a missing key).
local function load_meta()
  local v = redis.pcall('HMGET', K_META, 'ver', 'limit', 'max', 'used', 'fence', 'seq', 'closed', 'idle',
      'due', 'qlen')
  if v.err then
    return corrupt('is a ' .. redis.call('TYPE', K_META)['ok'] .. ', not a hash')
  end
  if not v[1] then
    if redis.call('EXISTS', K_META) == 1 then
      return corrupt('has no schema version')
    end
    if ARGV[1] == '' then
      return {'ERR_MISSING'}
    end
    M = {limit = tonumber(ARGV[1]), max = tonumber(ARGV[2]), used = 0, fence = 0, seq = 0, closed = 0,
         idle = tonumber(ARGV[3]) or 0, due = NEVER, qlen = 0}
    for _, f in ipairs(ALL_FIELDS) do
      dirty[f] = true
    end
    dirty.ver = true
    -- The rest of the state went with the meta key (a restart without persistence, a deleted key):
    -- start clean so that S1 and S3 hold. Holders learn on their next renewal.
    redis.call('DEL', K_HOLD, K_LEASE, K_QUEUE, K_WAIT, K_WLIVE)
    return nil
  end
  if v[1] ~= VERSION and v[1] ~= '1' then
    return corrupt('has schema version ' .. tostring(v[1]) .. ', expected ' .. VERSION)
  end
  M = {limit = tonumber(v[2]), max = tonumber(v[3]), used = tonumber(v[4]), fence = tonumber(v[5]),
       seq = tonumber(v[6]), closed = tonumber(v[7]), idle = tonumber(v[8]) or 0, due = tonumber(v[9]),
       qlen = tonumber(v[10])}
  if not (M.limit and M.max and M.used and M.fence and M.seq and M.closed) then
    for _, f in ipairs({'limit', 'max', 'used', 'fence', 'seq', 'closed'}) do
      if M[f] == nil then
        return corrupt('field ' .. f .. ' is missing or not a number')
      end
    end
  end
  if v[1] == '1' then
    -- Schema 1 had no due and no qlen: derive them (S3, S4) and mark the semaphore as schema 2, which
    -- a client that knows only schema 1 refuses rather than serve the queue out of order.
    set('qlen', redis.call('ZCARD', K_QUEUE))
    set('due', 0)
    dirty.ver = true
  elseif M.due == nil or M.qlen == nil then
    return corrupt('field due or qlen is missing or not a number')
  end
  return nil
end

local function save_meta()
  local args = {}
  if dirty.ver then
    args[1], args[2] = 'ver', VERSION
  end
  for _, f in ipairs(ALL_FIELDS) do
    if dirty[f] then
      args[#args + 1] = f
      args[#args + 1] = fmt(M[f])
    end
  end
  if #args > 0 then
    redis.call('HSET', K_META, unpack(args))
  end
end
