-- RELEASE of a partitioned semaphore (API.md §11a; partitions.lua): release.lua's arguments and replies;
-- the grant's slot is read from its entry. After the fast paths, release.lua's own rest.
local id = ARGV[1]
-- Fast paths, as release.lua's: a whole grant and no idle expiry. With nobody queued, only the release.
-- With every waiter in one slot's queue, that slot's head has no earmark or higher head against it: its
-- capacity is what is free, and the slot is served as release.lua serves the one queue (one grant, when
-- nothing behind the head can follow it). Each writes the meta fields it changes and the slots' own.
if ARGV[2] == nil and idle == 0 and pv and not CREATED then
  local h = redis.call('HGET', K_HOLD, id)
  local p, s, _ = nil, nil, nil
  if h and #h >= 24 then
    p, _, s = struct.unpack('<ddd', h)
  end
  if p and p > 0 then
    local np = #KEYS - 4
    local rest = used - p
    if qlen == 0 then
      redis.call('HDEL', K_HOLD, id)
      redis.call('ZREM', K_LEASE, id)
      redis.call('SETRANGE', K_META, META_USED, struct.pack('<d', rest))
      if s < np then
        local at = 89 + 24 * s
        redis.call('SETRANGE', K_META, string.format('%d', at), struct.pack('<d', struct.unpack('<d', pv, at + 1) - p))
      end
      return 'OK'
    end
    -- The one slot with waiters, if there is one: w (np: the parent's own).
    local w, others = np, 0
    for i = 0, np - 1 do
      local q = struct.unpack('<d', pv, 98 + 24 * i)
      if q > 0 then
        if q == qlen then
          w = i
        end
        others = others + q
      end
    end
    local t = redis.call('TIME')
    local sec, us = tonumber(t[1]), tonumber(t[2])
    NOW_MS = sec * 1000 + (us - us % 1000) / 1000
    NOW_US = sec * 1000000 + us
    if NOW_MS < due and (w < np or others == 0) then
      local qkey = w < np and KEYS[5 + w] or K_QUEUE
      local head = redis.call('ZRANGE', qkey, '0', '0')[1]
      local e = head and redis.call('HGET', K_HOLD, head)
      if e and #e >= 24 then
        local a, hlease = struct.unpack('<dd', e)
        local hp = -1 - a
        local fits = a < -1 and limit - rest >= hp
        if a < -1 and (not fits or qlen == 1 or limit - rest - hp <= 0) then
          redis.call('HDEL', K_HOLD, id)
          redis.call('ZREM', K_LEASE, id)
          local held_s = s < np and struct.unpack('<d', pv, 90 + 24 * s) - p
          if not fits then -- the head still does not fit: only the release
            redis.call('SETRANGE', K_META, META_USED, struct.pack('<d', rest))
            if s < np then
              redis.call('SETRANGE', K_META, string.format('%d', 89 + 24 * s), struct.pack('<d', held_s))
            end
            return 'OK'
          end
          local hcid = string.sub(e, 25)
          local tok = fence + 1 < NOW_US and NOW_US or fence + 1
          local d = NOW_MS + hlease
          redis.call('ZREM', qkey, head)
          redis.call('HSET', K_HOLD, head, struct.pack('<ddd', hp, tok, w))
          redis.call('ZADD', K_LEASE, string.format('%d', d), head)
          redis.call('SETRANGE', K_META, META_USED, struct.pack('<ddddddd', rest + hp, tok, seq, closed, idle,
              (d < due and d or due), qlen - 1)) -- used to qlen: the last seven fields
          if s < np and s ~= w then
            redis.call('SETRANGE', K_META, string.format('%d', 89 + 24 * s), struct.pack('<d', held_s))
          end
          if w < np then -- the served slot's held and queue length, after this release if it is the same
            local held_w = s == w and held_s or struct.unpack('<d', pv, 90 + 24 * w)
            redis.call('SETRANGE', K_META, string.format('%d', 89 + 24 * w), struct.pack('<dd', held_w + hp, qlen - 1))
          end
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
