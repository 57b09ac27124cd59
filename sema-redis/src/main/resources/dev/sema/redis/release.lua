-- RELEASE. ARGV[4..6]: grantId, remainderId ('' = release all), permits to release.
-- A partial release moves the rest to remainderId (same token, same lease), which makes a replay
-- recognisable: grantId gone and remainderId held.
-- Replies: {'OK'} | {'NOT_HELD'}
local id, rest_id, k = ARGV[4], ARGV[5], tonumber(ARGV[6])
local err = begin(nil)
if err then
  return err
end
local p, tok, cid, deadline = remove_holder(id)
if not p then
  if rest_id ~= '' and redis.call('HEXISTS', K_HOLD, rest_id) == 1 then
    return done({'OK'})
  end
  return done({'NOT_HELD'})
end
if rest_id ~= '' and k < p then
  add_holder(rest_id, p - k, tok, cid, deadline)
end
grant_loop()
return done({'OK'})
