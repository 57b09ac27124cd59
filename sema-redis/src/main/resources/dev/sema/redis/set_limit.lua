-- SET_LIMIT. ARGV[1..2]: mode ('set' | 'add' | 'reduce'), n (0 <= n <= 2^50). Never revokes grants;
-- a raise serves the queue at once. Replies: {'OK', oldLimit, newLimit} | {'ERR_RANGE', max}
local mode, n = ARGV[1], tonumber(ARGV[2])
if not n or (mode ~= 'set' and mode ~= 'add' and mode ~= 'reduce') then -- refused before anything changes
  return redis.error_reply('sema: SET_LIMIT: "' .. tostring(mode) .. ' ' .. tostring(ARGV[2])
      .. '" is not set, add or reduce and a count')
end
local err = begin(nil)
if err then
  return err
end
local old = M.limit
local new
if mode == 'set' then
  if n > M.max then
    return done({'ERR_RANGE', fmt(M.max)})
  end
  new = n
elseif mode == 'add' then
  new = math.min(M.max, old + n)
else
  new = math.max(0, old - n)
end
set('limit', new)
grant_loop()
return done({'OK', fmt(old), fmt(new)})
