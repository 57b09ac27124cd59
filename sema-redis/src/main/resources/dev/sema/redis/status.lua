-- STATUS. Reaps and serves like every script (so expired leases are counted back), then reports.
-- Reply: {limit, max, used, queueLength, closed}
local err = begin(nil)
if err then
  return err
end
return done({fmt(M.limit), fmt(M.max), fmt(M.used), fmt(M.qlen), fmt(M.closed)})
