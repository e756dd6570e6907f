
local st = redis.call('HMGET', KEYS[1], 'next', 'owner')
if ARGV[2] ~= '' and st[2] and st[2] ~= ARGV[2] then
  return {3, st[2], ''}
end
redis.call('HSET', KEYS[1], 'epoch', ARGV[1])
if ARGV[2] ~= '' and not st[2] then
  redis.call('HSET', KEYS[1], 'owner', ARGV[2])
end
return {0, ARGV[1], st[1] or ''}
