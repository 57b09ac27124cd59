-- RELEASE. ARGV[4..6]: grantId, remainderId ('' = release all), permits to release.
-- A partial release moves the rest to remainderId (same token, same lease), which makes a replay
-- recognisable: grantId gone and remainderId held. With nobody queued it reads no clock (S5).
-- Replies: {'OK'} | {'NOT_HELD'}
local id, rest_id, k = ARGV[4], ARGV[5], tonumber(ARGV[6])
-- Fast path: a whole grant, nobody to serve, no idle expiry to set: no clock, no scan (S5).
if rest_id == '' and qlen == 0 and idle == 0 then
  local h = redis.call('HGET', K_HOLD, id)
  if h then
    redis.call('HDEL', K_HOLD, id)
    redis.call('ZREM', K_LEASE, id)
    local rest = used - struct.unpack('<d', h)
    local meta = struct.pack(META, VERSION, limit, max, rest, fence, seq, closed, idle, due, qlen)
    redis.call('SET', K_META, meta, 'KEEPTTL')
    return {'OK'}
  end
end
--@common
local err = begin(nil, true)
if err then
  return err
end
local p, tok, cid, deadline = remove_holder(id, rest_id ~= '')
if not p then
  if rest_id ~= '' and redis.call('HEXISTS', K_HOLD, rest_id) == 1 then
    return done({'OK'})
  end
  return done({'NOT_HELD'})
end
if rest_id ~= '' and k < p then
  add_holder(rest_id, p - k, tok, cid, deadline)
end
grant_loop()
return done({'OK'})
