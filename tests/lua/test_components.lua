-- Lua-registered spaces, evaluators and optimizers: through sieve.study, by
-- hand, and named in a YAML experiment run with sieve.run.  Needs --allow io,os
-- (to read the fixture and remove its stores).  Args: SOURCE_ROOT SCRATCH_DIR
local T = require("sieve.testing")
local root, scratch = assert(arg[1]), assert(arg[2])
local fixtures = root .. "/tests/lua/fixtures"
-- Register them in this script's host, from the same file the YAML loads.
local chunk = assert(load(assert(io.open(fixtures .. "/components.lua")):read("a"), "@" .. fixtures .. "/components.lua"))
chunk()

local function scratch_store(name)
  local path = string.format("%s/%s-%d.sieve", scratch, name, os.time())
  for _, s in ipairs({"", "-wal", "-shm", "-lock"}) do os.remove(path .. s) end
  return path
end

T.test("a Lua space: decisions, conditions, its own text form", function()
  local space = sieve.space("ring", {width = 5})
  T.eq(#space, 3)
  local rng = sieve.rng(2)
  local seen_flat = false
  for _ = 1, 200 do
    local g = space:sample(rng)
    local text = g:format()
    T.truthy(text:match("^%a+/[%d%-]+/"), text)
    T.eq(space:parse(text), g, "parse(format(g)) for " .. text)
    if g:get("shape") == "flat" then
      seen_flat = true
      T.eq(g:get("radius"), nil, "radius is inactive for flat")
    end
  end
  T.truthy(seen_flat)
  T.raises("expected SHAPE/RADIUS/X", space.parse, space, "nonsense")
  T.raises("option 'width' expects", function() sieve.space("ring", {width = 100}) end)
end)

T.test("g:set keeps a genotype valid: an inactive decision is refused, a parent's change clears or opens its children", function()
  local space = sieve.space("ring")
  local flat = space:genotype({shape = "flat", x = 0})
  local ok, err = pcall(function() flat:set("radius", 3) end)
  T.eq(ok, false)
  T.truthy(err:find("^.*test_components%.lua:%d+: g:set: decision 'radius' is inactive in this genotype " ..
                    "%(it needs shape in {ring}, and shape is 'flat'%)"), err)
  T.eq(flat:get("radius"), nil, "unchanged")
  T.eq(space:validate(flat), true)
  -- Clearing it asks for what it holds: allowed, a no-op (a uniform crossover
  -- copies each decision of one parent in order, nil where it is inactive).
  T.eq(flat:set("radius", nil), flat)
  T.eq(flat:get("radius"), nil)
  T.eq(space:validate(flat), true)
  local a, b = space:genotype({shape = "flat", x = 1}), space:genotype({shape = "ring", radius = 3, x = -1})
  local child = b:copy()
  for _, d in ipairs(space:decisions()) do
    local src = (d.name == "x") and b or a
    child:set(d.index, src:get(d.index))
  end
  T.eq(child, space:genotype({shape = "flat", x = -1}))
  -- A parent set so that its child is active: the child has no value until set.
  flat:set("shape", "ring")
  T.eq(flat:get("radius"), nil)
  local valid, why = space:validate(flat)
  T.eq(valid, false)
  T.truthy(why:find("'radius'", 1, true), why)
  T.eq(space:validate(flat:set("radius", 2)), true)
  T.eq(space:parse(flat:format()), flat)
  -- ... and set back so that it is inactive: its value is cleared.
  T.eq(flat:set("shape", "flat"):get("radius"), nil)
  T.eq(space:validate(flat), true)
  T.eq(space:parse(flat:format()), flat)
  -- An optimizer that returns one with an active decision unset is told so, with where its ask is.
  sieve.register_optimizer{name = "unset-child",
    ask = function(self, n) return {self.space:genotype({shape = "flat", x = 0}):set("shape", "ring")} end}
  local o = sieve.optimizer("unset-child", space, {}, {seed = 1, objective = "value"})
  local refused = T.raises("item 1: 'radius' is active but has no value", o.ask, o, 1)
  T.truthy(refused:find("ask() (", 1, true) and refused:find("test_components.lua:", 1, true), refused)
  -- More than asked for, and a yield outside a coroutine: said at the script's line too (a new-user
  -- review found both without one).
  sieve.register_optimizer{name = "too-many",
    ask = function(self, n) local out = {} for i = 1, n + 2 do out[i] = self.space:sample(self.rng) end return out end}
  local many = sieve.optimizer("too-many", space, {}, {seed = 1, objective = "value"})
  refused = T.raises("returned 3 genotypes for ask(1): at most n", many.ask, many, 1)
  T.truthy(refused:find("ask() (", 1, true) and refused:find("test_components.lua:", 1, true), refused)
  sieve.register_optimizer{name = "yields", ask = function(self, n) coroutine.yield(1) end}
  local yields = sieve.optimizer("yields", space, {}, {seed = 1, objective = "value"})
  refused = T.raises("attempt to yield from outside a coroutine", yields.ask, yields, 1)
  T.truthy(refused:find("test_components.lua:%d+: attempt to yield"), refused)
  -- error(msg, 0) keeps the message as written.
  sieve.register_optimizer{name = "plain", ask = function(self, n) error("plain words", 0) end}
  local plain = sieve.optimizer("plain", space, {}, {seed = 1, objective = "value"})
  refused = T.raises("plain words", plain.ask, plain, 1)
  T.truthy(not refused:find("test_components.lua:%d+: plain"), refused)
end)

T.test("a Lua evaluator and optimizer in a study are deterministic", function()
  local function run(seed)
    local space = sieve.space("ring")
    local ev = sieve.evaluator("sphere", space, {offset = 1})
    local study = sieve.study{space = space, optimizer = "lua-random", evaluator = ev, seed = seed,
                              objective = {metric = "value", direction = "minimize"}}
    study:run(40)
    local texts = {}
    for t in study:trials() do texts[#texts + 1] = t.text .. ":" .. t.status end
    T.truthy(study:best().metrics.value >= 1, "offset applied")
    return table.concat(texts, " ")
  end
  local a, b, c = run(1), run(1), run(2)
  T.eq(a, b, "same seed, same trials")
  T.truthy(a ~= c, "another seed, other trials")
  T.truthy(a:find(":failed", 1, true), "the evaluator's failed trials are stored as failed")
end)

T.test("a Lua optimizer by hand: save and load carry rng and state", function()
  local space = sieve.space("ring")
  local o1 = sieve.optimizer("lua-random", space, {}, {seed = 8, objective = "value"})
  local first = o1:ask(3)
  o1:tell(first[1], sieve.result{metrics = {value = 2}})
  local saved = o1:save()
  T.truthy(saved:find("'told': <int64 1>", 1, true), saved)
  local o2 = sieve.optimizer("lua-random", space, {}, {seed = 1, objective = "value"})
  o2:load(saved)
  T.eq(o1:ask(1)[1], o2:ask(1)[1], "same next proposal")
end)

T.test("YAML names Lua components loaded by lua.load", function()
  local store = scratch_store("registered")
  local done = sieve.run(fixtures .. "/registered.yaml", {store = store})
  T.eq(done:count(), 25)
  local again = sieve.run(fixtures .. "/registered.yaml", {store = scratch_store("registered2")})
  local a, b = {}, {}
  for t in done:trials() do a[#a + 1] = t.text end
  for t in again:trials() do b[#b + 1] = t.text end
  T.eq(table.concat(a, " "), table.concat(b, " "), "the same experiment twice in one process")
  -- The finished study has the experiment's space: genotypes, as sieve.study's trials have.
  for t in done:trials() do
    T.eq(type(t.genotype), "userdata", "trial " .. t.number .. " has a genotype")
    T.eq(t.genotype:format(), t.text)
  end
  local best = done:best()
  T.eq(best.genotype:format(), best.text)
  T.eq(done:best().genotype, best.genotype, "genotypes compare by value")
  local held = again:best().genotype
  again:close()
  T.raises("space is closed", held.format, held)
  T.raises("the experiment differs", function()
    sieve.run(fixtures .. "/registered.yaml", {store = store, resume = true, set = {seed = 4}})
  end)
  local more = sieve.run(fixtures .. "/registered.yaml",
                         {store = store, resume = true, set = {["budget.evaluations"] = 30}})
  T.eq(more:count(), 30, "a larger budget extends it")
  -- The experiment's host has closed: this script's registration serves again.
  T.eq(#sieve.space("ring"), 3)
end)

T.test("a Lua evaluator reports intermediate values; a pruner stops it; the study reads them", function()
  local study = sieve.run(fixtures .. "/pruned.yaml", {store = scratch_store("pruned")})
  local curves = study:intermediate()
  local by_trial, pruned, ok = {}, 0, 0
  for _, v in ipairs(curves) do
    by_trial[v.trial] = by_trial[v.trial] or {}
    table.insert(by_trial[v.trial], v)
    T.eq(v.fidelity, v.step, "the fidelity it reported")
  end
  for t in study:trials() do
    local steps = by_trial[t.number]
    local last = steps[#steps]
    if t.status == "pruned" then
      pruned = pruned + 1
      T.truthy(#steps < 6, "stopped before its last epoch")
      T.eq(t.metrics.acc, last.value, "stored with its last value")
      T.eq(t.metrics.step, last.step)
    else
      ok = ok + 1
      T.eq(#steps, 6)
    end
  end
  T.truthy(pruned > 0 and ok >= 2, string.format("%d pruned, %d ok", pruned, ok))
  T.eq(#study:intermediate(0), 6, "one trial's values")
  T.eq(study:count("pruned"), pruned)
end)

T.test("c.report refuses a fidelity not finite, negative or above the evaluator's max, at the call's line", function()
  local fidelity
  sieve.register_evaluator{name = "report-fidelity", fidelity = {name = "epochs", min = 1, max = 9},
    evaluate = function(self, c)
      c.report(1, 0 / 0, 0.5) -- a NaN value (a diverged training) and a fidelity below min are progress
      c.report(2, 1 / 0, fidelity)
      return {metrics = {acc = 1}}
    end}
  local space = sieve.space("ring", {width = 5})
  local function study()
    return sieve.study{space = space, optimizer = "random", evaluator = sieve.evaluator("report-fidelity", space, {}),
                       seed = 1, objective = {metric = "acc", direction = "maximize"}}
  end
  for _, case in ipairs({{-3, "a fidelity is a finite number >= 0"}, {1 / 0, "a fidelity is a finite number >= 0"},
                         {0 / 0, "a fidelity is a finite number >= 0"},
                         {10, "fidelity 10 is above the evaluator's fidelity max 9"}}) do
    fidelity = case[1]
    local s = study()
    local err = T.raises(case[2], s.run, s, 1)
    T.truthy(err:find("test_components.lua:%d+: bad argument #3 to 'report'"), err)
  end
  fidelity = 9
  local s = study()
  s:run(1)
  T.eq(s:count("ok"), 1, "the max itself")
  local curve = s:intermediate()
  T.eq(#curve, 2)
  T.eq(curve[1].fidelity, 0.5)
  T.eq(curve[2].fidelity, 9)
end)

T.test("values reported after the pruner's stop are not kept: the trial is stored as at the decision", function()
  local study = sieve.run(fixtures .. "/pruned.yaml", {store = scratch_store("pruned-ignoring"),
                                                       set = {["evaluator.ignore_stop"] = true}})
  local steps = {}
  for _, v in ipairs(study:intermediate()) do steps[v.trial] = v end
  local pruned = 0
  for t in study:trials() do
    if t.status == "pruned" then
      pruned = pruned + 1
      local last = steps[t.number]
      T.truthy(last.step < 6, string.format("trial %d kept step %d, reported after the stop", t.number, last.step))
      T.eq(t.metrics.step, last.step, "pruned at the step of the decision")
      T.eq(t.metrics.acc, last.value, "with the value at the decision")
    end
  end
  T.truthy(pruned > 0, "some trials were pruned")
end)

T.test("an evaluator that stops with an error once told to stop (Optuna's TrialPruned) is pruned, the study goes on",
       function()
  local study = sieve.run(fixtures .. "/pruned.yaml", {store = scratch_store("pruned-raising"),
                                                       set = {["evaluator.raise_on_stop"] = true}})
  local pruned = 0
  for t in study:trials() do
    if t.status == "pruned" then
      pruned = pruned + 1
      T.truthy(t.reason:find("^pruned at step %d"), t.reason)
      -- its time was spent: the evaluation's wall time, as for any result
      T.truthy(t.cost > 0, string.format("trial %d cost %g", t.number, t.cost))
    end
  end
  T.truthy(pruned > 0, "some trials were pruned")
  T.eq(study:count(), 12, "the whole budget ran")
  T.eq(study:count("failed"), 0)
end)

T.test("sieve.run without a progress display warns of a repeated step and of a trial that reported nothing", function()
  -- (these warnings went to a progress display that sieve.run does not have unless progress = true: a crash)
  local study = sieve.run(fixtures .. "/pruned.yaml", {store = scratch_store("pruned-repeated"),
                                                       set = {["evaluator.repeat_first"] = true}})
  T.eq(study:count(), 12, "the whole budget ran")
  local by_step = {}
  for _, v in ipairs(study:intermediate()) do
    by_step[v.trial] = by_step[v.trial] or {}
    by_step[v.trial][v.step] = v.value
  end
  local checked = 0
  for trial, s in pairs(by_step) do
    if s[2] then -- acc(2) = 1.5 acc(1): step 1 keeps its first value, not the repeated 0
      T.truthy(math.abs(s[2] - 1.5 * s[1]) < 1e-12, string.format("trial %d: %g, %g", trial, s[1], s[2]))
      checked = checked + 1
    end
  end
  T.truthy(checked > 0)
  study = sieve.run(fixtures .. "/pruned.yaml", {store = scratch_store("pruned-silent"),
                                                 set = {["evaluator.silent"] = true}})
  T.eq(study:count("ok"), 12, "nothing to judge: every trial finishes")
  T.eq(#study:intermediate(), 0)
end)

T.test("sieve.study refuses a store of sieve run: its config defines that study (sieve.run resumes it)", function()
  -- (it opened one with any seed and stamped that seed as the study's; a diff review found it)
  local store = scratch_store("run-store")
  local done = sieve.run(fixtures .. "/pruned.yaml", {store = store})
  T.eq(done:count(), 12)
  done:close()
  local ok, err = pcall(function()
    return sieve.study{space = sieve.space("ring", {width = 5}), optimizer = "lua-random", store = store,
                       objective = {metric = "acc"}, seed = 5}
  end)
  T.eq(ok, false)
  T.truthy(err:find("test_components%.lua:%d+: sieve%.study: .*run%-store.* holds a study of sieve run"), err)
  local again = sieve.run(fixtures .. "/pruned.yaml", {store = store, resume = true, set = {["budget.evaluations"] = 13}})
  T.eq(again:count(), 13, "and sieve.run goes on with it")
end)

T.test("a Lua space's number ranges stay finite and exact", function()
  local n = 0
  local function space_with(decl)
    n = n + 1
    local name = "range-" .. n
    sieve.register_space{name = name, create = function(self, b) decl(b) end,
                         format = function() return "" end, parse = function() return {} end}
    return sieve.space(name)
  end
  T.raises("the range [-1e+308, 1e+308] is wider than the largest double",
           space_with, function(b) b:float("x", -1e308, 1e308) end)
  T.raises("int bounds must lie within +-2^53", space_with, function(b) b:int("n", 0, 1 << 60) end)
  T.eq(#space_with(function(b) b:float("x", -1e307, 1e307) end), 1)
end)

T.test("optimizers never parse their own proposals back (a space whose parse fails does not abort them)", function()
  sieve.register_space{name = "one-way", create = function(self, b) b:float("x", 0, 1) end,
    format = function(self, g) return string.format("x%.17g", g:get("x")) end,
    parse = function(self, text) return nil, "cannot read '" .. text .. "'" end}
  sieve.register_evaluator{name = "identity-x",
    evaluate = function(self, c) return {metrics = {value = c.genotype:get("x")}} end}
  for _, o in ipairs({"tpe", "evolution", "local_search", "reinforce", "random"}) do
    local space = sieve.space("one-way")
    local study = sieve.study{space = space, optimizer = o, evaluator = sieve.evaluator("identity-x", space, {}),
                              seed = 1, objective = {metric = "value", direction = "minimize"}}
    study:run(12)
    T.eq(study:count("ok"), 12, o)
  end
end)

T.test("an option default YAML cannot hold is an error, not a missing default", function()
  local function ask() return {} end
  local err = T.raises("option 'shape' of 'bad-default': default: expected a list or a map with string keys", function()
    sieve.register_optimizer{name = "bad-default", options = {shape = {type = "any", default = {1, 2, x = 3}}}, ask = ask}
  end)
  T.truthy(err:find("test_components.lua:%d+: option"), err)
  T.raises("option 'f' of 'bad-default-2': default: a function cannot be a config value", function()
    sieve.register_optimizer{name = "bad-default-2", options = {f = {type = "any", default = print}}, ask = ask}
  end)
end)

T.test("a string or non-finite default reads back as written (quoted YAML, .inf, .nan)", function()
  local cases = {["a: b"] = "a map", ["#x"] = "a comment", ["- x"] = "a list", ["[x]"] = "a flow list",
                 ["%d items"] = "a directive", ["*x"] = "an alias", ['"quoted"'] = "quotes",
                 ["line1\nline2"] = "a newline", ["it's"] = "a quote", ["tab\tback\\"] = "escapes",
                 ["true"] = "a bool's spelling", ["123"] = "a number's spelling", [""] = "empty",
                 [math.huge] = "inf", [-math.huge] = "minus inf"}
  local seen
  for value, what in pairs(cases) do
    local name = "default-" .. what:gsub("[^%w]", "-")
    local type = math.type(value) and "float" or "string"
    sieve.register_space{name = name, options = {s = value, t = {type = type, default = value}},
      create = function(self, b) seen = {self.options.s, self.options.t}; b:int("i", 0, 1) end}
    sieve.space(name)
    T.eq(seen[1], value, what)
    T.eq(seen[2], value, what)
  end
  -- A typed number or bool given as text is that value, as it always was.
  sieve.register_space{name = "default-typed-text", options = {n = {type = "int", default = "5"},
    x = {type = "float", default = "2.5"}, b = {type = "bool", default = "true"}},
    create = function(self, b) seen = {self.options.n, self.options.x, self.options.b}; b:int("i", 0, 1) end}
  sieve.space("default-typed-text")
  T.eq(seen[1], 5)
  T.eq(seen[2], 2.5)
  T.eq(seen[3], true)
  -- NaN is written as YAML's .nan, which a float option refuses as it does in a config:
  -- said at the script's line (also when register_* is pcall'ed directly), with what works.
  local nan_refused = "option 'f' of 'default-nan': a float option refuses NaN, as it does in a config; " ..
                      "for a number that may be unset, declare {type = \"any\", default = 0/0}"
  local err = T.raises(nan_refused, function()
    sieve.register_space{name = "default-nan", options = {f = 0 / 0}, create = function(self, b) end}
  end)
  T.truthy(err:find("^.*test_components%.lua:%d+: option 'f'"), err)
  local ok, direct = pcall(sieve.register_space, {name = "default-nan", options = {f = {type = "float", default = 0 / 0}},
                                                  create = function(self, b) end})
  T.eq(ok, false)
  T.truthy(direct:find("^.*test_components%.lua:%d+: option 'f'") and direct:find(nan_refused, 1, true), direct)
  -- An int option says it is one; a probe value is refused as a probe value, with no default to suggest.
  T.raises("option 'k' of 'default-nan-int': an int option refuses NaN, as it does in a config; " ..
           "for a number that may be unset, declare {type = \"any\", default = 0/0}", function()
    sieve.register_space{name = "default-nan-int", options = {k = {type = "int", default = 0 / 0}},
      create = function(self, b) end}
  end)
  local probe_err = T.raises("'probe' of 'probe-nan': option 'k' is an int option: it refuses NaN as a probe value, " ..
                             "as it does in a config", function()
    sieve.register_space{name = "probe-nan", options = {k = 3}, probe = {k = 0 / 0}, create = function(self, b) end}
  end)
  T.truthy(probe_err:find("^.*test_components%.lua:%d+: 'probe'") and not probe_err:find("default", 1, true), probe_err)
  sieve.register_space{name = "default-nan-any", options = {f = {type = "any", default = 0 / 0}},
    create = function(self, b) seen = self.options.f; b:int("i", 0, 1) end}
  sieve.space("default-nan-any")
  T.truthy(seen ~= seen, "an any option's NaN default reads back as NaN")
  -- What the registry refuses is said at the line too, once.
  local refused
  ok, refused = pcall(sieve.register_optimizer, {name = "own-seed", options = {seed = 1}, ask = function() end})
  T.eq(ok, false)
  T.truthy(refused:find("^.*test_components%.lua:%d+: optimizer 'own%-seed': option 'seed': the name is reserved"),
           refused)
end)

T.test("a probe value given as text for a number option is that number, as a default is", function()
  -- probe = {width = "2"} reads as the int 2 (it did, and then read as the string "2", which the
  -- int option refused when the functional hash built the probe).
  for _, probe in ipairs({{width = "2", scale = "0.5", bias = "true"}, {width = 2, scale = 0.5, bias = true}}) do
    local name = "probe-text-" .. (math.type(probe.width) or "text")
    sieve.register_space{name = name, options = {width = 8, scale = 1.0, bias = false}, probe = probe,
      create = function(self, b) b:int("k", 1, 2) end,
      build = function(self, g)
        local n = sieve.graph.new("p")
        local x = n:conv2d(n:input(1, 4, 4), {out = self.options.width, kernel = 1, bias = self.options.bias})
        return n:finish(n:linear(n:global_avg_pool(x), {out = 2}))
      end}
    local space = sieve.space(name)
    local g = space:genotype({k = 1})
    T.eq(#tostring(space:hash(g, "functional")), 32, name)
  end
end)

T.done()
