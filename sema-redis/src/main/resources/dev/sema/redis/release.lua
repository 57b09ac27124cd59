-- RELEASE. ARGV[1..3]: grantId, then remainderId and the permits to release, or neither (or '' and 0):
-- release all.
-- A partial release moves the rest to remainderId (same token, same lease), which makes a replay
-- recognisable: grantId gone and remainderId held. With nobody queued it reads no clock (S5).
-- Replies: {'OK'} | {'NOT_HELD'}; the fast paths reply 'OK' without the table, which costs Redis a
-- conversion of its own.
local id = ARGV[1]
-- Fast paths: a whole grant (its id alone) and no idle expiry to set. They write only the meta fields they
-- change (SETRANGE), which leaves any time-to-live alone.
if ARGV[2] == nil and idle == 0 then
  local h = redis.call('HGET', K_HOLD, id)
  local p = h and struct.unpack('<d', h)
  if p and p > 0 then
    local rest = used - p
    if qlen == 0 then
      -- Nobody to serve: no clock, no scan (S5).
      redis.call('HDEL', K_HOLD, id)
      redis.call('ZREM', K_LEASE, id)
      redis.call('SETRANGE', K_META, META_USED, struct.pack('<d', rest)) -- only used changes
      return 'OK'
    end
    -- Somebody queued: serve the head if it asks for permits and fits. Only when nothing is due (S4: the
    -- head did not fit before this release, S2) and nothing behind the head can fit afterwards (it is the
    -- only one, or nothing stays free): then one grant is all the serving there is, and S2 holds again.
    local t = redis.call('TIME')
    local s, us = tonumber(t[1]), tonumber(t[2])
    NOW_MS = s * 1000 + (us - us % 1000) / 1000
    NOW_US = s * 1000000 + us
    if NOW_MS < due then
      local head = redis.call('ZRANGE', K_QUEUE, '0', '0')[1]
      local w = head and redis.call('HGET', K_HOLD, head)
      if w then
        local a, hlease = struct.unpack('<dd', w)
        local hp = -1 - a
        if a < -1 and limit - rest < hp then
          -- The head still does not fit: only the release.
          redis.call('HDEL', K_HOLD, id)
          redis.call('ZREM', K_LEASE, id)
          redis.call('SETRANGE', K_META, META_USED, struct.pack('<d', rest))
          return 'OK'
        end
        if a < -1 and (qlen == 1 or limit - rest - hp <= 0) then
          local hcid = string.sub(w, 17)
          local tok = fence + 1 < NOW_US and NOW_US or fence + 1
          local d = NOW_MS + hlease
          redis.call('HDEL', K_HOLD, id)
          redis.call('ZREM', K_LEASE, id)
          redis.call('ZREM', K_QUEUE, head)
          redis.call('HSET', K_HOLD, head, struct.pack('<dd', hp, tok))
          redis.call('ZADD', K_LEASE, string.format('%d', d), head)
          redis.call('SETRANGE', K_META, META_USED, struct.pack('<ddddddd', rest + hp, tok, seq, closed, idle,
              (d < due and d or due), qlen - 1)) -- used to qlen: the last seven fields
          local channel, message = string.sub(K_META, 1, -5) .. 'wake:' .. hcid,
              'G ' .. head .. ' ' .. string.format('%d', tok)
          if string.sub(hcid, -1) == 's' then
            local r = redis.pcall('SPUBLISH', channel, message)
            if type(r) == 'table' and r.err then
              redis.log(redis.LOG_WARNING, 'sema: SPUBLISH to ' .. channel .. ' failed: ' .. tostring(r.err))
            end
          else
            redis.call('PUBLISH', channel, message)
          end
          return 'OK'
        end
      end
    end
  end
end
--@common
local rest_id, k = ARGV[2] or '', tonumber(ARGV[3])
if rest_id ~= '' and not k then -- refused before anything changes
  return redis.error_reply('sema: RELEASE: permits "' .. tostring(ARGV[3]) .. '" is not a count')
end
local err = begin(nil, true)
if err then
  return err
end
local p, tok, deadline = remove_holder(id, rest_id ~= '')
if not p then
  if rest_id ~= '' and get_grant(rest_id) then
    return done({'OK'})
  end
  return done({'NOT_HELD'})
end
if rest_id ~= '' and k < p then
  add_holder(rest_id, p - k, tok, deadline)
end
grant_loop()
return done({'OK'})
