-- SPLIT. ARGV[1..4]: grantId, keepId ('' if nothing stays), newId, permits to move (> 0).
-- Both parts keep the grant's token and lease deadline; nothing is released, so nobody is served.
-- Replies: {'OK'} | {'NOT_HELD'}
local id, keep_id, new_id, k = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if not k or k <= 0 then -- refused before anything changes
  return redis.error_reply('sema: SPLIT: permits "' .. tostring(ARGV[4]) .. '" is not a count > 0')
end
local err = begin(nil)
if err then
  return err
end
local p, tok, deadline = remove_holder(id, true)
if not p then
  if get_grant(new_id) then
    return done({'OK'})
  end
  return done({'NOT_HELD'})
end
if k > p then
  k = p
end
if keep_id ~= '' and p - k > 0 then
  add_holder(keep_id, p - k, tok, deadline)
end
add_holder(new_id, k, tok, deadline)
return done({'OK'})
