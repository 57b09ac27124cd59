-- RENEW. ARGV[1..4]: clientId, leaseMs, waiterTtlMs, count of held ids; then the held ids, then the
-- waiting ids. Pushes out the leases of held grants and the liveness of queued waiters; reports held
-- grants that are gone (lost), waiters that were granted (heals a lost wake-up message) and waiters that
-- are neither queued nor held (gone: reaped, closed, lost with the data, or an idle wait that ended).
-- Reply: {closed, lost[], granted[id, token, ...], gone[]}
local lease, ttl, n = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not (lease and ttl and n) then -- refused before anything changes
  return redis.error_reply('sema: RENEW: leaseMs, waiterTtlMs and the count of held ids must be counts')
end
local err = begin(nil)
if err then
  return err
end
local lost, granted, gone = {}, {}, {}
for i = 5, 4 + n do
  local id = ARGV[i]
  if get_grant(id) then
    renew_deadline(id, lease)
  else
    lost[#lost + 1] = id
  end
end
for i = 5 + n, #ARGV do
  local id = ARGV[i]
  if is_queued(id) then
    renew_deadline(id, ttl)
  else
    local p, tok = get_grant(id)
    if p then
      renew_deadline(id, lease)
      granted[#granted + 1] = id
      granted[#granted + 1] = tok
    else
      gone[#gone + 1] = id
    end
  end
end
return done({fmt(M.closed), lost, granted, gone})
