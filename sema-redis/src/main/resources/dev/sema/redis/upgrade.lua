-- UPGRADE. Rewrites a semaphore of an older schema as schema 4, in place, once; run by a client whose
-- script replied ERR_UPGRADE, which then runs that script again. A script of its own, not part of every
-- script, because it declares the keys only the older schemas have.
-- KEYS: 1 meta, 2 holders, 3 leases, 4 queue, then the older schemas' 5 waiters (HASH waiterId ->
-- 'permits|clientId|leaseMs|kind') and 6 wlive (ZSET waiterId -> liveness deadline).
--  - Schemas 1 and 2: meta is a hash of decimal fields, holders values 'permits|token|clientId'.
--  - Schema 3: meta is the binary value of schema 4 (common.lua); waiters and wlive hold the queued requests.
-- Schema 4 keeps each queued request in holders and its liveness deadline in leases (common.lua), in the
-- order of the queue, which is kept. 'due' is set to 0, so the next script reaps and sets it anew (S4).
-- A client of an older schema then refuses the semaphore with a clear error rather than serve the queue
-- out of order. Replies: {'OK'} (also when there is nothing to upgrade) | {'ERR_CORRUPT', message}
local K_META, K_HOLD, K_LEASE, K_QUEUE, K_WAIT, K_WLIVE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local META = '<Bddddddddd'
local limit, max, used, fence, seq, closed, idle
local keepttl = true

local v = redis.pcall('GET', K_META)
if type(v) == 'string' then
  if #v == 73 and string.byte(v) == 4 then
    return {'OK'} -- upgraded already, by another client
  end
  if #v ~= 73 or string.byte(v) ~= 3 then
    return {'ERR_CORRUPT', K_META .. ' is not a semaphore of schema 1, 2 or 3'}
  end
  local _
  _, limit, max, used, fence, seq, closed, idle = struct.unpack(META, v)
elseif not v then
  return {'OK'} -- missing: the operation creates it
else
  if redis.call('TYPE', K_META)['ok'] ~= 'hash' then
    return {'ERR_CORRUPT', K_META .. ' is not a semaphore of schema 1, 2 or 3'}
  end
  local h = redis.call('HMGET', K_META, 'ver', 'limit', 'max', 'used', 'fence', 'seq', 'closed', 'idle')
  if h[1] ~= '1' and h[1] ~= '2' then
    return {'ERR_CORRUPT', K_META .. ' has schema version ' .. tostring(h[1] or 'none') .. ', expected 4'}
  end
  local fields = {'limit', 'max', 'used', 'fence', 'seq', 'closed'}
  for i, f in ipairs(fields) do
    if not tonumber(h[i + 1]) then
      return {'ERR_CORRUPT', K_META .. ' field ' .. f .. ' is missing or not a number'}
    end
  end
  limit, max, used = tonumber(h[2]), tonumber(h[3]), tonumber(h[4])
  fence, seq, closed, idle = tonumber(h[5]), tonumber(h[6]), tonumber(h[7]), tonumber(h[8]) or 0
  -- Their holders values were 'permits|token|clientId': rewrite them in binary.
  local hv = redis.call('HGETALL', K_HOLD)
  for i = 1, #hv, 2 do
    local p, tok, hcid = string.match(hv[i + 1], '^(%d+)|(%d+)|(.*)$')
    if p then
      redis.call('HSET', K_HOLD, hv[i], struct.pack('<dd', tonumber(p), tonumber(tok)) .. hcid)
    end
  end
  redis.call('DEL', K_META)
  keepttl = false
end

-- The queued requests, in queue order: into holders as -1 - permits and the lease, with their liveness
-- deadline in leases. An entry without its request (or clashing with a grant) leaves the queue.
local qlen = 0
for _, id in ipairs(redis.call('ZRANGE', K_QUEUE, '0', '-1')) do
  local w = redis.call('HGET', K_WAIT, id)
  local p, cid, lease = nil, nil, nil
  if w then
    p, cid, lease = string.match(w, '^(%d+)|([^|]*)|(%d+)|%a$')
  end
  if p and redis.call('HEXISTS', K_HOLD, id) == 0 then
    redis.call('HSET', K_HOLD, id, struct.pack('<dd', -1 - tonumber(p), tonumber(lease)) .. cid)
    redis.call('ZADD', K_LEASE, tonumber(redis.call('ZSCORE', K_WLIVE, id)) or 0, id)
    qlen = qlen + 1
  else
    redis.call('ZREM', K_QUEUE, id)
  end
end
redis.call('DEL', K_WAIT, K_WLIVE)
local meta = struct.pack(META, 4, limit, max, used, fence, seq, closed, idle, 0, qlen)
if keepttl then
  redis.call('SET', K_META, meta, 'KEEPTTL')
else
  redis.call('SET', K_META, meta)
end
return {'OK'}
