local st = redis.call('HMGET', KEYS[1], 'epoch', 'next', 'owner', 'prev', 'pe', 'nb')
if ARGV[4] ~= '' and st[3] ~= ARGV[4] then
  if st[3] then
    return {3, st[3], '', 0}
  end
  return {1, '', '', 0}
end
if not st[1] or st[1] ~= ARGV[1] then
  return {1, st[1] or '', st[2] or '', 0}
end
local nxt = st[2] or '-1'
if nxt ~= ARGV[2] then
  if nxt == ARGV[3] and st[4] == ARGV[2] and st[5] == ARGV[1] then
    return {4, st[1], nxt, 0}
  end
  return {2, st[1], nxt, 0}
end
if st[6] ~= ARGV[5] then
  return {5, st[6] or '', nxt, 0}
end
local call, keys, argv, unpack, byte = redis.call, KEYS, ARGV, unpack, string.byte
-- Writes: per touched bucket, its sets (field, value) and deletes.
local nw = tonumber(argv[6])
local a = 9
for i = 1, nw do
  local k = keys[i + 1]
  local ns, nd = tonumber(argv[a]), tonumber(argv[a + 1])
  a = a + 2
  local e = a + 2 * ns
  while a < e do
    local c = math.min(e, a + 1000)
    call('HSET', k, unpack(argv, a, c - 1))
    a = c
  end
  e = a + nd
  while a < e do
    local c = math.min(e, a + 1000)
    call('HDEL', k, unpack(argv, a, c - 1))
    a = c
  end
end
-- Sweep: delete the fields whose stamp is at or before the cutoff.
local swept = 0
if argv[7] ~= '' then
  local cut = tonumber(argv[7])
  for i = nw + 2, #keys do
    local all = call('HGETALL', keys[i])
    local del, n = {}, 0
    for j = 1, #all, 2 do
      local b1, b2, b3, b4, b5, b6 = byte(all[j + 1], 1, 6)
      if b6 and ((((b1 * 256 + b2) * 256 + b3) * 256 + b4) * 256 + b5) * 256 + b6 <= cut then
        n = n + 1
        del[n] = all[j]
        if n == 1000 then
          call('HDEL', keys[i], unpack(del, 1, n))
          swept = swept + n
          n = 0
        end
      end
    end
    if n > 0 then
      call('HDEL', keys[i], unpack(del, 1, n))
      swept = swept + n
    end
  end
  call('HSET', keys[1], 'sw', argv[8])
end
call('HSET', keys[1], 'next', argv[3], 'prev', argv[2], 'pe', argv[1], 'l2', argv[3])
return {0, st[1], argv[3], swept}
