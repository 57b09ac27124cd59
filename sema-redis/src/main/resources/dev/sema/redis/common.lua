-- Shared head of every sema-redis script; the operation's own part follows it.
--
-- KEYS: 1 meta (HASH), 2 holders (HASH grantId -> 'permits|token|clientId'), 3 leases (ZSET grantId ->
-- lease deadline in server ms), 4 queue (ZSET waiterId -> arrival seq), 5 waiters (HASH waiterId ->
-- 'permits|clientId|leaseMs|kind', kind 'a' = acquire, 'i' = awaitIdle), 6 wlive (ZSET waiterId ->
-- liveness deadline in server ms). All share the hash tag {name}.
-- ARGV[1], ARGV[2], ARGV[3]: limit, ceiling and idle expiry (ms, '0' = never) to create the semaphore
-- with if its meta key is missing ('' = do not create). The operation's own arguments start at ARGV[4].
--
-- Invariants kept by every script: used == sum of the permits in holders; 0 <= limit <= max; once a
-- script ends, the head of the queue does not fit (an acquire head asks more than limit - used, an
-- idle head finds used > 0). Every count is an integer below 2^53, exact in a Lua double, and is
-- stored with string.format('%.0f') (tostring would print 1.7e+15).
-- Idle expiry (meta field 'idle' > 0, set at creation): once a script ends, every key of the semaphore
-- expires 'idle' ms after the last lease or waiter deadline still ahead (now, when nobody holds or
-- waits), so a semaphore left alone, or whose holders all died, disappears with all its keys at once.

local K_META, K_HOLD, K_LEASE, K_QUEUE, K_WAIT, K_WLIVE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local PREFIX = string.sub(K_META, 1, -5) -- 'sem:{name}:'
local VERSION = '1'
local REAP_BATCH = 64

-- Only the server's clock: deadlines are server ms, tokens have a server us floor.
local time = redis.call('TIME')
local NOW_MS = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local NOW_US = tonumber(time[1]) * 1000000 + tonumber(time[2])

local M = nil
local meta_dirty = false
local notices = {}
local notice_order = {}
local SELF = nil -- the id the caller asked about: it learns its outcome from the reply, not a message

local function fmt(n)
  return string.format('%.0f', n)
end

local function load_meta()
  local kind = redis.call('TYPE', K_META)['ok']
  if kind == 'none' then
    if ARGV[1] == '' then
      return {'ERR_MISSING'}
    end
    M = {limit = tonumber(ARGV[1]), max = tonumber(ARGV[2]), used = 0, fence = 0, seq = 0, closed = 0,
         idle = tonumber(ARGV[3]) or 0}
    meta_dirty = true
    -- The rest of the state went with the meta key (a restart without persistence, a deleted key):
    -- start clean so that used == sum(holders) holds. Holders learn on their next renewal.
    redis.call('DEL', K_HOLD, K_LEASE, K_QUEUE, K_WAIT, K_WLIVE)
    return nil
  end
  if kind ~= 'hash' then
    return {'ERR_CORRUPT', K_META .. ' is a ' .. kind .. ', not a hash'}
  end
  local v = redis.call('HMGET', K_META, 'ver', 'limit', 'max', 'used', 'fence', 'seq', 'closed', 'idle')
  if v[1] ~= VERSION then
    return {'ERR_CORRUPT', K_META .. ' has schema version ' .. tostring(v[1]) .. ', expected ' .. VERSION}
  end
  M = {limit = tonumber(v[2]), max = tonumber(v[3]), used = tonumber(v[4]), fence = tonumber(v[5]),
       seq = tonumber(v[6]), closed = tonumber(v[7]), idle = tonumber(v[8]) or 0}
  for _, f in ipairs({'limit', 'max', 'used', 'fence', 'seq', 'closed'}) do
    if M[f] == nil then
      return {'ERR_CORRUPT', K_META .. ' field ' .. f .. ' is missing or not a number'}
    end
  end
  return nil
end

local function save_meta()
  if meta_dirty then
    redis.call('HSET', K_META, 'ver', VERSION, 'limit', fmt(M.limit), 'max', fmt(M.max), 'used', fmt(M.used),
        'fence', fmt(M.fence), 'seq', fmt(M.seq), 'closed', fmt(M.closed), 'idle', fmt(M.idle))
  end
end

-- Idle expiry (see the header): every key lives until the last deadline still ahead, plus 'idle'.
local function expire_when_idle()
  local horizon = NOW_MS
  local l = redis.call('ZRANGE', K_LEASE, -1, -1, 'WITHSCORES')
  if l[2] then
    horizon = math.max(horizon, tonumber(l[2]))
  end
  local w = redis.call('ZRANGE', K_WLIVE, -1, -1, 'WITHSCORES')
  if w[2] then
    horizon = math.max(horizon, tonumber(w[2]))
  end
  local ttl = fmt(horizon - NOW_MS + M.idle)
  for _, k in ipairs({K_META, K_HOLD, K_LEASE, K_QUEUE, K_WAIT, K_WLIVE}) do
    redis.call('PEXPIRE', k, ttl)
  end
end

local function notify(cid, id, msg)
  if id == SELF then
    return
  end
  local list = notices[cid]
  if not list then
    list = {}
    notices[cid] = list
    notice_order[#notice_order + 1] = cid
  end
  list[#list + 1] = msg
end

-- Saves the meta hash, sends one message per client that was granted or failed, returns the reply.
-- The channel sem:{name}:wake:<clientId> shares the keys' hash tag, so in Redis Cluster it is in this
-- script's slot. A client id ending in 's' belongs to a handle that listens with SSUBSCRIBE (Redis
-- Cluster 7+): it is sent SPUBLISH, which stays on this shard; the others PUBLISH. A failed SPUBLISH (a
-- node without it, in a cluster being upgraded) must not fail the operation: that handle's heartbeat
-- reports the outcome instead.
local function done(result)
  save_meta()
  if M.idle > 0 then
    expire_when_idle()
  end
  for _, cid in ipairs(notice_order) do
    local channel, message = PREFIX .. 'wake:' .. cid, table.concat(notices[cid], ';')
    if string.sub(cid, -1) == 's' then
      local r = redis.pcall('SPUBLISH', channel, message)
      if type(r) == 'table' and r.err then
        redis.log(redis.LOG_WARNING, 'sema: SPUBLISH to ' .. channel .. ' failed: ' .. tostring(r.err))
      end
    else
      redis.call('PUBLISH', channel, message)
    end
  end
  return result
end

-- Strictly increasing while the meta key lives; the server-time floor keeps it increasing after a
-- restart or failover rolled 'fence' back (as long as the server clock did not step back).
local function next_fence()
  local f = math.max(M.fence + 1, NOW_US)
  M.fence = f
  meta_dirty = true
  return fmt(f)
end

local function parse_holder(h)
  local p, tok, cid = string.match(h, '^(%d+)|(%d+)|(.*)$')
  return tonumber(p), tok, cid
end

local function parse_waiter(w)
  local p, cid, lease, kind = string.match(w, '^(%d+)|([^|]*)|(%d+)|(%a)$')
  return tonumber(p), cid, tonumber(lease), kind
end

local function add_holder(id, p, tok, cid, deadline)
  redis.call('HSET', K_HOLD, id, fmt(p) .. '|' .. tok .. '|' .. cid)
  redis.call('ZADD', K_LEASE, deadline, id)
  M.used = M.used + p
  meta_dirty = true
end

-- Removes a grant; returns permits, token, clientId, lease deadline, or nil if it is not held.
local function remove_holder(id)
  local h = redis.call('HGET', K_HOLD, id)
  if not h then
    return nil
  end
  local p, tok, cid = parse_holder(h)
  local deadline = tonumber(redis.call('ZSCORE', K_LEASE, id)) or NOW_MS
  redis.call('HDEL', K_HOLD, id)
  redis.call('ZREM', K_LEASE, id)
  M.used = M.used - p
  meta_dirty = true
  return p, tok, cid, deadline
end

local function enqueue(id, p, cid, lease, kind, ttl)
  M.seq = M.seq + 1
  meta_dirty = true
  redis.call('ZADD', K_QUEUE, M.seq, id)
  redis.call('HSET', K_WAIT, id, fmt(p) .. '|' .. cid .. '|' .. fmt(lease) .. '|' .. kind)
  redis.call('ZADD', K_WLIVE, NOW_MS + ttl, id)
end

local function remove_waiter(id)
  redis.call('ZREM', K_QUEUE, id)
  redis.call('HDEL', K_WAIT, id)
  redis.call('ZREM', K_WLIVE, id)
end

-- Ends expired leases and dead waiters, at most REAP_BATCH of each per call; the next call goes on.
local function reap()
  local ids = redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', NOW_MS, 'LIMIT', 0, REAP_BATCH)
  for _, id in ipairs(ids) do
    if not remove_holder(id) then
      redis.call('ZREM', K_LEASE, id)
    end
  end
  ids = redis.call('ZRANGEBYSCORE', K_WLIVE, '-inf', NOW_MS, 'LIMIT', 0, REAP_BATCH)
  for _, id in ipairs(ids) do
    remove_waiter(id)
  end
end

-- Grants head waiters while they fit, in strict arrival order: stops at the first that does not.
local function grant_loop()
  while true do
    local head = redis.call('ZRANGE', K_QUEUE, 0, 0)[1]
    if not head then
      return
    end
    local w = redis.call('HGET', K_WAIT, head)
    if not w then
      remove_waiter(head)
    else
      local p, cid, lease, kind = parse_waiter(w)
      if kind == 'i' then
        if M.used > 0 then
          return
        end
        remove_waiter(head)
        notify(cid, head, 'I ' .. head)
      else
        if M.limit - M.used < p then
          return
        end
        remove_waiter(head)
        local tok = next_fence()
        add_holder(head, p, tok, cid, NOW_MS + lease)
        notify(cid, head, 'G ' .. head .. ' ' .. tok)
      end
    end
  end
end

-- Loads the state, reaps, and serves the queue; returns an error reply, or nil to go on.
local function begin(self_id)
  SELF = self_id
  local err = load_meta()
  if err then
    return err
  end
  reap()
  grant_loop()
  return nil
end

