-- Shared part of every sema-redis script. A script is prelude.lua, the operation's fast path (if it has
-- one: the part of its file before the line '--@common'), this file, then the rest of the operation.
-- The fast paths use only the prelude's few functions, because defining this file's functions costs
-- Redis more than an uncontended acquire or release does itself.
--
-- KEYS (schema 4): 1 meta (STRING), 2 holders (HASH id -> a grant or a queued request, see below), 3 leases
-- (ZSET id -> deadline in server ms: a grant's lease, a queued request's liveness), 4 queue (ZSET
-- waiterId -> arrival seq). All share the hash tag {name}. One hash and one deadline set for both kinds
-- of entry: serving a request rewrites its entry and its deadline in place, and one scan reaps both.
-- ARGV: the operation's own arguments, then, only in a call resent after the reply ERR_MISSING, the
-- creation argument '+limit ceiling idleExpiryMs' ('0' = never), the one argument that starts with '+'.
-- Creating is rare (a new name, an idle expiry, data lost) and every argument costs Redis a string and a
-- table slot in every call, so the common call leaves it out. This file removes it from ARGV (the fast
-- paths read fixed positions before it), so that an operation counting its arguments never sees it.
-- meta (a STRING, binary): struct '<Bddddddddd', the schema version 4, then the limit, the ceiling, the
-- permits held (used), the last token (fence), the last queue seq, closed (0|1), the idle expiry (ms, 0 =
-- never), due (see S4) and qlen (see S3). Binary, read and written in C by Redis's struct library, because
-- one GET and one SET (or SETRANGE) without decimal parsing and formatting cost Redis the least; STATUS
-- reports it.
-- holders values are binary too: struct '<dd', then, for a queued request, the clientId of the handle to
-- wake. A grant: its permits (>= 1) and its token (a grant is never sent a message, so nothing follows;
-- a grant written by earlier scripts, or by upgrade.lua, may still carry its clientId, which nobody reads). A queued request:
-- -1 - its permits (so <= -1; -1 is an awaitIdle, which asks for none) and the lease its grant will have
-- (ms). The sign tells them apart. A request's id is its handle's clientId, ':' and a counter (see
-- ACQUIRE), so the clientId need not be sent apart.
--
-- Invariants kept by every script:
--  S1: used == sum of the permits of the grants in holders; one deadline in leases per entry in holders;
--      0 <= limit <= max.
--  S2: once a script ends, the head of the queue does not fit (an acquire head asks more than
--      limit - used, an idle head finds used > 0).
--  S3: qlen == ZCARD queue == the number of queued requests in holders, so a script that finds qlen == 0
--      knows that the queue is empty and that every entry in holders is a grant, without reading them.
--  S4: due <= every deadline in leases: nothing can have expired while the server clock is below it, so
--      the expiry scan runs only once it is reached, and then sets due anew from the earliest deadline.
--      Pushing a deadline out leaves due a lower bound; setting one earlier lowers due. Since S2 held when
--      the last script ended and only an expiry frees permits between scripts, a script whose clock is
--      below due finds the head still not fitting, and serves the queue only after changing it; one that
--      scans serves it (which also mends a queue changed from outside, or by an upgrade, upgrade.lua).
--  S5: a script reads the server clock (TIME) only when it needs it: to stamp a deadline or a token, to
--      reap, to serve the queue, or to set an idle expiry. A RELEASE with nobody queued needs none of
--      these: expired leases wait for the next script that reads the clock, and only acquires, which
--      read it, could use the permits they hold.
-- Every count is an integer below 2^53, exact in a Lua double. One that goes into a command or a reply as
-- text is formatted with string.format('%d') (integer printing, exact below 2^63: tostring would print
-- 1.7e+15, and a number given to redis.call is printed with '%.17g', which costs Redis more than twice
-- as much).
-- Idle expiry (meta field 'idle' > 0, set at creation): once a script ends, every key of the semaphore
-- expires 'idle' ms after the last deadline still ahead (now, when nobody holds or waits), so a
-- semaphore left alone, or whose holders all died, disappears with all its keys at once.
--
-- Defined in prelude.lua: the keys, the meta value's format and the meta fields, read into locals.

local PREFIX = string.sub(K_META, 1, -5) -- 'sem:{name}:'
local REAP_BATCH = '64' -- a string, as every count given to a command (see fmt)
local M = nil -- the meta fields, copied from the prelude's locals by begin()
local dirty = false -- whether this script changed M, written back by save_meta()
local notices = {}
local notice_order = {}
local SELF = nil -- the id the caller asked about: it learns its outcome from the reply, not a message

do -- the creation argument (see the header), so that ARGV holds the operation's arguments alone
  local n = #ARGV
  if n > 0 and string.byte(ARGV[n]) == 43 then
    ARGV[n] = nil
  end
end

local function fmt(n)
  return string.format('%d', n)
end

-- Only the server's clock: deadlines are server ms, tokens have a server us floor. Read once, when
-- first needed (S5; a fast path may have read it already).
local function now()
  if not NOW_MS then
    local time = redis.call('TIME')
    local s, us = tonumber(time[1]), tonumber(time[2])
    NOW_MS = s * 1000 + math.floor(us / 1000)
    NOW_US = s * 1000000 + us
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
  local l = redis.call('ZRANGE', K_LEASE, '-1', '-1', 'WITHSCORES')
  if l[2] then
    horizon = math.max(horizon, tonumber(l[2]))
  end
  local ttl = fmt(horizon - NOW_MS + M.idle)
  for _, k in ipairs({K_META, K_HOLD, K_LEASE, K_QUEUE}) do
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

-- A holders value: a grant's permits (>= 1) and token, or a queued request's -1 - permits, lease (ms)
-- and clientId (see the header).
local function parse_entry(h)
  local a, b = struct.unpack('<dd', h)
  return a, b, string.sub(h, 17)
end

-- The grant held under id: its permits and token; nil if id is not a grant.
local function get_grant(id)
  local h = redis.call('HGET', K_HOLD, id)
  if h then
    local p, tok = struct.unpack('<dd', h)
    if p > 0 then
      return p, tok
    end
  end
  return nil
end

local function add_holder(id, p, tok, deadline)
  redis.call('HSET', K_HOLD, id, struct.pack('<dd', p, tok))
  redis.call('ZADD', K_LEASE, fmt(deadline), id)
  deadline_set(deadline)
  set('used', M.used + p)
end

-- Ends the grant id whose permits are p.
local function drop_holder(id, p)
  redis.call('HDEL', K_HOLD, id)
  redis.call('ZREM', K_LEASE, id)
  set('used', M.used - p)
end

-- Removes a grant; returns permits, token and, when asked for, its lease deadline; nil if it is not held.
local function remove_holder(id, want_deadline)
  local p, tok = get_grant(id)
  if not p then
    return nil
  end
  local deadline = nil
  if want_deadline then
    deadline = tonumber(redis.call('ZSCORE', K_LEASE, id)) or now()
  end
  drop_holder(id, p)
  return p, tok, deadline
end

-- Pushes out a deadline: the lease of a held grant, the liveness of a queued request.
local function renew_deadline(id, ms)
  local d = now() + ms
  redis.call('ZADD', K_LEASE, 'XX', fmt(d), id)
  deadline_set(d)
end

-- Queues a request that is neither queued nor held; p 0 is an awaitIdle.
local function enqueue(id, p, cid, lease, ttl)
  set('seq', M.seq + 1)
  redis.call('ZADD', K_QUEUE, fmt(M.seq), id)
  redis.call('HSET', K_HOLD, id, struct.pack('<dd', -1 - p, lease) .. cid)
  local d = now() + ttl
  redis.call('ZADD', K_LEASE, fmt(d), id)
  deadline_set(d)
  set('qlen', M.qlen + 1)
end

-- Takes a request out of the queue; its entry goes too if it is a queued request (S1, S3).
local function remove_waiter(id, entry)
  local queued = redis.call('ZREM', K_QUEUE, id)
  if entry then
    redis.call('HDEL', K_HOLD, id)
    redis.call('ZREM', K_LEASE, id)
  end
  if queued == 1 then
    set('qlen', M.qlen - 1)
  end
end

-- Whether id is queued; qlen == 0 answers without a read (S3).
local function is_queued(id)
  return M.qlen > 0 and redis.call('ZSCORE', K_QUEUE, id)
end

-- Ends expired leases and dead waiters, at most REAP_BATCH per call (the next call goes on), once the
-- clock has reached due, and then sets due anew (S4). Returns whether it scanned.
local function reap()
  if now() < M.due then
    return false
  end
  local ids = redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', fmt(NOW_MS), 'LIMIT', '0', REAP_BATCH)
  for _, id in ipairs(ids) do
    local h = redis.call('HGET', K_HOLD, id)
    if not h then
      redis.call('ZREM', K_LEASE, id)
    else
      local p = struct.unpack('<d', h)
      if p > 0 then
        drop_holder(id, p)
      else
        remove_waiter(id, true)
      end
    end
  end
  local due = NEVER
  local l = redis.call('ZRANGE', K_LEASE, '0', '0', 'WITHSCORES')
  if l[2] then
    due = tonumber(l[2])
  end
  set('due', due)
  return true
end

-- Grants head waiters while they fit, in strict arrival order: stops at the first that does not. A
-- grant rewrites the request's entry and deadline in place.
local function grant_loop()
  while M.qlen > 0 do
    local head = redis.call('ZRANGE', K_QUEUE, '0', '0')[1]
    if not head then
      set('qlen', 0) -- S3 was broken from outside (a key deleted by hand): the queue is empty
      return
    end
    local h = redis.call('HGET', K_HOLD, head)
    local a, lease, cid = nil, nil, nil
    if h then
      a, lease, cid = parse_entry(h)
    end
    if not a or a > 0 then
      remove_waiter(head, false) -- no request under that id (S3 broken from outside): leave the queue
    elseif a == -1 then
      if M.used > 0 then
        return
      end
      remove_waiter(head, true)
      notify(cid, head, 'I ' .. head)
    else
      local p = -1 - a
      if M.limit - M.used < p then
        return
      end
      redis.call('ZREM', K_QUEUE, head)
      set('qlen', M.qlen - 1)
      local tok = next_fence()
      add_holder(head, p, tok, NOW_MS + lease)
      notify(cid, head, 'G ' .. head .. ' ' .. fmt(tok))
    end
  end
end

-- Takes the state the prelude read, reaps, and serves the queue if the clock has reached due (S4);
-- returns nil (errors are the prelude's).
-- A script that may leave the clock unread (S5) passes lazy: it reaps and serves only when someone is
-- queued or the semaphore expires when idle, the cases in which it reads the clock anyway.
local function begin(self_id, lazy)
  SELF = self_id
  M = {limit = limit, max = max, used = used, fence = fence, seq = seq, closed = closed, idle = idle,
       due = due, qlen = qlen}
  if (not lazy or M.qlen > 0 or M.idle > 0) and reap() then
    grant_loop()
  end
  return nil
end
