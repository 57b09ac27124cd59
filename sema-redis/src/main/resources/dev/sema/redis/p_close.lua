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
  for s = 0, NP do
    for _, id in ipairs(redis.call('ZRANGE', qkey(s), '0', '-1')) do
      local e = redis.call('HGET', K_HOLD, id)
      local a = e and struct.unpack('<d', e)
      if not a or a > 0 then
        remove_waiter(id, false, s) -- no request under that id (Q2 broken from outside)
      elseif a < -1 then -- an acquire (an awaitIdle, -1, stays)
        remove_waiter(id, true, s)
        local cid = string.sub(e, 25)
        if cid ~= closer then
          notify(cid, id, 'C ' .. id)
        end
      end
    end
  end
  grant_loop()
end
return done({'OK', closed_now})
