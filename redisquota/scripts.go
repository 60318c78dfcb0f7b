package redisquota

import "github.com/redis/go-redis/v9"

// The scripts read the time from Redis (TIME), so that processes whose
// clocks disagree agree on it, and take and give durations relative to it,
// in microseconds. Every number they write is an integer string
// (string.format('%d')), so that Cancel compares tokens exactly; Lua's
// numbers are doubles, exact for integers below 2^53. A key outlives the
// last time it matters by ttlMargin, 1000 ms.

// scripts are every script the Store runs, for Warm to load.
var scripts = []*redis.Script{reserveScript, cancelScript, pauseScript, publishScript}

// reserveScript takes a tenant's next admission (see Store.Reserve and
// Store.ReserveLearned).
//
// KEYS: tat, pause, log, peers, learned, lead, relay (see keys).
//
// ARGV, for both:
//   - 1-5: interval, tau, maxWait, logLimit, logWindow (see reserveArgs);
//     an interval of 0 asks for the pace of the latest admission taken
//     (kept with tat);
//   - 6-8: the process ID, PeerTTL (µs), EstimateTTL (ms);
//   - 9: 1 for ReserveLearned, else 0.
//
// and for ReserveLearned:
//   - 10-12: the hold asked for, the lease, a held follower's poll (µs);
//     a leader's lease lasts the lease, four intervals of its pace, or its
//     hold, whichever is longest;
//   - 13: the caller's relayed answers, "sent age,answer age,flag;" each
//     (ages in µs; flag 0 success, 1 throttled, 2 transient); a throttle
//     holds the followers for four polls, or until the leader's first
//     call after it has heard it;
//   - 14: 1 if the caller knows nothing yet: the estimate kept comes with
//     the answer;
//   - 15: how long from now a leader's turn may not be due (µs: its own
//     limiter's turns);
//   - 16: how far ahead a turn at a learned pace may be taken (µs; 0 for
//     any).
//
// Returns {ok, wait, peers, token, interval}: ok is 1 for a turn taken, 0
// for one not due within maxWait, 2 for none in force (a zero interval,
// and no pace kept), 3 for a follower held. ReserveLearned's answer goes
// on with the estimate kept, {limit, window, low, high} (zeros unless the
// caller knows nothing yet or no pace is in force; reading it renews its
// TTL), then leader (0 or 1), the hold's epoch (one more each time a hold
// begins), 1 if the turn is at a pace said to another process, and, for a
// leader, the followers' answers relayed since its last call, as "sent
// age,answer age,flag" strings.
var reserveScript = redis.NewScript(`
local margin = 1000
local function int(x) return string.format('%d', x) end
local function ms(us) return int(math.floor(us / 1000) + margin) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local iv, tau, maxwait = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local lim, win, ptl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[7])
local learn = ARGV[9] == '1'

redis.call('ZADD', KEYS[4], int(now), ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', '(' .. int(now - ptl))
redis.call('PEXPIRE', KEYS[4], ms(ptl))
local peers = redis.call('ZCARD', KEYS[4])

local h = redis.call('HMGET', KEYS[1], 't', 'i', 'u', 'l', 'w', 's')
local function estimate()
  local e = redis.call('HMGET', KEYS[5], 'l', 'w', 'lo', 'hi')
  if e[1] then redis.call('PEXPIRE', KEYS[5], ARGV[8]) end
  return tonumber(e[1]) or 0, tonumber(e[2]) or 0, tonumber(e[3]) or 0, tonumber(e[4]) or 0
end

local leader, relayed, epoch, said = 0, {}, 0, 0
if learn then
  -- The tenant's pace is learned by one process, its leader, for all.
  local lease, poll = tonumber(ARGV[11]), tonumber(ARGV[12])
  -- A throttle holds the followers until the leader has heard it.
  local thr = false
  if ARGV[13] ~= '' then
    for sa, aa, f in string.gmatch(ARGV[13], '(%d+),(%d+),(%d);') do
      redis.call('RPUSH', KEYS[7], int(now - tonumber(sa)) .. ',' .. int(now - tonumber(aa)) .. ',' .. f)
      thr = thr or f == '1'
    end
    redis.call('LTRIM', KEYS[7], -1024, -1)
    redis.call('PEXPIRE', KEYS[7], ms(lease))
  end
  if h[6] == '1' and h[2] then
    iv, said = 0, 1 -- a pace said to another process is in force: a turn at it
  else
    -- Turns at a learned pace go at most bookAhead ahead.
    if tonumber(ARGV[16]) > 0 and maxwait >= 0 then maxwait = math.min(maxwait, tonumber(ARGV[16])) end
    local ld = redis.call('HMGET', KEYS[6], 'id', 'le', 'hd', 'ep')
    epoch = tonumber(ld[4] or 0) or 0
    local was = tonumber(ld[3] or 0) or 0
    if ld[1] == ARGV[6] or not ld[2] or tonumber(ld[2]) < now then
      leader = 1
      local hd = 0
      if tonumber(ARGV[10]) > 0 then hd = now + tonumber(ARGV[10]) end
      for _, v in ipairs(redis.call('LRANGE', KEYS[7], 0, -1)) do
        local s, a, f = string.match(v, '(%d+),(%d+),(%d)')
        if s then relayed[#relayed + 1] = int(now - tonumber(s)) .. ',' .. int(now - tonumber(a)) .. ',' .. f end
        thr = thr or f == '1'
      end
      redis.call('DEL', KEYS[7])
      -- A throttle the leader has yet to hear keeps the followers held.
      if thr then hd = math.max(hd, now + 4 * poll) end
      if hd > now and was <= now then epoch = epoch + 1 end -- a hold begins: the turns handed out are void
      local le = math.max(now + lease, now + 4 * iv, hd)
      redis.call('HSET', KEYS[6], 'id', ARGV[6], 'le', int(le), 'hd', int(hd), 'ep', int(epoch))
      redis.call('PEXPIRE', KEYS[6], ms(le - now))
      if iv == 0 then
        -- A leader that has no pace yet takes no turn.
        local l, w, lo, hi = estimate()
        local r = {2, 0, peers, 0, 0, l, w, lo, hi, 1, epoch, 0}
        for _, v in ipairs(relayed) do r[#r + 1] = v end
        return r
      end
    else
      local hd = was
      if thr and hd < now + 4 * poll then
        if hd <= now then epoch = epoch + 1 end
        hd = now + 4 * poll
        redis.call('HSET', KEYS[6], 'hd', int(hd), 'ep', int(epoch))
      end
      if hd > now then return {3, math.min(hd - now, poll), peers, 0, 0, 0, 0, 0, 0, 0, epoch, 0} end
      iv = 0 -- a follower: a turn at the leader's pace
    end
  end
end
local fresh = learn and ARGV[14] == '1'

local own = iv ~= 0
if iv == 0 then
  -- A process that knows no pace yet takes a turn at the one in force.
  if not h[2] then
    if not learn then return {2, 0, peers, 0, 0} end
    local l, w, lo, hi = estimate()
    return {2, 0, peers, 0, 0, l, w, lo, hi, leader, epoch, said}
  end
  iv, tau = tonumber(h[2]), tonumber(h[3] or 0)
  lim, win = tonumber(h[4] or 0), tonumber(h[5] or 0)
end
local tat = h[1] and tonumber(h[1]) or now
local due = math.max(now, tat - tau)
if leader == 1 then due = math.max(due, now + (tonumber(ARGV[15]) or 0)) end
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

local function reply(r)
  if not learn then return r end
  local l, w, lo, hi = 0, 0, 0, 0
  if fresh then l, w, lo, hi = estimate() end
  for _, x in ipairs({l, w, lo, hi, leader, epoch, said}) do r[#r + 1] = x end
  for _, x in ipairs(relayed) do r[#r + 1] = x end
  return r
end
local wait = due - now
if wait > maxwait then return reply({0, wait, peers, 0, iv}) end
local ntat = math.max(tat, due) + iv
local src = h[6] or '1'
if own then src = learn and '0' or '1' end
redis.call('HSET', KEYS[1], 't', int(ntat), 'i', int(iv), 'u', int(tau), 'l', int(lim), 'w', int(win), 'd', logged and int(due) or '', 's', src)
redis.call('PEXPIRE', KEYS[1], ms(ntat - now))
if logged then
  redis.call('LPUSH', KEYS[3], int(due))
  redis.call('LTRIM', KEYS[3], 0, int(lim - 1))
  redis.call('PEXPIRE', KEYS[3], ms(due + win - now))
end
return reply({1, wait, peers, ntat, iv})
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
