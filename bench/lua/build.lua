-- Building networks in Lua against C: the NAS-Bench-201 network at the
-- benchmark's scale (C=16, N=5), built by the C `nb201` plugin and by the Lua
-- space search_spaces/nb201.lua (the same graph, node for node), each
-- through space:build from this script, so both sides pay the same
-- binding costs.
--
--   sieve lua bench/lua/build.lua SOURCE_ROOT [NETWORKS] [ROUNDS]
local root = assert(arg[1], "usage: sieve lua bench/lua/build.lua SOURCE_ROOT [NETWORKS] [ROUNDS]")
local n = math.tointeger(tonumber(arg[2] or "2000"))
local rounds = math.tointeger(tonumber(arg[3] or "3"))
local c = sieve.space("nb201")
local l = sieve.space("lua", {script = root .. "/search_spaces/nb201.lua"})
local rng = sieve.rng(1)
local gc, gl = {}, {}
for i = 1, n do
  local text = c:sample(rng):format()
  gc[i], gl[i] = c:parse(text), l:parse(text)
end
local nodes = #c:build(gc[1])
for round = 1, rounds do
  collectgarbage()
  local t0 = os.clock()
  for i = 1, n do c:build(gc[i]) end
  local t1 = os.clock()
  for i = 1, n do l:build(gl[i]) end
  local t2 = os.clock()
  print(string.format("round %d: %d networks of ~%d nodes: C plugin %.1f us each, Lua space %.1f us each (x%.1f)",
                      round, n, nodes, (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6, (t2 - t1) / (t1 - t0)))
end
