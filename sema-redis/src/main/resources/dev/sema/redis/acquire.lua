-- ACQUIRE. ARGV[1..4]: id, permits (or 'idle': an awaitIdle; 'drain': every permit available), leaseMs,
-- waiterTtlMs ('' for a request that must not queue: a try, a drain).
-- The id is the handle's clientId, ':' and a counter: a queued request's clientId (its wake-up channel)
-- is read from it, which spares every call an argument.
-- Idempotent per id: a replay finds the grant or the queue entry it made and only refreshes it.
-- A drain takes every permit available, whatever the queue: fewer available never makes the head fit
-- (S2).
-- Replies: {'GRANTED', token} | {'GRANTED', token, permits} (a replay of a held grant, a drain) | {'QUEUED'}
-- | {'NOT_AVAILABLE'} | {'IDLE'} | {'CLOSED'} | {'ERR_MAX', max}; the fast paths reply token (an integer:
-- GRANTED) and 'QUEUED' without the table, which costs Redis a conversion of its own.
local id, permits, lease = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
-- Fast paths: open, no idle expiry to set, a count within the ceiling, and nothing due (S4, so there is
-- nothing to reap and the head still does not fit, S2). HSETNX writes the entry and tells a replay (id
-- held or queued already) in one command; a replay, like every other case, goes on to the full path.
-- They write the meta fields they change (SETRANGE), or the whole value without KEEPTTL: with no idle
-- expiry, nothing gives it a time-to-live.
if permits and lease and closed == 0 and idle == 0 and permits > 0 and permits <= max then
  local t = redis.call('TIME')
  local s, us = tonumber(t[1]), tonumber(t[2])
  NOW_MS = s * 1000 + (us - us % 1000) / 1000
  NOW_US = s * 1000000 + us
  if NOW_MS < due then
    if qlen == 0 and limit - used >= permits then
      -- Nobody queued (so id is not queued, S3) and enough free: the grant.
      local tok = fence + 1 < NOW_US and NOW_US or fence + 1
      if redis.call('HSETNX', K_HOLD, id, struct.pack('<dd', permits, tok)) == 1 then
        local d = NOW_MS + lease
        redis.call('ZADD', K_LEASE, string.format('%d', d), id)
        if d < due or CREATED then -- S4: due no later than the new lease
          redis.call('SET', K_META, struct.pack(META, VERSION, limit, max, used + permits, tok, seq, closed,
              idle, d, qlen))
        else -- only used and fence change: the bytes they take (see META_USED)
          redis.call('SETRANGE', K_META, META_USED, struct.pack('<dd', used + permits, tok))
        end
        return tok
      end
    elseif qlen > 0 or limit - used < permits then
      -- It must queue, if it may (a waiter TTL): a new tail never changes the head, which does not fit
      -- (S2), so nobody is served. Everything is read before the first write.
      local ttl, cid = tonumber(ARGV[4]), string.match(id, '^(.+):')
      if ttl and cid and redis.call('HSETNX', K_HOLD, id, struct.pack('<dd', -1 - permits, lease) .. cid) == 1 then
        local d = NOW_MS + ttl
        redis.call('ZADD', K_QUEUE, string.format('%d', seq + 1), id)
        redis.call('ZADD', K_LEASE, string.format('%d', d), id)
        if CREATED then
          redis.call('SET', K_META, struct.pack(META, VERSION, limit, max, used, fence, seq + 1, closed, idle,
              (d < due and d or due), qlen + 1))
        else -- seq to qlen: the last five fields (see META_SEQ)
          redis.call('SETRANGE', K_META, META_SEQ, struct.pack('<ddddd', seq + 1, closed, idle,
              (d < due and d or due), qlen + 1))
        end
        return 'QUEUED'
      end
    end
  end
end
--@common
local mode, ttl = ARGV[2], tonumber(ARGV[4])
if ARGV[4] ~= '' and not ttl then
  return redis.error_reply('sema: ACQUIRE: waiterTtlMs "' .. tostring(ARGV[4]) .. '" is neither a count nor ""')
elseif not lease then
  return redis.error_reply('sema: ACQUIRE: leaseMs "' .. tostring(ARGV[3]) .. '" is not a count')
end
if permits then
  mode = ttl and 'wait' or 'try'
elseif mode ~= 'idle' and mode ~= 'drain' then
  return redis.error_reply('sema: ACQUIRE: permits "' .. tostring(mode) .. '" is neither a count, idle nor drain')
end
-- A request that may queue needs its wake-up channel and its liveness: refused before anything changes.
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
  if ttl then -- queued: a replay of a request (a try or a drain under a queued id renews nothing)
    renew_deadline(id, ttl)
  end
  return done({'QUEUED'})
end
if mode == 'idle' then
  if M.used == 0 and M.qlen == 0 then
    return done({'IDLE'})
  end
  enqueue(id, 0, cid, 0, ttl)
  return done({'QUEUED'})
end
if M.closed ~= 0 then
  return done({'CLOSED'})
end
if mode == 'drain' then
  local n = M.limit - M.used
  if n <= 0 then
    return done({'GRANTED', next_fence(), '0'})
  end
  local tok = next_fence()
  add_holder(id, n, tok, NOW_MS + lease)
  return done({'GRANTED', tok, fmt(n)})
end
if permits > M.max then
  return done({'ERR_MAX', fmt(M.max)})
end
if permits == 0 then
  return done({'GRANTED', next_fence()})
end
-- Nobody queued (the head never fits after begin()) and enough free.
if M.qlen == 0 and M.limit - M.used >= permits then
  local tok = next_fence()
  add_holder(id, permits, tok, NOW_MS + lease)
  return done({'GRANTED', tok})
end
if mode == 'try' then
  return done({'NOT_AVAILABLE'})
end
-- A new tail never changes the head, which does not fit: nothing to serve.
enqueue(id, permits, cid, lease, ttl)
return done({'QUEUED'})
