-- ACQUIRE of a partitioned semaphore (API.md §11a; partitions.lua). ARGV[1..5]: acquire.lua's four, then the
-- slot of the request: a partition's index in priority order, or -1 for the parent's own (whatever the number
-- of partitions stored, which a handle may not know: the semaphore may have been created again since). Replies as acquire.lua's. A request takes permits at once only when its own slot's queue is empty
-- and it fits in its slot's capacity (P5); otherwise it queues in its slot's queue, and serves nobody (Q3).
-- A drain takes its slot's capacity, whatever its queue (as the local engine's).
local id, permits, lease, slot = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
-- Fast paths, as acquire.lua's (open, no idle expiry, nothing due), when the slot's capacity is known
-- without reading a head: nobody waits in any slot (no earmark, no higher head: the capacity is what is
-- free), or the request joins a queue that is not empty, or nobody else waits and it does not fit. Each
-- writes the meta fields it changes, its slot's among them, with one SETRANGE (schema 5 keeps them side by
-- side; the partitions' fields in between are copied as read), and 'due' apart in the rare case it moves.
if pv and not CREATED and permits and lease and slot and closed == 0 and idle == 0 and permits > 0
    and permits <= max then
  local t = redis.call('TIME')
  local s, us = tonumber(t[1]), tonumber(t[2])
  NOW_MS = s * 1000 + (us - us % 1000) / 1000
  NOW_US = s * 1000000 + us
  local np = pn
  local score = ARGV[5]
  if slot == -1 then
    slot, score = np, string.format('%d', np)
  end
  if NOW_MS < due and slot >= 0 and slot <= np and slot % 1 == 0 then
    if qlen == 0 and limit - used >= permits then
      local tok = fence + 1 < NOW_US and NOW_US or fence + 1
      if redis.call('HSETNX', K_HOLD, id, struct.pack('<ddd', permits, tok, slot)) == 1 then
        local d = NOW_MS + lease
        redis.call('ZADD', K_LEASE, string.format('%d', d), id)
        if d < due then -- S4
          redis.call('SETRANGE', K_META, '57', struct.pack('<d', d))
        end
        -- fence and used, then the partitions' held permits up to the slot's (the parent's own is not stored)
        local value = struct.pack('<dd', tok, used + permits)
        if slot < np then
          local at = 90 + 8 * np + 8 * slot
          value = value .. string.sub(pv, 90 + 8 * np, at - 1) .. struct.pack('<d', struct.unpack('<d', pv, at) + permits)
        end
        redis.call('SETRANGE', K_META, string.format('%d', 73 + 8 * np), value)
        return tok
      end
    else
      local q = qlen
      if slot < np then
        q = struct.unpack('<d', pv, 74 + 8 * slot)
      else
        for i = 0, np - 1 do
          q = q - struct.unpack('<d', pv, 74 + 8 * i)
        end
      end
      local ttl, cid = tonumber(ARGV[4]), string.match(id, '^(.+):')
      if (q > 0 or qlen == 0) and ttl and cid
          and redis.call('HSETNX', K_HOLD, id, struct.pack('<dddd', -1 - permits, lease, slot, seq + 1) .. cid) == 1 then
        local d = NOW_MS + ttl
        redis.call('ZADD', K_QUEUE, score, string.format('%014x', seq + 1) .. id)
        redis.call('ZADD', K_LEASE, string.format('%d', d), id)
        -- seq, due and qlen, then the partitions' queue lengths up to the slot's
        local value = struct.pack('<ddd', seq + 1, (d < due and d or due), qlen + 1)
        if slot < np then
          value = value .. string.sub(pv, 74, 73 + 8 * slot) .. struct.pack('<d', q + 1)
        end
        redis.call('SETRANGE', K_META, '49', value)
        return 'QUEUED'
      end
    end
  end
end
--@common
local mode, ttl = ARGV[2], tonumber(ARGV[4])
if slot == -1 then
  slot = NP
end
if ARGV[4] ~= '' and not ttl then
  return redis.error_reply('sema: ACQUIRE: waiterTtlMs "' .. tostring(ARGV[4]) .. '" is neither a count nor ""')
elseif not lease then
  return redis.error_reply('sema: ACQUIRE: leaseMs "' .. tostring(ARGV[3]) .. '" is not a count')
elseif not slot or slot < 0 or slot > NP or slot % 1 ~= 0 then
  return redis.error_reply('sema: ACQUIRE: slot "' .. tostring(ARGV[5]) .. '" is not -1..' .. (NP - 1)
      .. ': no such partition in the semaphore as stored')
end
if permits then
  mode = ttl and 'wait' or 'try'
elseif mode ~= 'idle' and mode ~= 'drain' then
  return redis.error_reply('sema: ACQUIRE: permits "' .. tostring(mode) .. '" is neither a count, idle nor drain')
end
local cid = nil
if mode == 'wait' or mode == 'idle' then
  cid = string.match(id, '^(.+):')
  if not cid then
    return redis.error_reply('sema: ACQUIRE: id "' .. id .. '" is not "clientId:counter"')
  end
  if not ttl then
    return redis.error_reply('sema: ACQUIRE: a request that may queue needs waiterTtlMs')
  end
end
local err = begin(id)
if err then
  return err
end
local h = redis.call('HGET', K_HOLD, id)
if h then
  local a, b = parse_entry(h)
  if a > 0 then -- held: a replay of a grant
    renew_deadline(id, lease)
    -- Always a write that replicates, even when the deadline did not move (the same millisecond): a WAIT
    -- that follows on this socket must cover the grant (from Redis 7.2 on, only a command that replicated
    -- something moves a socket's WAIT offset).
    redis.call('HSET', K_HOLD, id, h)
    return done({'GRANTED', b, fmt(a)})
  end
  if ttl then
    renew_deadline(id, ttl)
  end
  return done({'QUEUED'})
end
if mode == 'idle' then -- P6
  if M.q[slot] == 0 and idle_slot(slot) then
    return done({'IDLE'})
  end
  enqueue(id, 0, cid, 0, ttl, slot)
  return done({'QUEUED'})
end
if M.closed ~= 0 then
  return done({'CLOSED'})
end
if mode == 'drain' then
  local n = capacity(slot)
  if n <= 0 then
    return done({'GRANTED', next_fence(), '0'})
  end
  local tok = next_fence()
  add_holder(id, n, tok, NOW_MS + lease, slot)
  return done({'GRANTED', tok, fmt(n)})
end
if permits > M.max then
  return done({'ERR_MAX', fmt(M.max)})
end
if permits == 0 then
  return done({'GRANTED', next_fence()})
end
if M.q[slot] == 0 and permits <= capacity(slot) then -- P5
  local tok = next_fence()
  add_holder(id, permits, tok, NOW_MS + lease, slot)
  return done({'GRANTED', tok})
end
if mode == 'try' then
  return done({'NOT_AVAILABLE'})
end
enqueue(id, permits, cid, lease, ttl, slot) -- Q3: serves nobody
return done({'QUEUED'})
