
local st = redis.call('HMGET', KEYS[1], 'epoch', 'next', 'owner', 'prev', 'pe')
if ARGV[6] ~= '' and st[3] ~= ARGV[6] then
  if st[3] then
    return {3, st[3], ''}
  end
  return {1, '', ''}
end
if not st[1] or st[1] ~= ARGV[1] then
  return {1, st[1] or '', st[2] or ''}
end
local nxt = st[2] or '-1'
if nxt ~= ARGV[2] then
  if nxt == ARGV[3] and st[4] == ARGV[2] and st[5] == ARGV[1] then
    return {4, st[1], nxt}
  end
  return {2, st[1], nxt}
end
local call, keys, argv, byte = redis.call, KEYS, ARGV, string.byte
local ttl, ops = argv[4], argv[5]
local v = 7
if ttl ~= '0' then
  -- s: SET PX; k: keep the expiry (KEEPTTL) if the key exists, else PX;
  -- d: DEL.
  for i = 1, #ops do
    local op = byte(ops, i)
    if op == 115 then
      call('SET', keys[i+1], argv[v], 'PX', ttl)
      v = v + 1
    elseif op == 107 then
      if not call('SET', keys[i+1], argv[v], 'XX', 'KEEPTTL') then
        call('SET', keys[i+1], argv[v], 'PX', ttl)
      end
      v = v + 1
    else
      call('DEL', keys[i+1])
    end
  end
else
  -- No expiry: one MSET per 256 values, DEL for deletes, in order.
  local a, n = {}, 0
  for i = 1, #ops do
    if byte(ops, i) ~= 100 then
      a[n+1] = keys[i+1]
      a[n+2] = argv[v]
      n = n + 2
      v = v + 1
      if n == 512 then
        call('MSET', unpack(a, 1, n))
        n = 0
      end
    else
      if n > 0 then
        call('MSET', unpack(a, 1, n))
        n = 0
      end
      call('DEL', keys[i+1])
    end
  end
  if n > 0 then
    call('MSET', unpack(a, 1, n))
  end
end
redis.call('HSET', KEYS[1], 'next', ARGV[3], 'prev', ARGV[2], 'pe', ARGV[1])
return {0, st[1], ARGV[3]}
