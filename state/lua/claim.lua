
local st = redis.call('HMGET', KEYS[1], 'epoch', 'next', 'owner')
if ARGV[2] ~= '' and st[3] and st[3] ~= ARGV[2] then
  return {3, st[3], ''}
end
if st[1] and tonumber(st[1]) > tonumber(ARGV[1]) then
  return {1, st[1], st[2] or ''}
end
if st[1] ~= ARGV[1] then
  redis.call('HSET', KEYS[1], 'epoch', ARGV[1])
end
if ARGV[2] ~= '' and not st[3] then
  redis.call('HSET', KEYS[1], 'owner', ARGV[2])
end
return {0, ARGV[1], st[2] or ''}
