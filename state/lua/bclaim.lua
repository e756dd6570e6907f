local st = redis.call('HMGET', KEYS[1], 'epoch', 'next', 'owner', 'nb', 'sw', 'l2')
if ARGV[2] ~= '' and st[3] and st[3] ~= ARGV[2] then
  return {3, st[3], '', '', '', ''}
end
if ARGV[4] ~= '1' and st[1] and tonumber(st[1]) > tonumber(ARGV[1]) then
  return {1, st[1], st[2] or '', '', '', ''}
end
if st[1] ~= ARGV[1] then
  redis.call('HSET', KEYS[1], 'epoch', ARGV[1])
end
if ARGV[2] ~= '' and not st[3] then
  redis.call('HSET', KEYS[1], 'owner', ARGV[2])
end
local nb = st[4]
if not nb then
  nb = ARGV[3]
  redis.call('HSET', KEYS[1], 'nb', nb)
end
return {0, ARGV[1], st[2] or '', nb, st[5] or '0', st[6] or ''}
