-- CANCEL. ARGV[1]: id. Withdraws a queued request; a grant that raced with the cancel is released.
-- Replies: {'CANCELLED'} | {'WAS_GRANTED_RELEASED'} | {'NOT_FOUND'}
local id = ARGV[1]
local err = begin(id)
if err then
  return err
end
if is_queued(id) then
  remove_waiter(id, true)
  grant_loop()
  return done({'CANCELLED'})
end
if remove_holder(id, false) then
  grant_loop()
  return done({'WAS_GRANTED_RELEASED'})
end
return done({'NOT_FOUND'})
