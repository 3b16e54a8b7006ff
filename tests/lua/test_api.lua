-- The sieve module from Lua: spaces, genotypes, rngs, results, C components,
-- studies, serialisation.  Run by meson through `sieve lua`.
local T = require("sieve.testing")
local root = assert(arg[1], "usage: sieve lua test_api.lua SOURCE_ROOT")
local table_csv = root .. "/data/nb201/nb201.csv"

local nb = sieve.space("nb201")

T.test("rng is seeded and reproducible", function()
  local a, b = sieve.rng(7), sieve.rng(7)
  for _ = 1, 100 do T.eq(a:uniform(), b:uniform()) end
  for _ = 1, 1000 do
    local k = a:int(3, 5)
    T.truthy(k >= 3 and k <= 5 and math.type(k) == "integer", "int in range")
    local u = a:below(4)
    T.truthy(u >= 0 and u < 4, "below in range")
  end
  local c = a:copy()
  T.eq(a:normal(), c:normal(), "copy continues the same stream")
  T.truthy(a ~= a:split(), "a split stream differs")
  local list = {1, 2, 3, 4, 5}
  a:shuffle(list)
  local sum = 0
  for _, v in ipairs(list) do sum = sum + v end
  T.eq(sum, 15, "shuffle keeps the elements")
  -- ranges wider than 2^63 (hi - lo overflowed): both halves are drawn
  local neg, pos = 0, 0
  for _ = 1, 200 do
    local k = a:int(math.mininteger, math.maxinteger)
    if k < 0 then neg = neg + 1 else pos = pos + 1 end
    local m = a:int(-2, math.maxinteger)
    T.truthy(m >= -2, "int in a wide range")
  end
  T.truthy(neg > 50 and pos > 50, "the full 64-bit range: " .. neg .. " negative, " .. pos .. " not")
  T.eq(a:int(math.maxinteger, math.maxinteger), math.maxinteger)
  T.eq(a:int(math.mininteger, math.mininteger), math.mininteger)
end)

T.test("rng calls refuse arguments they would ignore or misuse, at the caller's line", function()
  local rng = sieve.rng(1)
  local function refused(pattern, f)
    local ok, err = pcall(f)
    T.eq(ok, false, pattern)
    T.truthy(err:find("test_api%.lua:%d+: bad argument") and err:find(pattern, 1, true), err)
  end
  refused("rng:uniform takes no argument ([0, 1)) or two (low, high)", function() local _ = rng:uniform(5) end)
  refused("rng:uniform takes no argument ([0, 1)) or two (low, high)", function() local _ = rng:uniform("a") end)
  refused("number expected, got string", function() local _ = rng:uniform(0, "a") end)
  refused("#2 to 'uniform' (expected low <= high)", function() local _ = rng:uniform(3, 2) end)
  refused("expected a finite number", function() local _ = rng:uniform(0, math.huge) end)
  refused("#2 to 'normal' (expected sd >= 0)", function() local _ = rng:normal(0, -1) end)
  refused("expected a finite number", function() local _ = rng:normal(0 / 0, 1) end)
  T.eq(rng:uniform(2, 2), 2)
  T.eq(rng:normal(1, 0), 1)
  local a, b = sieve.rng(3), sieve.rng(3)
  T.eq(a:uniform(-1, 3), -1 + 4 * b:uniform(), "a + (b - a) * u")
  -- Finite bounds whose difference overflows: a finite draw in [low, high).
  local big = 1.7976931348623157e308
  for _, bounds in ipairs({{-1e308, 1e308}, {-big, big}}) do
    local lo, hi = bounds[1], bounds[2]
    local r, u = sieve.rng(1), sieve.rng(1)
    for _ = 1, 200 do
      local x, v = r:uniform(lo, hi), u:uniform()
      T.truthy(x >= lo and x < hi, tostring(x))
      T.eq(x, lo * (1 - v) + hi * v, "a (1 - u) + b u")
    end
  end
end)

T.test("sieve.evaluator without an options table validates as an empty one", function()
  T.raises("missing required option 'function' for evaluator 'function'", sieve.evaluator, "function", nb)
  T.raises("missing required option 'function' for evaluator 'function'", sieve.evaluator, "function", nb, nil)
end)

T.test("spaces describe their decisions", function()
  T.eq(#nb, 6)
  T.eq(nb:name(), "nb201")
  local d = nb:decisions()
  T.eq(d[1].name, "edge_1_0")
  T.eq(d[1].kind, "categorical")
  T.eq(#d[1].choices, 5)
  T.eq(d[1].choices[1], "none")
  T.eq(nb:decision("edge_3_2").index, 6)
  T.raises("did you mean 'edge_1_0'", nb.decision, nb, "edge_1_O")
end)

T.test("genotypes: sample, format, parse, get, set, copy, values", function()
  local rng = sieve.rng(1)
  for _ = 1, 200 do
    local g = nb:sample(rng)
    local back = nb:parse(g:format())
    T.eq(back, g, "parse(format(g))")
    T.eq(tostring(g), nb:format(g))
  end
  local g = nb:parse("|none~0|+|skip_connect~0|none~1|+|none~0|none~1|nor_conv_3x3~2|")
  T.eq(g:get("edge_2_0"), "skip_connect")
  T.eq(g:raw("edge_2_0"), 1.0, "raw value is the choice index")
  local h = g:copy():set("edge_2_0", "avg_pool_3x3")
  T.eq(g:get("edge_2_0"), "skip_connect", "copy is independent")
  T.eq(h:get(2), "avg_pool_3x3")
  T.raises("did you mean 'avg_pool_3x3'", h.set, h, "edge_2_0", "avg_pool_3x4")
  T.eq(nb:genotype(h:values()), h, "genotype from a table of values")
  T.eq(nb:genotype(h:format()), h, "genotype from its text")
  T.raises("bad genotype", nb.parse, nb, "|nonsense|")
  -- A text holding a NUL byte: C read it up to the NUL and took "VALID\0junk" for VALID (found by
  -- fuzzing); refused, as is an option string holding one.
  local text = g:format()
  T.raises("a NUL byte at character " .. (#text + 1), nb.parse, nb, text .. "\0junk")
  T.raises("a NUL byte at character " .. (#text + 1), nb.genotype, nb, text .. "\0junk")
  T.raises("a string holding a NUL byte (at character 7)", sieve.space, "hpo", {file = "x.yaml\0junk"})
  local ok, why = nb:validate(g)
  T.truthy(ok, why)
end)

T.test("hpo space with conditions and numbers", function()
  local space = sieve.space("hpo", {file = root .. "/search_spaces/mlp.yaml"})
  local rng = sieve.rng(3)
  for _ = 1, 100 do
    local g = space:sample(rng)
    T.eq(space:parse(g:format()), g)
    for _, d in ipairs(space:decisions()) do
      local v = g:get(d.name)
      if d.kind == "int" and v ~= nil then T.eq(math.type(v), "integer", d.name) end
      if d.parent ~= nil then T.eq(v ~= nil, g:is_active(d.name), d.name .. " active") end
    end
  end
  T.raises("unknown option 'fle' for space 'hpo' (did you mean 'file'?)", function() sieve.space("hpo", {fle = "x"}) end)
end)

T.test("option errors name the script line", function()
  -- The location is the line of the call in this file.
  local err = T.raises("test_api.lua:", function() sieve.space("hpo", {file = {"a", "b"}}) end)
  T.truthy(err:find("option 'file'", 1, true), err)
  T.raises("no space plugin named 'nb20'", sieve.space, "nb20")
  -- Lua tells the line of a call, never a column: none is made up, even
  -- when the call spans lines.
  local calls = {
    function() return sieve.space("nb201", {
      C = 3,
      N = "bad"}) end,
    function() return sieve.optimizer("random", nb, {
      unique = 3}) end,
    function() return sieve.evaluator("function", nb, {
      ["function"] = "nope"}) end,
  }
  for _, call in ipairs(calls) do
    local e = T.raises("expects", call)
    T.truthy(e:find("test_api%.lua:%d+: option '%a+' expects"), e)
    T.truthy(not e:find("test_api%.lua:%d+:%d+:"), e)
  end
end)

T.test("tabular evaluator and results", function()
  local ev = sieve.evaluator("tabular", nb, {table = table_csv, metrics = {"cifar10_valid_acc", "params_m"}})
  local r = ev:evaluate("|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|")
  T.eq(r.status, "ok")
  T.truthy(r.ok)
  T.near(r.metrics.cifar10_valid_acc, 91.5533, 1e-3)
  T.near(r:metric("params_m"), 1.28851, 1e-5)
  T.eq(ev:fidelity(), nil)
  local made = sieve.result{status = "failed", reason = "diverged", metrics = {loss = 1 / 0}}
  T.eq(made.status, "failed")
  T.eq(made.reason, "diverged")
  T.raises("status must be one of", sieve.result, {status = "great"})
end)

T.test("a C optimizer by hand: ask, tell, save, load", function()
  local opt = sieve.optimizer("random", nb, {unique = true}, {seed = 4, objective = "cifar10_valid_acc"})
  local first = opt:ask(3)
  T.eq(#first, 3)
  local saved = opt:save()
  local next1 = opt:ask(2)
  local other = sieve.optimizer("random", nb, {unique = true}, {seed = 99, objective = "cifar10_valid_acc"})
  other:load(saved)
  local next2 = other:ask(2)
  T.eq(next1[1], next2[1], "same proposals after load")
  T.eq(next1[2], next2[2])
  opt:tell(first[1], sieve.result{metrics = {cifar10_valid_acc = 50}})
end)

T.test("a live study stores trials and resumes", function()
  local ev = sieve.evaluator("tabular", nb, {table = table_csv, metrics = {"cifar10_valid_acc"}})
  local study = sieve.study{space = nb, optimizer = {plugin = "random", unique = true}, evaluator = ev,
                            objective = {metric = "cifar10_valid_acc", direction = "maximize"}, seed = 5}
  T.eq(study:run(30), 30)
  local t = study:ask()
  study:tell(t, ev:evaluate(t.genotype))
  T.eq(study:count(), 31)
  T.eq(study:count("ok"), 31)
  local best, n = study:best(), 0
  for trial in study:trials() do
    n = n + 1
    T.truthy(trial.objective <= best.objective, "best is the largest")
  end
  T.eq(n, 31)
  T.raises("already told", study.tell, study, t, ev:evaluate(t.genotype))
  study:close()
  T.raises("closed", study.count, study)
end)

T.test("serialize and deserialize keep types", function()
  local rng = sieve.rng(9)
  local g = nb:sample(rng)
  local v = {int = 3, float = 3.0, s = "é", list = {1, "two", {3}}, mixed = {[1] = true, [5] = false, x = 0.5},
             g = g, rng = rng, bytes = "\0\1\255"}
  local back = sieve.deserialize(sieve.serialize(v), nb)
  T.eq(math.type(back.int), "integer")
  T.eq(math.type(back.float), "float")
  T.eq(back.s, "é")
  T.eq(back.list[3][1], 3)
  T.eq(back.mixed[5], false)
  T.eq(back.mixed.x, 0.5)
  T.eq(back.g, g)
  T.eq(back.rng, rng)
  T.eq(back.bytes, v.bytes)
  T.eq(sieve.serialize({b = 1, a = 2}), sieve.serialize({a = 2, b = 1}), "key order does not matter")
  T.raises("not serialisable", sieve.serialize, {f = print})
  local cycle = {}
  cycle.self = cycle
  T.raises("nested deeper", sieve.serialize, cycle)
  -- Text that is no saved state: where it breaks, in characters from 1.
  T.raises("cannot read the saved state: at the end of the text: expected value", sieve.deserialize, "<<<", nb)
  T.raises("cannot read the saved state: characters 1-7 ('garbage'): unknown keyword", sieve.deserialize, "garbage(")
  T.raises("cannot read the saved state: character 5 (']')", sieve.deserialize, "[1, ]")
  local opt = sieve.optimizer("random", nb, {}, {seed = 1, objective = "acc"})
  T.raises("cannot read the saved state: characters 1-7 ('garbage'): unknown keyword", opt.load, opt, "garbage(")
end)

T.test("a compose space's genotype: both parts, which decisions are the network", function()
  local space = sieve.space("compose", {parts = {{plugin = "nb201", C = 4, N = 1},
    {plugin = "hpo", parameters = {lr = {type = "float", low = 0.01, high = 0.5, log = true},
                                   batch_size = {"64", "128"}}}}})
  local d = space:decisions()
  T.eq(#d, 8)
  T.eq(d[1].name, "edge_1_0")
  T.eq(d[1].architecture, true)
  T.eq(d[7].architecture, false)
  T.eq(d[8].architecture, false)
  -- a Lua table has no key order: the hpo part's decisions come in its own
  local recipe = {[d[7].name] = true, [d[8].name] = true}
  T.eq(recipe.lr and recipe.batch_size, true)
  local g = space:sample(sieve.rng(5))
  local text = space:format(g)
  T.eq(space:format(space:parse(text)), text)
  T.eq(text:find("|;", 1, true) ~= nil, true, "the parts' texts joined by ';'")
  T.raises("part #2 (hpo), from character 49", space.parse, space, "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|;lr=x")
end)

T.done()
