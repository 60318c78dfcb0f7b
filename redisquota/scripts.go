package redisquota

import "github.com/redis/go-redis/v9"

// The scripts read the time from Redis (TIME), so that processes whose
// clocks disagree agree on it, and take and give durations relative to it,
// in microseconds. Every number they write is an integer string
// (string.format('%d')), so that Cancel compares tokens exactly; Lua's
// numbers are doubles, exact for integers below 2^53. A key outlives the
// last time it matters by ttlMargin, 1000 ms.

// reserveScript takes a tenant's next admission (see Store.Reserve).
//
// KEYS: tat, pause, log, peers, learned (see keys).
// ARGV: interval, tau, maxWait, logLimit, logWindow (see reserveArgs), the
// process ID, PeerTTL in microseconds, EstimateTTL in milliseconds. An
// interval of 0 asks for the pace of the latest admission taken (kept with
// tat).
// Returns {ok (0 or 1; 2 when asked for a pace and none is in force), wait,
// peers, token, interval}, and with 2 the estimate kept, {limit, window,
// low, high} (zeros for none), whose key's TTL it renews.
var reserveScript = redis.NewScript(`
local margin = 1000
local function int(x) return string.format('%d', x) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local iv, tau, maxwait = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local lim, win, ptl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[7])

redis.call('ZADD', KEYS[4], int(now), ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. int(now - ptl))
redis.call('PEXPIRE', KEYS[4], int(math.floor(ptl / 1000) + margin))
local peers = redis.call('ZCARD', KEYS[4])

local h = redis.call('HMGET', KEYS[1], 't', 'i', 'u', 'l', 'w')
if iv == 0 then
  -- A process that knows no pace yet takes a turn at the one in force.
  if not h[2] then
    local e = redis.call('HMGET', KEYS[5], 'l', 'w', 'lo', 'hi')
    if e[1] then redis.call('PEXPIRE', KEYS[5], ARGV[8]) end
    return {2, 0, peers, 0, 0, tonumber(e[1]) or 0, tonumber(e[2]) or 0, tonumber(e[3]) or 0, tonumber(e[4]) or 0}
  end
  iv, tau = tonumber(h[2]), tonumber(h[3] or 0)
  lim, win = tonumber(h[4] or 0), tonumber(h[5] or 0)
end
local tat = h[1] and tonumber(h[1]) or now
local due = math.max(now, tat - tau)
local v = redis.call('GET', KEYS[2])
if v then due = math.max(due, tonumber(v)) end
local logged = lim > 0 and win > 0
if logged then
  v = redis.call('LINDEX', KEYS[3], 0)
  if v then due = math.max(due, tonumber(v)) end
  if redis.call('LLEN', KEYS[3]) >= lim then
    due = math.max(due, tonumber(redis.call('LINDEX', KEYS[3], int(lim - 1))) + win)
  end
end

local wait = due - now
if wait > maxwait then return {0, wait, peers, 0, iv} end
local ntat = math.max(tat, due) + iv
redis.call('HSET', KEYS[1], 't', int(ntat), 'i', int(iv), 'u', int(tau), 'l', int(lim), 'w', int(win), 'd', logged and int(due) or '')
redis.call('PEXPIRE', KEYS[1], int(math.floor((ntat - now) / 1000) + margin))
if logged then
  redis.call('LPUSH', KEYS[3], int(due))
  redis.call('LTRIM', KEYS[3], 0, int(lim - 1))
  redis.call('PEXPIRE', KEYS[3], int(math.floor((due + win - now) / 1000) + margin))
end
return {1, wait, peers, ntat, iv}
`)

// cancelScript gives back a tenant's latest admission (see Store.Cancel).
//
// KEYS: tat, log. ARGV: the reservation's token.
// Returns 1 if it gave it back, 0 if a later one was taken or it was
// given back already.
var cancelScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 't', 'i', 'd')
if v[1] ~= ARGV[1] or not v[2] then return 0 end
redis.call('HSET', KEYS[1], 't', string.format('%d', tonumber(v[1]) - tonumber(v[2])))
redis.call('HDEL', KEYS[1], 'i', 'd')
if v[3] and v[3] ~= '' then redis.call('LREM', KEYS[2], 1, v[3]) end
return 1
`)

// pauseScript holds a tenant's pacer (see Store.Pause).
//
// KEYS: pause. ARGV: how long from now, in microseconds (positive).
// Returns 1 if it moved the pause's end later, 0 if it ended later already.
var pauseScript = redis.NewScript(`
local margin = 1000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local u = now + tonumber(ARGV[1])
local v = redis.call('GET', KEYS[1])
if v and tonumber(v) >= u then return 0 end
redis.call('SET', KEYS[1], string.format('%d', u), 'PX', string.format('%d', math.floor((u - now) / 1000) + margin))
return 1
`)

// publishScript keeps what a learner settled on (see Store.Publish).
//
// KEYS: learned. ARGV: limit, window, low, high (window and bounds in
// microseconds), EstimateTTL in milliseconds.
var publishScript = redis.NewScript(`
redis.call('HSET', KEYS[1], 'l', ARGV[1], 'w', ARGV[2], 'lo', ARGV[3], 'hi', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`)
