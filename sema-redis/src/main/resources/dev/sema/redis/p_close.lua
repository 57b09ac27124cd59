-- CLOSE of a partitioned semaphore (API.md §11a: closing the parent closes every partition): close.lua's
-- arguments, replies and rules, over every slot's queue.
local closer = ARGV[1]
local err = begin(nil)
if err then
  return err
end
local closed_now = '0'
if M.closed == 0 then
  closed_now = '1'
  set('closed', 1)
  local all = redis.call('ZRANGE', K_QUEUE, '0', '-1', 'WITHSCORES')
  for k = 1, #all, 2 do
    local m, s = all[k], tonumber(all[k + 1])
    local id = string.sub(m, 15)
    local e = redis.call('HGET', K_HOLD, id)
    local a, sq, _ = nil, nil, nil
    if e then
      a, _, _, sq = unpack_entry(e)
    end
    if not a or a > 0 then -- no request under that id (Q2 broken from outside): leave the queue
      redis.call('ZREM', K_QUEUE, m)
      set_q(s, M.q[s] - 1)
    elseif a < -1 then -- an acquire (an awaitIdle, -1, stays)
      remove_waiter(id, true, s, sq)
      local cid = string.sub(e, 33)
      if cid ~= closer then
        notify(cid, id, 'C ' .. id)
      end
    end
  end
  grant_loop()
end
return done({'OK', closed_now})
