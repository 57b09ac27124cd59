-- Partitions (API.md §11a): the part of every script of a partitioned semaphore that comes after common.lua.
-- It keeps common.lua's functions' names and replaces those whose work differs, so that the operations'
-- files (cancel.lua, split.lua, ...) run unchanged on either kind; an unpartitioned semaphore's scripts do
-- not contain it at all, and pay nothing for it.
--
-- The rules are those of the local engine (dev.sema.Partitions, P0-P6), which this file follows step for
-- step. Slots: the declared partitions in priority order (0 = highest), then the parent's own requests,
-- slot NP, a partition of share 0 below the lowest.
--
-- KEYS: common.lua's four. The queue holds every slot's requests, each slot's in arrival order: a request's
-- score is its slot, and its member the 14 hexadecimal digits of its arrival seq, then its id (members of
-- one score are in the order of their bytes), so that a slot's head is the first member of its score.
-- meta, schema 5: schema 4's fields in another order, with the partitions' beside the fields they change
-- with, so that a fast path writes them all with one SETRANGE (unchanged bytes copied from the value read):
-- struct '<Bddddddddd' (version 5, limit, ceiling, closed, idle, n: the number of partitions, gfor: the
-- limit the stored guarantees were computed for or -1, seq, due, qlen), then each partition's queue length
-- (n doubles), then '<dd' fence and used, then each partition's held permits (n), then each one's guarantee
-- (n), then the partitions as declared, as text: 'D s' per partition, ';'-separated (the share is D x 10^-s
-- exactly: the decimal it was written as, so that 0.29 of 100 is 29), then '|', then each name as its length,
-- ':' and the name (read by the clients only). Byte offsets: q_i at 73 + 8i, fence at 73 + 8n, used at
-- 81 + 8n, held_i at 89 + 8n + 8i, g_i at 89 + 16n + 8i, the text at 89 + 24n. The parent's own holding and
-- queue length are not stored: used and qlen less the partitions'.
-- holders values: as in schema 4, with the slot as a third double: a grant '<ddd' permits, token, slot; a
-- queued request '<dddd' -1 - permits, lease, slot, its arrival seq (its queue member's), then the clientId.
--
-- Invariants, beside S1-S5 (whose queue is every slot's queue together: qlen is their total, and S2 reads:
-- once a script ends, no slot's head can be served, P4):
--  Q1: held[s] == sum of the permits of the grants of slot s, for every slot; so their total is used, and
--      used <= limit whenever the limit has not been lowered below it (P1): a grant takes at most capacity().
--  Q2: q[s] == the number of members of score s in the queue == the number of queued requests of slot s
--      in holders.
--  Q3: a request enters only its own slot's queue, and only behind a non-empty queue or when it cannot be
--      served (capacity); a new head never raises another slot's capacity, so an enqueue serves nobody.
if not pv then
  return {'ERR_LAYOUT', ''} -- the semaphore in Redis has no partitions: refused before anything is checked
end
local NP = pn
local SPEC = nil -- the partitions as declared: the meta value's tail, written back as read
-- Each slot's queue head as read by this script: {id, member, p, lease, cid, idle}, false when the queue is
-- empty, nil when not read yet or changed since.
local HEADS = {}
local LAST_SLOT = nil -- the slot of the grant remove_holder() took last: parts made from it stay in it

-- A request's member in the queue.
local function member(seq, id)
  return string.format('%014x', seq) .. id
end

-- A holders value's first two fields, its slot, and for a queued request its arrival seq.
local function unpack_entry(e)
  local a, b, s = struct.unpack('<ddd', e)
  if a < 0 then
    return a, b, s, (struct.unpack('<d', e, 25))
  end
  return a, b, s
end

-- floor(D x L / 10^s) exactly, D a string of decimal digits (a share's, at most 17), 0 <= L < 2^53: the
-- product in base 10^7 limbs, each partial sum below 2^53, and its last s decimal digits dropped.
local function scaled_floor(d, s, l)
  if l == 0 then
    return 0
  end
  local a, b, c = {}, {}, {}
  local i = #d
  while i >= 1 do
    a[#a + 1] = tonumber(string.sub(d, math.max(1, i - 6), i))
    i = i - 7
  end
  while l > 0 do
    local r = l % 10000000
    b[#b + 1] = r
    l = (l - r) / 10000000
  end
  for k = 1, #a + #b do
    c[k] = 0
  end
  for x = 1, #a do
    for y = 1, #b do
      c[x + y - 1] = c[x + y - 1] + a[x] * b[y]
    end
  end
  local carry = 0
  for k = 1, #c do
    local v = c[k] + carry
    c[k] = v % 10000000
    carry = (v - c[k]) / 10000000
  end
  local top = #c
  while top > 1 and c[top] == 0 do
    top = top - 1
  end
  local digits = {string.format('%d', c[top])}
  for k = top - 1, 1, -1 do
    digits[#digits + 1] = string.format('%07d', c[k])
  end
  local text = table.concat(digits)
  if #text <= s then
    return 0
  end
  return tonumber(string.sub(text, 1, #text - s))
end

-- The slot's guarantee under the current limit (P2): floor(share x limit), 0 for the parent's own; all are
-- computed again when the limit is not the one they were stored for.
local function guarantee(s)
  if s == NP then
    return 0
  end
  if M.gfor ~= M.limit then
    local i = 0
    for d, sc in string.gmatch(string.match(SPEC, '^[^|]*'), '(%d+) (%d+)') do
      M.g[i] = scaled_floor(d, tonumber(sc), M.limit)
      i = i + 1
    end
    M.gfor = M.limit
    dirty = true
  end
  return M.g[s]
end

local function owed(s)
  local o = guarantee(s) - M.held[s]
  if o > 0 then
    return o
  end
  return 0
end

local function set_q(s, n)
  set('qlen', M.qlen + n - M.q[s])
  M.q[s] = n
end

-- Slot s's queue head (see HEADS). A queue entry without its request (changed from outside) leaves the
-- queue; a count that finds the queue empty is mended (Q2).
local function head(s)
  local hd = HEADS[s]
  if hd ~= nil then
    return hd
  end
  while M.q[s] > 0 do
    local score = fmt(s)
    local m = redis.call('ZRANGEBYSCORE', K_QUEUE, score, score, 'LIMIT', '0', '1')[1]
    if not m then
      set_q(s, 0)
      break
    end
    local id = string.sub(m, 15)
    local e = redis.call('HGET', K_HOLD, id)
    if e then
      local a, lease = unpack_entry(e)
      if a < 0 then
        hd = {id = id, member = m, p = -1 - a, lease = lease, cid = string.sub(e, 33), idle = (a == -1)}
        HEADS[s] = hd
        return hd
      end
    end
    redis.call('ZREM', K_QUEUE, m)
    set_q(s, M.q[s] - 1)
  end
  HEADS[s] = false
  return false
end

-- The most a request of slot t at the head of its queue could be granted now (P2, P3; Partitions.
-- capacityLocked): what it is owed, out of what the higher slots' earmarks leave, plus, unless a higher
-- slot's head waits for permits, what nobody's earmark claims. A head earmarks what its slot is owed only
-- when it asks for no more than that.
local function capacity(t)
  local pool = M.limit - M.used
  if pool < 0 then
    pool = 0
  end
  local own = 0
  local higher = false
  for i = 0, NP do
    if i == t then
      own = math.min(pool, owed(i))
      pool = pool - own
    else
      local hd = head(i)
      if hd and not hd.idle then
        local o = owed(i)
        if hd.p <= o then
          pool = pool - math.min(pool, o)
        end
        if i < t then
          higher = true
        end
      end
    end
  end
  if higher then
    return own
  end
  return own + pool
end

-- P6: a partition is idle when it holds nothing; the parent's own idle waiter, when nothing is held at all.
local function idle_slot(s)
  if s == NP then
    return M.used == 0
  end
  return M.held[s] == 0
end

-- Replaced functions of common.lua (same names and contracts, each slot's counts kept too).

add_holder = function(id, p, tok, deadline, s)
  s = s or LAST_SLOT
  redis.call('HSET', K_HOLD, id, struct.pack('<ddd', p, tok, s))
  redis.call('ZADD', K_LEASE, fmt(deadline), id)
  deadline_set(deadline)
  set('used', M.used + p)
  M.held[s] = M.held[s] + p
end

remove_holder = function(id, want_deadline)
  local e = redis.call('HGET', K_HOLD, id)
  if not e then
    return nil
  end
  local p, tok, s = unpack_entry(e)
  if p <= 0 then
    return nil
  end
  local deadline = nil
  if want_deadline then
    deadline = tonumber(redis.call('ZSCORE', K_LEASE, id)) or now()
  end
  redis.call('HDEL', K_HOLD, id)
  redis.call('ZREM', K_LEASE, id)
  set('used', M.used - p)
  M.held[s] = M.held[s] - p
  LAST_SLOT = s
  return p, tok, deadline
end

enqueue = function(id, p, cid, lease, ttl, s)
  set('seq', M.seq + 1)
  redis.call('ZADD', K_QUEUE, fmt(s), member(M.seq, id))
  redis.call('HSET', K_HOLD, id, struct.pack('<dddd', -1 - p, lease, s, M.seq) .. cid)
  local d = now() + ttl
  redis.call('ZADD', K_LEASE, fmt(d), id)
  deadline_set(d)
  set_q(s, M.q[s] + 1)
  if HEADS[s] == false then
    HEADS[s] = nil
  end
end

-- Takes a request out of the queue (its slot s and arrival seq read from its entry when not given); its
-- entry goes too if asked (S1, Q2).
remove_waiter = function(id, entry, s, seq)
  if seq == nil then
    local e = redis.call('HGET', K_HOLD, id)
    if not e then
      return
    end
    local a, _
    a, _, s, seq = unpack_entry(e)
    if a > 0 then
      return
    end
  end
  local queued = redis.call('ZREM', K_QUEUE, member(seq, id))
  if entry then
    redis.call('HDEL', K_HOLD, id)
    redis.call('ZREM', K_LEASE, id)
  end
  if queued == 1 then
    set_q(s, M.q[s] - 1)
  end
  HEADS[s] = nil
end

is_queued = function(id)
  if M.qlen == 0 then
    return false
  end
  local e = redis.call('HGET', K_HOLD, id)
  return e and struct.unpack('<d', e) < 0
end

reap = function()
  if now() < M.due then
    return false
  end
  local ids = redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', fmt(NOW_MS), 'LIMIT', '0', REAP_BATCH)
  for _, id in ipairs(ids) do
    local e = redis.call('HGET', K_HOLD, id)
    if not e then
      redis.call('ZREM', K_LEASE, id)
    else
      local a, _, s, sq = unpack_entry(e)
      if a > 0 then
        redis.call('HDEL', K_HOLD, id)
        redis.call('ZREM', K_LEASE, id)
        set('used', M.used - a)
        M.held[s] = M.held[s] - a
      else
        remove_waiter(id, true, s, sq)
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

-- Serves every slot's head that can be served (P4; Partitions.serveLocked): heads in slot order, within a
-- slot only its head, from the first slot again after each one served, until none can be.
grant_loop = function()
  local served = M.qlen > 0
  while served do
    served = false
    for s = 0, NP do
      local hd = head(s)
      if hd then
        if hd.idle then
          if idle_slot(s) then
            redis.call('ZREM', K_QUEUE, hd.member)
            redis.call('HDEL', K_HOLD, hd.id)
            redis.call('ZREM', K_LEASE, hd.id)
            set_q(s, M.q[s] - 1)
            HEADS[s] = nil
            notify(hd.cid, hd.id, 'I ' .. hd.id)
            served = true
          end
        elseif hd.p <= capacity(s) then
          redis.call('ZREM', K_QUEUE, hd.member)
          set_q(s, M.q[s] - 1)
          HEADS[s] = nil
          local tok = next_fence()
          add_holder(hd.id, hd.p, tok, NOW_MS + hd.lease, s)
          notify(hd.cid, hd.id, 'G ' .. hd.id .. ' ' .. fmt(tok))
          served = true
        end
        if served then
          break
        end
      end
    end
  end
end

begin = function(self_id, lazy)
  SELF = self_id
  M = {limit = limit, max = max, used = used, fence = fence, seq = seq, closed = closed, idle = idle,
       due = due, qlen = qlen, held = {}, q = {}, g = {}}
  M.gfor = struct.unpack('<d', pv, 42)
  local held, queued = 0, 0
  for s = 0, NP - 1 do
    M.q[s] = struct.unpack('<d', pv, 74 + 8 * s)
    M.held[s] = struct.unpack('<d', pv, 90 + 8 * NP + 8 * s)
    M.g[s] = struct.unpack('<d', pv, 90 + 16 * NP + 8 * s)
    held = held + M.held[s]
    queued = queued + M.q[s]
  end
  M.held[NP], M.q[NP], M.g[NP] = M.used - held, M.qlen - queued, 0
  SPEC = string.sub(pv, 90 + 24 * NP)
  if (not lazy or M.qlen > 0 or M.idle > 0) and reap() then
    grant_loop()
  end
  return nil
end

save_meta = function()
  if dirty or CREATED then
    local parts = {struct.pack(META, 5, M.limit, M.max, M.closed, M.idle, NP, M.gfor, M.seq, M.due, M.qlen)}
    for s = 0, NP - 1 do
      parts[#parts + 1] = struct.pack('<d', M.q[s])
    end
    parts[#parts + 1] = struct.pack('<dd', M.fence, M.used)
    for s = 0, NP - 1 do
      parts[#parts + 1] = struct.pack('<d', M.held[s])
    end
    for s = 0, NP - 1 do
      parts[#parts + 1] = struct.pack('<d', M.g[s])
    end
    parts[#parts + 1] = SPEC
    redis.call('SET', K_META, table.concat(parts), 'KEEPTTL')
  end
end

