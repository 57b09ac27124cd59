-- CLOSE. ARGV[1]: the closing handle's clientId. Closes the semaphore for every client: every queued acquire
-- is removed and its client told ('C id'), except the closer, which fails its own after the reply (with the
-- cause it may have been given); awaitIdle waiters stay. Idempotent.
-- Reply: {'OK', '1' if this call closed it else '0'}
local closer = ARGV[1]
local err = begin(nil)
if err then
  return err
end
local closed_now = '0'
if M.closed == 0 then
  closed_now = '1'
  set('closed', 1)
  for _, id in ipairs(redis.call('ZRANGE', K_QUEUE, '0', '-1')) do
    local h = redis.call('HGET', K_HOLD, id)
    local a, cid = nil, nil
    if h then
      local _
      a, _, cid = parse_entry(h)
    end
    if not a or a > 0 then
      remove_waiter(id, false) -- no request under that id (S3 broken from outside)
    elseif a < -1 then -- an acquire (an awaitIdle, -1, stays)
      remove_waiter(id, true)
      if cid ~= closer then
        notify(cid, id, 'C ' .. id)
      end
    end
  end
  grant_loop()
end
return done({'OK', closed_now})
