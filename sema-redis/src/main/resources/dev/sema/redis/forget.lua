-- FORGET. ARGV[1]: grantId. The grant ends without giving its permits back: used and limit both drop
-- by its permits (the limit not below 0). Replies: {'OK', oldLimit, newLimit} | {'NOT_HELD'}
local id = ARGV[1]
local err = begin(nil)
if err then
  return err
end
local p = remove_holder(id, false)
if not p then
  return done({'NOT_HELD'})
end
local old = M.limit
set('limit', math.max(0, M.limit - p))
grant_loop()
return done({'OK', fmt(old), fmt(M.limit)})
