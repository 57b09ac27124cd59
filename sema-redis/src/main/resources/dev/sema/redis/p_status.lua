-- STATUS of a partitioned semaphore: status.lua's reply, then, per slot (the partitions in priority order,
-- then the parent's own), its held permits, guarantee, queue length and capacity (what a request of it at
-- the head of its queue could take now), then the partitions as stored (partitions.lua).
-- Reply: {limit, max, used, queueLength, closed, {held, guarantee, queued, capacity, ...}, partitions}
local err = begin(nil)
if err then
  return err
end
local slots = {}
for s = 0, NP do
  slots[#slots + 1] = fmt(M.held[s])
  slots[#slots + 1] = fmt(guarantee(s))
  slots[#slots + 1] = fmt(M.q[s])
  slots[#slots + 1] = fmt(capacity(s))
end
return done({fmt(M.limit), fmt(M.max), fmt(M.used), fmt(M.qlen), fmt(M.closed), slots, SPEC})
