-- RELEASE of a partitioned semaphore (API.md §11a; partitions.lua): release.lua's arguments and replies;
-- the grant's slot is read from its entry. After the fast paths, release.lua's own rest.
local id = ARGV[1]
-- Fast paths, as release.lua's: a whole grant and no idle expiry. With nobody queued, only the release.
-- With every waiter in one slot's queue, that slot's head has no earmark or higher head against it: its
-- capacity is what is free, and the slot is served as release.lua serves the one queue (one grant, when
-- nothing behind the head can follow it). Each writes the meta fields it changes, the slots' among them,
-- with one SETRANGE (schema 5 keeps them side by side; see partitions.lua).
if ARGV[2] == nil and idle == 0 and pv and not CREATED then
  local h = redis.call('HGET', K_HOLD, id)
  local p, s, _ = nil, nil, nil
  if h and #h >= 24 then
    p, _, s = struct.unpack('<ddd', h)
  end
  if p and p > 0 then
    local np = pn
    local rest = used - p
    local hat = 90 + 8 * np -- where the partitions' held permits start (1-based)
    -- used, then the partitions' held permits up to the grant's slot: the release alone
    local value = struct.pack('<d', rest)
    if s < np then
      value = value .. string.sub(pv, hat, hat + 8 * s - 1) .. struct.pack('<d', struct.unpack('<d', pv, hat + 8 * s) - p)
    end
    if qlen == 0 then
      redis.call('HDEL', K_HOLD, id)
      redis.call('ZREM', K_LEASE, id)
      redis.call('SETRANGE', K_META, string.format('%d', 81 + 8 * np), value)
      return 'OK'
    end
    -- The one slot with waiters, if there is one: w (np: the parent's own).
    local w, others = np, 0
    for i = 0, np - 1 do
      local q = struct.unpack('<d', pv, 74 + 8 * i)
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
      local score = string.format('%d', w)
      local m = redis.call('ZRANGEBYSCORE', K_QUEUE, score, score, 'LIMIT', '0', '1')[1]
      local head = m and string.sub(m, 15)
      local e = head and redis.call('HGET', K_HOLD, head)
      if e and #e >= 32 then
        local a, hlease = struct.unpack('<dd', e)
        local hp = -1 - a
        local fits = a < -1 and limit - rest >= hp
        if a < -1 and (not fits or qlen == 1 or limit - rest - hp <= 0) then
          redis.call('HDEL', K_HOLD, id)
          redis.call('ZREM', K_LEASE, id)
          if not fits then -- the head still does not fit: only the release
            redis.call('SETRANGE', K_META, string.format('%d', 81 + 8 * np), value)
            return 'OK'
          end
          local hcid = string.sub(e, 33)
          local tok = fence + 1 < NOW_US and NOW_US or fence + 1
          local d = NOW_MS + hlease
          redis.call('ZREM', K_QUEUE, m)
          redis.call('HSET', K_HOLD, head, struct.pack('<ddd', hp, tok, w))
          redis.call('ZADD', K_LEASE, string.format('%d', d), head)
          -- due and qlen, the queue lengths (w's one less), fence and used, then the held permits up to the
          -- later of the two slots (s's less the release, w's more the grant)
          value = struct.pack('<dd', (d < due and d or due), qlen - 1)
          if w < np then
            value = value .. string.sub(pv, 74, 73 + 8 * w) .. struct.pack('<d', qlen - 1)
                .. string.sub(pv, 82 + 8 * w, 73 + 8 * np)
          else
            value = value .. string.sub(pv, 74, 73 + 8 * np)
          end
          value = value .. struct.pack('<dd', tok, rest + hp)
          local upto = s < np and s or -1
          if w < np and w > upto then
            upto = w
          end
          for i = 0, upto do
            local at = hat + 8 * i
            if i == s or i == w then
              local held = struct.unpack('<d', pv, at)
              if i == s then
                held = held - p
              end
              if i == w then
                held = held + hp
              end
              value = value .. struct.pack('<d', held)
            else
              value = value .. string.sub(pv, at, at + 7)
            end
          end
          redis.call('SETRANGE', K_META, '57', value)
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
