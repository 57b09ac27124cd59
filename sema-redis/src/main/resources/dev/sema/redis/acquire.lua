-- ACQUIRE. ARGV[4..9]: id, clientId, permits, leaseMs, waiterTtlMs, mode ('try' | 'wait' | 'idle' | 'drain').
-- Idempotent per id: a replay finds the grant or the queue entry it made and only refreshes it.
-- 'drain' (permits 0) takes every permit available, whatever the queue: fewer available never makes the
-- head fit (S2).
-- Replies: {'GRANTED', token} | {'GRANTED', token, permits} (a replay of a held grant, a drain) | {'QUEUED'}
-- | {'NOT_AVAILABLE'} | {'IDLE'} | {'CLOSED'} | {'ERR_MAX', max}
local id, cid, permits, lease, ttl, mode =
    ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
-- Fast path: open, nobody queued (so id is not queued, S3), no idle expiry to set, enough free, and
-- nothing due (S4). HSETNX writes the grant and tells a replay (id held already) in one command; a replay,
-- like every other case, goes on to the full path.
if mode ~= 'idle' and closed == 0 and qlen == 0 and idle == 0 and permits > 0 and permits <= max
    and limit - used >= permits then
  local t = redis.call('TIME')
  NOW_MS = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  NOW_US = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local tok = math.max(fence + 1, NOW_US)
  if NOW_MS < due and redis.call('HSETNX', K_HOLD, id, struct.pack('<dd', permits, tok) .. cid) == 1 then
    local d = NOW_MS + lease
    redis.call('ZADD', K_LEASE, d, id)
    redis.call('SET', K_META, struct.pack(META, VERSION, limit, max, used + permits, tok, seq, closed, idle,
        math.min(due, d), qlen), 'KEEPTTL') -- S4: due no later than the new lease
    return {'GRANTED', tok}
  end
end
--@common
local err = begin(id)
if err then
  return err
end
local h = redis.call('HGET', K_HOLD, id)
if h then
  local p, tok = parse_holder(h)
  renew_lease(id, lease)
  return done({'GRANTED', tok, fmt(p)})
end
if is_queued(id) then
  renew_waiter(id, ttl)
  return done({'QUEUED'})
end
if mode == 'idle' then
  if M.used == 0 and M.qlen == 0 then
    return done({'IDLE'})
  end
  enqueue(id, 0, cid, 0, 'i', ttl)
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
  add_holder(id, n, tok, cid, NOW_MS + lease)
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
  add_holder(id, permits, tok, cid, NOW_MS + lease)
  return done({'GRANTED', tok})
end
if mode == 'try' then
  return done({'NOT_AVAILABLE'})
end
-- A new tail never changes the head, which does not fit: nothing to serve.
enqueue(id, permits, cid, lease, 'a', ttl)
return done({'QUEUED'})
