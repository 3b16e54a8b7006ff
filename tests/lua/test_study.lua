-- Regressions of sieve.study: callbacks that call back into the study (close,
-- run, tell, closing the space) while study:run holds it, what study:run
-- stores, and the option tables it takes.  Run by meson through `sieve lua`.
local T = require("sieve.testing")
local root = assert(arg[1], "usage: sieve lua test_study.lua SOURCE_ROOT")
local branin = root .. "/search_spaces/branin.yaml"

-- A Lua evaluator whose evaluate runs hook(study, c) first, and a study on it.
local hook
local study
sieve.register_evaluator{name = "hooked", evaluate = function(self, c)
  if hook then hook(study, c) end
  return {metrics = {value = c.genotype:get("x1")}}
end}
local function hooked_study(space, optimizer)
  study = sieve.study{space = space, optimizer = optimizer or "random", evaluator = sieve.evaluator("hooked", space, {}),
                      objective = {metric = "value", direction = "minimize"}, seed = 1}
  return study
end

T.test("study:close from the evaluator while study:run runs is an error, not a crash", function()
  local st = hooked_study(sieve.space("hpo", {file = branin}))
  hook = function(s) s:close() end
  T.raises("the study is running", st.run, st, 2)
  hook = nil
  T.eq(st:run(2), 2, "the study still runs after")
  st:close()
end)

T.test("study:run(n) refuses a negative n, at the caller's line", function()
  local st = hooked_study(sieve.space("hpo", {file = branin}))
  local ok, err = pcall(function() local _ = st:run(-1) end)
  T.eq(ok, false)
  T.truthy(err:find("test_study%.lua:%d+: bad argument #1 to 'run' %(expected a number of trials >= 0%)"), err)
  T.eq(st:run(0), 0)
  T.eq(st:count(), 0)
end)

T.test("study:run from the evaluator is refused, not recursed", function()
  local st = hooked_study(sieve.space("hpo", {file = branin}))
  hook = function(s) s:run(2) end
  T.raises("a study runs one loop at a time", st.run, st, 2)
  hook = nil
  T.eq(st:count("pending"), 1, "only the trial of the outer run is pending")
  st:close()
end)

T.test("a Lua optimizer calling back into its study is refused", function()
  local mode
  sieve.register_optimizer{name = "reentrant", ask = function(self, n)
    if mode == "close" then study:close() end
    if mode == "run" then study:run(1) end
    if mode == "ask" then study:ask() end
    return {self.space:sample(self.rng)}
  end, tell = function(self, t) if mode == "tellclose" then study:close() end end}
  local st = hooked_study(sieve.space("hpo", {file = branin}), "reentrant")
  mode = "close"
  T.raises("the study is running", st.run, st, 1)
  mode = "run"
  T.raises("a study cannot ask, tell or run from inside its own optimizer", st.run, st, 1)
  mode = "ask"
  T.raises("a study cannot ask, tell or run from inside its own optimizer", st.ask, st)
  mode = "tellclose"
  T.raises("the study is running", st.run, st, 1)
  mode = nil
  T.eq(st:run(1), 1)
  st:close()
  -- a sieve.optimizer whose own ask calls it again
  local opt
  sieve.register_optimizer{name = "self-asking", ask = function(self, n)
    if mode == "self" then opt:ask(1) end
    return {self.space:sample(self.rng)}
  end}
  opt = sieve.optimizer("self-asking", sieve.space("hpo", {file = branin}))
  mode = "self"
  T.raises("this optimizer is running (its ask, tell, save or load called back into it)", opt.ask, opt, 1)
  mode = nil
  T.eq(#opt:ask(1), 1, "and works after")
end)

T.test("closing the study's space or evaluator inside a callback is an error", function()
  local space = sieve.space("hpo", {file = branin})
  local st = hooked_study(space)
  hook = function()
    local s <close> = space
  end
  T.raises("this space is in use", st.run, st, 2)
  local ev = sieve.evaluator("hooked", space, {})
  hook = function()
    local e <close> = ev
  end
  T.raises("this evaluator is evaluating", ev.evaluate, ev, space:sample(sieve.rng(1)))
  hook = nil
  T.eq(st:run(1), 1, "space and study are still usable")
  st:close()
  local s <close> = space -- closing it after the calls is fine
end)

T.test("study:tell of the trial study:run evaluates is an error", function()
  local st = hooked_study(sieve.space("hpo", {file = branin}))
  hook = function(s, c) s:tell(c.number, {metrics = {value = 5}}) end
  T.raises("trial 0 is being evaluated by study:run", st.run, st, 1)
  hook = nil
  st:close()
end)

T.test("study:run evaluates the study's trial: its number and intermediate values reach the store", function()
  local numbers = {}
  sieve.register_evaluator{name = "curve", evaluate = function(self, c)
    numbers[#numbers + 1] = c.number
    for step = 1, 3 do c.report(step, step * 0.5) end
    return {metrics = {value = 1}}
  end}
  local space = sieve.space("hpo", {file = branin})
  local st = sieve.study{space = space, optimizer = "random", evaluator = sieve.evaluator("curve", space, {}),
                         objective = {metric = "value"}, seed = 1}
  T.eq(st:run(2), 2)
  T.eq(numbers[1], 0)
  T.eq(numbers[2], 1)
  local rows = st:intermediate()
  T.eq(#rows, 6, "three steps of two trials")
  T.eq(rows[4].trial, 1)
  T.eq(rows[4].step, 1)
  T.eq(rows[6].value, 1.5)
  T.eq(#st:intermediate(1), 3, "one trial's")
  T.eq(#st:intermediate(99), 0, "a trial that does not exist has none")
  T.raises("a trial number is >= 0", st.intermediate, st, -5)
  T.raises("a trial number is >= 0", st.intermediate, st, -1)
  st:close()
end)

T.test("an objective that is nan or -inf fails its trial, as under sieve run", function()
  local values = {0 / 0, -math.huge, 2}
  local i = 0
  sieve.register_evaluator{name = "nonfinite", evaluate = function(self, c)
    i = i + 1
    return {metrics = {value = values[i]}}
  end}
  local space = sieve.space("hpo", {file = branin})
  local st = sieve.study{space = space, optimizer = "random", evaluator = sieve.evaluator("nonfinite", space, {}),
                         objective = {metric = "value", direction = "minimize"}, seed = 1}
  T.eq(st:run(3), 3)
  local status, reason = {}, {}
  for t in st:trials() do status[#status + 1], reason[#reason + 1] = t.status, t.reason end
  T.eq(status[1], "failed")
  T.truthy(reason[1]:find("the objective metric 'value' is nan, not a finite number", 1, true), reason[1])
  T.eq(status[2], "failed")
  T.truthy(reason[2]:find("is -inf", 1, true), reason[2])
  T.eq(status[3], "ok")
  T.eq(st:best().metrics.value, 2, "the best is the finite one")
  local t = st:ask()
  st:tell(t, {metrics = {value = 0 / 0}})
  T.eq(st:count("failed"), 3, "study:tell applies the same rule")
  st:close()
end)

T.test("misspelt keys of sieve.study, its objective, sieve.optimizer and sieve.run are errors", function()
  local space = sieve.space("hpo", {file = branin})
  local ev = sieve.evaluator("function", space, {["function"] = "branin"})
  local ok, err = pcall(function()
    sieve.study{space = space, optimizer = "random", evaluator = ev, stor = "kept.sieve"}
  end)
  T.eq(ok, false)
  T.truthy(err:find("^[^:]*test_study%.lua:%d+: sieve%.study: unknown option 'stor' %(did you mean 'store'%?%)"), err)
  T.raises("sieve.study: unknown option 'sed' (did you mean 'seed'?)", sieve.study,
           {space = space, optimizer = "random", evaluator = ev, sed = 7})
  T.raises("objective: unknown option 'directon' (did you mean 'direction'?)", sieve.study,
           {space = space, optimizer = "random", evaluator = ev, objective = {metric = "value", directon = "minimize"}})
  T.raises("objective: unknown option 'metirc'", sieve.study,
           {space = space, optimizer = "random", evaluator = ev, objective = {{metirc = "value"}}})
  T.raises("evaluator 'function' does not report the objective metric 'valeu' (did you mean 'value'?)", sieve.study,
           {space = space, optimizer = "random", evaluator = ev, objective = {metric = "valeu"}})
  T.raises("sieve.optimizer's study: unknown option 'seeed'", sieve.optimizer, "random", space, {}, {seeed = 3})
  T.raises("sieve.run: unknown option 'resum' (did you mean 'resume'?)", sieve.run, "missing.yaml",
           {store = "x.sieve", resum = true})
  T.raises("sieve.run: unknown option 'sett' (did you mean 'set'?)", sieve.run, "missing.yaml", {sett = {}})
end)

T.test("study:tell checks the trial number", function()
  local space = sieve.space("hpo", {file = branin})
  local st = sieve.study{space = space, optimizer = "random", evaluator = sieve.evaluator("hooked", space, {}),
                         objective = {metric = "value"}, seed = 1}
  local t = st:ask()
  T.eq(t.number, 0)
  local r = {metrics = {value = 1}}
  T.raises("trial 4294967296 was not asked in this session", st.tell, st, 2^32, r)
  T.raises("trial -1 was not asked", st.tell, st, -1, r)
  T.raises("study:tell: a trial number is a whole number, got ", st.tell, st, {number = 0 / 0}, r)
  T.raises("study:tell: a trial number is a whole number, got 0.5", st.tell, st, 0.5, r)
  T.raises("got a trial whose number is nil", st.tell, st, {}, r)
  T.eq(st:count("pending"), 1, "trial 0 is still pending")
  st:tell(t, r)
  T.eq(st:count("ok"), 1)
  st:close()
end)

T.test("errors about what a Lua component returned name it once and point at its function", function()
  local space = sieve.space("hpo", {file = branin})
  sieve.register_optimizer{name = "returns-a-number", ask = function(self, n)
    return 5
  end}
  sieve.register_evaluator{name = "returns-a-string", evaluate = function(self, c)
    return {metrics = {value = "x"}}
  end}
  local st = sieve.study{space = space, optimizer = "returns-a-number", evaluator = sieve.evaluator("hooked", space),
                         objective = {metric = "value"}}
  local ok, err = pcall(st.run, st, 1)
  T.eq(ok, false)
  T.truthy(err:find("optimizer 'returns%-a%-number': ask%(%) %(.*test_study%.lua:%d+%): must return a list of " ..
                    "genotypes, got a number"), err)
  st:close()
  local ev = sieve.evaluator("returns-a-string", space)
  ok, err = pcall(ev.evaluate, ev, space:sample(sieve.rng(1)))
  T.eq(ok, false)
  T.truthy(err:find("^evaluator 'returns%-a%-string': evaluate%(%) %(.*test_study%.lua:%d+%): result metrics"), err)
end)

T.test("getmetatable of sieve's objects gives their class name: no __gc to call on one in use", function()
  local space = sieve.space("hpo", {file = branin})
  local st = hooked_study(space)
  local ev = sieve.evaluator("hooked", space, {})
  local opt = sieve.optimizer("random", space)
  T.eq(getmetatable(st), "sieve.study")
  T.eq(getmetatable(ev), "sieve.evaluator")
  T.eq(getmetatable(space), "sieve.space")
  T.eq(getmetatable(opt), "sieve.optimizer")
  hook = function(s) getmetatable(s).__gc(s) end
  T.raises("attempt to call a nil value (field '__gc')", st.run, st, 2)
  hook = nil
  T.eq(st:run(2), 2, "the study still runs after")
  st:close()
end)

T.test("a Lua optimizer's save calling back into its study is refused, not a crash", function()
  local st, pending
  sieve.register_optimizer{name = "saver", ask = function(self, n) return {self.space:sample(self.rng)} end,
    save = function(self)
      if pending then local p = pending; pending = nil; st:tell(p, {metrics = {value = 2}}) end
      return {}
    end}
  st = sieve.study{space = sieve.space("hpo", {file = branin}), optimizer = "saver",
                   objective = {metric = "value"}, seed = 1}
  local a = st:ask()
  pending = st:ask()
  local p = pending
  T.raises("a study cannot ask, tell or run from inside its own optimizer", st.tell, st, a, {metrics = {value = 1}})
  st:tell(a, {metrics = {value = 1}})
  st:tell(p, {metrics = {value = 2}})
  T.eq(st:count("pending"), 0)
  st:close()
end)

T.test("a Lua method that is a C function or a load() chunk: its errors name what it returned", function()
  local space = sieve.space("hpo", {file = branin})
  sieve.register_optimizer{name = "chunk", ask = load("return \"text\"")}
  local opt = sieve.optimizer("chunk", space)
  T.raises("got a string", opt.ask, opt, 1)
  sieve.register_optimizer{name = "chunksave", ask = function(self) return {self.space:sample(self.rng)} end,
    save = load("return print")}
  local st = sieve.study{space = space, optimizer = "chunksave", objective = {metric = "value"}, seed = 1}
  T.raises("save()", st.ask, st)
  st:close()
  local s <close> = space -- not left busy
end)

T.test("multi-fidelity optimizers in sieve.study and sieve.optimizer get the evaluations' fidelity", function()
  local space = sieve.space("hpo", {file = branin})
  sieve.register_evaluator{name = "budgeted", fidelity = {name = "epochs", min = 1, max = 9, integer = true},
    evaluate = function(self, c) return {metrics = {value = c.genotype:get("x1") - c.fidelity}} end}
  local ev = sieve.evaluator("budgeted", space)
  for _, name in ipairs({"asha", "hyperband", "successive_halving", "bohb"}) do
    local st = sieve.study{space = space, optimizer = name, evaluator = ev, objective = {metric = "value"}, seed = 1}
    T.eq(st:run(12), 12, name)
    local seen = {}
    for t in st:trials() do seen[t.fidelity] = true end
    T.truthy(seen[1] and seen[3], name .. ": rungs at 1 and 3 of the evaluator's 1..9, eta 3")
    for f in pairs(seen) do T.truthy(f == 1 or f == 3 or f == 9, name .. ": fidelity " .. f) end
    st:close()
  end
  -- a script that evaluates by itself names the fidelity
  local st = sieve.study{space = space, optimizer = "successive_halving", objective = {metric = "loss"}, seed = 1,
                         fidelity = {name = "epochs", min = 1, max = 9, integer = true}}
  local t = st:ask()
  T.eq(t.fidelity, 1)
  T.raises("fidelity 10 is above the evaluator's fidelity max 9", st.report, st, t, 1, 0.5, 10)
  st:tell(t, {metrics = {loss = 1}})
  st:close()
  local opt = sieve.optimizer("hyperband", space, {}, {seed = 2, fidelity = {name = "epochs", min = 1, max = 27, integer = true}})
  local _, fidelities = opt:ask(1)
  T.eq(fidelities[1], 1)
  T.raises("hyperband needs an evaluator that offers a fidelity", sieve.optimizer, "hyperband", space, {}, {seed = 2})
  T.raises("the fidelity's max (0.5) is below its min (1)", sieve.optimizer, "hyperband", space, {},
           {fidelity = {name = "epochs", min = 1, max = 0.5}})
  local err = T.raises("the fidelity's min must be > 0", function()
    sieve.study{space = space, optimizer = "hyperband", objective = {metric = "loss"},
                fidelity = {name = "epochs", min = 0, max = 3}}
  end)
  T.truthy(err:find("test_study%.lua:%d+"), err)
  T.raises("fidelity is for a study without an evaluator; evaluator 'budgeted' offers its own", sieve.study,
           {space = space, optimizer = "hyperband", evaluator = ev, objective = {metric = "value"},
            fidelity = {name = "epochs", min = 1, max = 3}})
end)

T.test("a study of several objectives: best() refuses, as Optuna's best_trial, and best_trials() is the front", function()
  local st = sieve.study{space = sieve.space("hpo", {file = branin}), optimizer = "random", seed = 1,
                         objective = {{metric = "a"}, {metric = "b", direction = "minimize"}}}
  -- (a, b): (2, 2) and (1, 1) are non-dominated; (2, 3) and (0.5, 5) are dominated
  for _, ab in ipairs({{1, 1}, {2, 2}, {2, 3}, {0.5, 5}}) do
    local t = st:ask()
    st:tell(t, {metrics = {a = ab[1], b = ab[2]}})
  end
  T.raises("study:best(): this study has 2 objectives, and no single trial is best among them: " ..
           "study:best_trials() gives the Pareto front", st.best, st)
  local front = st:best_trials()
  T.eq(#front, 2)
  T.eq(front[1].number, 1)
  T.eq(front[2].number, 0)
  T.eq(front[1].objectives[1], 2)
  T.eq(front[1].objectives[2], 2)
  -- one objective: the best trials, ties included
  local one = sieve.study{space = sieve.space("hpo", {file = branin}), optimizer = "random", seed = 1,
                          objective = {metric = "a"}}
  for _, a in ipairs({3, 5, 5}) do local t = one:ask(); one:tell(t, {metrics = {a = a}}) end
  T.eq(#one:best_trials(), 2)
  T.eq(one:best().number, 1)
end)

T.done()
