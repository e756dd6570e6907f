local st = redis.call('HMGET', KEYS[1], 'epoch', 'next')
if st[1] ~= ARGV[1] then
  return {1, st[1] or '', 0}
end
local call, keys, argv = redis.call, KEYS, ARGV
local n, now, ttl = tonumber(argv[2]), tonumber(argv[3]), tonumber(argv[4])
local function stamp(ms)
  local b = {}
  for i = 6, 1, -1 do
    b[i] = ms % 256
    ms = math.floor(ms / 256)
  end
  return string.char(b[1], b[2], b[3], b[4], b[5], b[6])
end
local moved = 0
for i = 1, n do
  local k = keys[i + 1]
  local v = call('GET', k)
  if v then
    local ms = now
    if ttl > 0 then
      local pt = call('PTTL', k)
      if pt > 0 then
        ms = now + pt - ttl
      end
    end
    call('HSET', keys[n + 1 + tonumber(argv[4 + 2 * i])], argv[3 + 2 * i], stamp(ms) .. v)
    call('DEL', k)
    moved = moved + 1
  end
end
if argv[5 + 2 * n] == '1' then
  call('HSET', keys[1], 'l2', st[2] or '')
end
return {0, st[1], moved}
