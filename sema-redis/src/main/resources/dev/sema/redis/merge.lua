-- MERGE. ARGV[1..3]: targetId ('' if the target holds nothing), otherId, newId.
-- The merged grant holds both parts under newId, with the larger of the two tokens and the later
-- lease deadline. Replies: {'OK', token, permits, lostMask} (lostMask: LOST_TARGET, the target part was
-- gone, plus LOST_OTHER, the other part was gone; the same constants as Protocol.java) | {'NOT_HELD'}
local LOST_TARGET, LOST_OTHER = 1, 2
local target, other, new_id = ARGV[1], ARGV[2], ARGV[3]
local err = begin(nil)
if err then
  return err
end
local pa, ta, da
if target ~= '' then
  pa, ta, da = remove_holder(target, true)
end
local pb, tb, db = remove_holder(other, true)
if not pa and not pb then
  local p, t = get_grant(new_id)
  if p then
    return done({'OK', t, fmt(p), 0})
  end
  return done({'NOT_HELD'})
end
local tok
if pa and pb then
  if tonumber(ta) >= tonumber(tb) then tok = ta else tok = tb end
else
  tok = ta or tb
end
local total = (pa or 0) + (pb or 0)
add_holder(new_id, total, tok, math.max(da or 0, db or 0))
local lost = 0
if target ~= '' and not pa then
  lost = lost + LOST_TARGET
end
if not pb then
  lost = lost + LOST_OTHER
end
return done({'OK', tok, fmt(total), lost})
