-- ACQUIRE. ARGV[4..9]: id, clientId, permits, leaseMs, waiterTtlMs, mode ('try' | 'wait' | 'idle').
-- Idempotent per id: a replay finds the grant or the queue entry it made and only refreshes it.
-- Replies: {'GRANTED', token} | {'QUEUED'} | {'NOT_AVAILABLE'} | {'IDLE'} | {'CLOSED'} | {'ERR_MAX', max}
local id, cid, permits, lease, ttl, mode =
    ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local err = begin(id)
if err then
  return err
end
local h = redis.call('HGET', K_HOLD, id)
if h then
  local _, tok = parse_holder(h)
  redis.call('ZADD', K_LEASE, 'XX', NOW_MS + lease, id)
  return done({'GRANTED', tok})
end
if redis.call('ZSCORE', K_QUEUE, id) then
  redis.call('ZADD', K_WLIVE, 'XX', NOW_MS + ttl, id)
  return done({'QUEUED'})
end
if mode == 'idle' then
  if M.used == 0 and redis.call('ZCARD', K_QUEUE) == 0 then
    return done({'IDLE'})
  end
  enqueue(id, 0, cid, 0, 'i', ttl)
  return done({'QUEUED'})
end
if M.closed ~= 0 then
  return done({'CLOSED'})
end
if permits > M.max then
  return done({'ERR_MAX', fmt(M.max)})
end
if permits == 0 then
  return done({'GRANTED', next_fence()})
end
-- Fast path: nobody queued (the head never fits after begin()) and enough free.
if redis.call('ZCARD', K_QUEUE) == 0 and M.limit - M.used >= permits then
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
