-- CLOSE. ARGV[4]: the closing handle's clientId. Closes the semaphore for every client: every queued acquire
-- is removed and its client told ('C id'), except the closer, which fails its own after the reply (with the
-- cause it may have been given); awaitIdle waiters stay. Idempotent.
-- Reply: {'OK', '1' if this call closed it else '0'}
local closer = ARGV[4]
local err = begin(nil)
if err then
  return err
end
local closed_now = '0'
if M.closed == 0 then
  closed_now = '1'
  set('closed', 1)
  for _, id in ipairs(redis.call('ZRANGE', K_QUEUE, 0, -1)) do
    local w = redis.call('HGET', K_WAIT, id)
    if not w then
      remove_waiter(id)
    else
      local _, cid, _, kind = parse_waiter(w)
      if kind ~= 'i' then
        remove_waiter(id)
        if cid ~= closer then
          notify(cid, id, 'C ' .. id)
        end
      end
    end
  end
  grant_loop()
end
return done({'OK', closed_now})
