-- Shared part of every sema-redis script. A script is prelude.lua, the operation's fast path (if it has
-- one: the part of its file before the line '--@common'), this file, then the rest of the operation.
-- The fast paths use only the prelude's few functions, because defining this file's functions costs
-- Redis more than an uncontended acquire or release does itself.
--
-- KEYS: 1 meta (STRING), 2 holders (HASH grantId -> permits, token, clientId), 3 leases (ZSET grantId ->
-- lease deadline in server ms), 4 queue (ZSET waiterId -> arrival seq), 5 waiters (HASH waiterId ->
-- 'permits|clientId|leaseMs|kind', kind 'a' = acquire, 'i' = awaitIdle), 6 wlive (ZSET waiterId ->
-- liveness deadline in server ms). All share the hash tag {name}.
-- ARGV[1], ARGV[2], ARGV[3]: limit, ceiling and idle expiry (ms, '0' = never) to create the semaphore
-- with if its meta key is missing ('' = do not create). The operation's own arguments start at ARGV[4].
-- meta (a STRING, binary): struct '<Bddddddddd', the schema version 3, then the limit, the ceiling, the
-- permits held (used), the last token (fence), the last queue seq, closed (0|1), the idle expiry (ms, 0 =
-- never), due (see S4) and qlen (see S3). Binary, read and written in C by Redis's struct library, because
-- one GET and one SET without decimal parsing and formatting cost Redis the least; STATUS reports it.
-- holders values are binary too: struct '<dd' (permits, token) followed by the clientId.
--
-- Invariants kept by every script:
--  S1: used == sum of the permits in holders; one lease per holder; 0 <= limit <= max.
--  S2: once a script ends, the head of the queue does not fit (an acquire head asks more than
--      limit - used, an idle head finds used > 0).
--  S3: qlen == ZCARD queue == HLEN waiters == ZCARD wlive, so a script that finds qlen == 0 knows the
--      queue is empty (and that a request id is not queued) without reading it.
--  S4: due <= every deadline in leases and wlive: nothing can have expired while the server clock is
--      below it, so the expiry scan runs only once it is reached, and then sets due anew from the two
--      earliest deadlines. Pushing a deadline out leaves due a lower bound; setting one earlier lowers due.
--  S5: a script reads the server clock (TIME) only when it needs it: to stamp a deadline or a token, to
--      reap, to serve the queue, or to set an idle expiry. A RELEASE with nobody queued needs none of
--      these: expired leases wait for the next script that reads the clock, and only acquires, which
--      read it, could use the permits they hold.
-- Every count is an integer below 2^53, exact in a Lua double, and is stored with
-- string.format('%.0f') (tostring would print 1.7e+15).
-- Idle expiry (meta field 'idle' > 0, set at creation): once a script ends, every key of the semaphore
-- expires 'idle' ms after the last lease or waiter deadline still ahead (now, when nobody holds or
-- waits), so a semaphore left alone, or whose holders all died, disappears with all its keys at once.
--
-- Defined in prelude.lua: the keys, the meta value's format and the meta fields, read into locals.

local PREFIX = string.sub(K_META, 1, -5) -- 'sem:{name}:'
local REAP_BATCH = 64
local M = nil -- the meta fields, copied from the prelude's locals by begin()
local dirty = false -- whether this script changed M, written back by save_meta()
local notices = {}
local notice_order = {}
local SELF = nil -- the id the caller asked about: it learns its outcome from the reply, not a message

local function fmt(n)
  return string.format('%.0f', n)
end

-- Only the server's clock: deadlines are server ms, tokens have a server us floor. Read once, when
-- first needed (S5; a fast path may have read it already).
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
  dirty = true
end

-- Writes the meta value back if this script changed it (KEEPTTL: an idle expiry set on it stays).
local function save_meta()
  if dirty or CREATED then
    redis.call('SET', K_META, struct.pack(META, VERSION, M.limit, M.max, M.used, M.fence, M.seq, M.closed,
        M.idle, M.due, M.qlen), 'KEEPTTL')
  end
end

-- Keeps S4 for a deadline just stored.
local function deadline_set(d)
  if d < M.due then
    set('due', d)
  end
end

-- Idle expiry (see the header): every key lives until the last deadline still ahead, plus 'idle'.
local function expire_when_idle()
  local horizon = now()
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
local function peek_fence()
  now()
  return math.max(M.fence + 1, NOW_US)
end

local function next_fence()
  local f = peek_fence()
  set('fence', f)
  return f
end

-- Returns permits, token, clientId.
local function parse_holder(h)
  local p, tok = struct.unpack('<dd', h)
  return p, tok, string.sub(h, 17)
end

local function parse_waiter(w)
  local p, cid, lease, kind = string.match(w, '^(%d+)|([^|]*)|(%d+)|(%a)$')
  return tonumber(p), cid, tonumber(lease), kind
end

-- The rest of a grant whose holders entry is written already (HSETNX on the acquire fast path).
local function holder_added(id, p, deadline)
  redis.call('ZADD', K_LEASE, deadline, id)
  deadline_set(deadline)
  set('used', M.used + p)
end

local function add_holder(id, p, tok, cid, deadline)
  redis.call('HSET', K_HOLD, id, struct.pack('<dd', p, tok) .. cid)
  holder_added(id, p, deadline)
end

-- Removes a grant; returns permits, token, clientId and, when asked for, its lease deadline; nil if it
-- is not held.
local function remove_holder(id, want_deadline)
  local h = redis.call('HGET', K_HOLD, id)
  if not h then
    return nil
  end
  local p, tok, cid = parse_holder(h)
  local deadline = nil
  if want_deadline then
    deadline = tonumber(redis.call('ZSCORE', K_LEASE, id)) or now()
  end
  redis.call('HDEL', K_HOLD, id)
  redis.call('ZREM', K_LEASE, id)
  set('used', M.used - p)
  return p, tok, cid, deadline
end

-- Pushes out the lease of a held grant.
local function renew_lease(id, lease)
  local d = now() + lease
  redis.call('ZADD', K_LEASE, 'XX', d, id)
  deadline_set(d)
end

local function renew_waiter(id, ttl)
  local d = now() + ttl
  redis.call('ZADD', K_WLIVE, 'XX', d, id)
  deadline_set(d)
end

-- Queues a request that is neither queued nor held.
local function enqueue(id, p, cid, lease, kind, ttl)
  set('seq', M.seq + 1)
  redis.call('ZADD', K_QUEUE, M.seq, id)
  redis.call('HSET', K_WAIT, id, fmt(p) .. '|' .. cid .. '|' .. fmt(lease) .. '|' .. kind)
  local d = now() + ttl
  redis.call('ZADD', K_WLIVE, d, id)
  deadline_set(d)
  set('qlen', M.qlen + 1)
end

local function remove_waiter(id)
  local queued = redis.call('ZREM', K_QUEUE, id)
  redis.call('HDEL', K_WAIT, id)
  redis.call('ZREM', K_WLIVE, id)
  if queued == 1 then
    set('qlen', M.qlen - 1)
  end
end

-- Whether id is queued; qlen == 0 answers without a read (S3).
local function is_queued(id)
  return M.qlen > 0 and redis.call('ZSCORE', K_QUEUE, id)
end

-- Ends expired leases and dead waiters, at most REAP_BATCH of each per call (the next call goes on),
-- once the clock has reached due, and then sets due anew (S4).
local function reap()
  if now() < M.due then
    return
  end
  local ids = redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', NOW_MS, 'LIMIT', 0, REAP_BATCH)
  for _, id in ipairs(ids) do
    if not remove_holder(id, false) then
      redis.call('ZREM', K_LEASE, id)
    end
  end
  ids = redis.call('ZRANGEBYSCORE', K_WLIVE, '-inf', NOW_MS, 'LIMIT', 0, REAP_BATCH)
  for _, id in ipairs(ids) do
    remove_waiter(id)
  end
  local due = NEVER
  local l = redis.call('ZRANGE', K_LEASE, 0, 0, 'WITHSCORES')
  if l[2] then
    due = math.min(due, tonumber(l[2]))
  end
  local w = redis.call('ZRANGE', K_WLIVE, 0, 0, 'WITHSCORES')
  if w[2] then
    due = math.min(due, tonumber(w[2]))
  end
  set('due', due)
end

-- Grants head waiters while they fit, in strict arrival order: stops at the first that does not.
local function grant_loop()
  while M.qlen > 0 do
    local head = redis.call('ZRANGE', K_QUEUE, 0, 0)[1]
    if not head then
      set('qlen', 0) -- S3 was broken from outside (a key deleted by hand): the queue is empty
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
        notify(cid, head, 'G ' .. head .. ' ' .. fmt(tok))
      end
    end
  end
end

-- Takes the state the prelude read, reaps, and serves the queue; returns nil (errors are the prelude's).
-- A script that may leave the clock unread (S5) passes lazy: it reaps and serves only when someone is
-- queued or the semaphore expires when idle, the cases in which it reads the clock anyway.
local function begin(self_id, lazy)
  SELF = self_id
  M = {limit = limit, max = max, used = used, fence = fence, seq = seq, closed = closed, idle = idle,
       due = due, qlen = qlen}
  if not lazy or M.qlen > 0 or M.idle > 0 then
    reap()
    grant_loop()
  end
  return nil
end
