-- A pruner in sieve.study: evaluations by study:run and study:evaluate
-- judged on what they report (c.report), a script's own Optuna-style loop
-- (study:report, study:should_prune, study:tell(t, "pruned")), a resumed
-- study judging against the trials earlier sessions finished, and the
-- pruners sieve run refuses.  The curves have known answers: trial n
-- reports slope[n] * step at steps 1..5, the objective maximized, so the
-- median pruner (startup_trials 2) stops a trial at step 1 exactly when its
-- slope is below the median slope of the trials finished before it.
-- Needs --allow io,os (its stores).  Args: SOURCE_ROOT SCRATCH_DIR
local T = require("sieve.testing")
local root, scratch = assert(arg[1]), assert(arg[2])
local branin = root .. "/search_spaces/branin.yaml"

local function scratch_store(name)
  local path = string.format("%s/%s-%d.sieve", scratch, name, os.time())
  for _, s in ipairs({"", "-wal", "-shm", "-lock"}) do os.remove(path .. s) end
  return path
end

-- slopes[n + 1] is trial n's; ignore[n] goes on reporting after c.report
-- said stop; raise[n] raises once told to stop (Optuna's TrialPruned).
local slopes, ignore, raise = {}, {}, {}
sieve.register_evaluator{name = "curves", fidelity = {name = "epochs", min = 1, max = 5, integer = true},
  evaluate = function(self, c)
    local slope = assert(slopes[c.number + 1], "no slope for trial " .. c.number)
    for step = 1, 5 do
      if not c.report(step, slope * step, step) and not ignore[c.number] then
        if raise[c.number] then error("pruned") end
        return {metrics = {value = slope * step}}
      end
    end
    return {metrics = {value = slope * 5}}
  end}

local function pruned_study(store, pruner)
  local space = sieve.space("hpo", {file = branin})
  return sieve.study{space = space, optimizer = "random", evaluator = sieve.evaluator("curves", space),
                     objective = {metric = "value", direction = "maximize"}, seed = 1, store = store,
                     pruner = pruner or {kind = "median", startup_trials = 2}}
end

local function statuses(st)
  local out = {}
  for t in st:trials() do out[#out + 1] = t.status end
  return table.concat(out, " ")
end

T.test("study:run with a median pruner stops the trials below the median at step 1, as sieve run would", function()
  slopes = {1, 2, 0.5, 3, 1.5, 2.5, 0.1}
  ignore, raise = {[4] = true}, {[6] = true}
  local st = pruned_study()
  T.eq(st:run(7), 7)
  T.eq(statuses(st), "ok ok pruned ok pruned ok pruned")
  local by_number = {}
  for t in st:trials() do by_number[t.number] = t end
  T.eq(by_number[2].metrics.value, 0.5, "its last value")
  T.eq(by_number[2].metrics.step, 1)
  T.eq(by_number[2].reason, "pruned at step 1 (value 0.5)")
  T.eq(by_number[2].fidelity, 1, "a pruned trial is an evaluation of the fidelity it reached")
  -- trial 4 went on reporting and returned 7.5: what came after the stop is not the trial
  T.eq(by_number[4].metrics.value, 1.5)
  T.eq(#st:intermediate(4), 1, "nothing reported after the decision is kept")
  -- trial 6 raised once told to stop: pruned, not failed
  T.eq(by_number[6].reason, "pruned at step 1 (value 0.1)")
  T.eq(#st:intermediate(3), 5, "a finished trial keeps its whole curve")
  T.eq(st:best().number, 3, "the best is among the finished")
  st:close()
end)

T.test("without a pruner the same curves all finish", function()
  slopes = {1, 2, 0.5, 3}
  ignore, raise = {}, {}
  local space = sieve.space("hpo", {file = branin})
  local st = sieve.study{space = space, optimizer = "random", evaluator = sieve.evaluator("curves", space),
                         objective = {metric = "value", direction = "maximize"}, seed = 1}
  T.eq(st:run(4), 4)
  T.eq(statuses(st), "ok ok ok ok")
  st:close()
end)

T.test("study:evaluate keeps what the evaluator reports for study:tell", function()
  slopes = {1, 2, 0.5}
  ignore, raise = {}, {}
  local st = pruned_study()
  local results = {}
  for n = 1, 3 do
    local t = st:ask()
    results[n] = st:evaluate(t)
    T.raises("has been evaluated or reported already", st.evaluate, st, t)
    T.raises("was evaluated by study:evaluate, and its values are the evaluation's", st.report, st, t, 6, 99)
    st:tell(t, results[n])
  end
  T.eq(statuses(st), "ok ok pruned")
  -- what study:evaluate returns for a stopped evaluation is already the pruned trial's
  T.eq(results[3].status, "pruned")
  T.eq(results[3].metrics.value, 0.5)
  T.eq(results[1].status, "ok")
  -- an evaluation that reported nothing is evaluated all the same
  sieve.register_evaluator{name = "quiet", evaluate = function(self, c) return {metrics = {value = 1}} end}
  local space = sieve.space("hpo", {file = branin})
  local quiet = sieve.study{space = space, optimizer = "random", evaluator = sieve.evaluator("quiet", space),
                            objective = {metric = "value"}, seed = 1}
  local q = quiet:ask()
  quiet:evaluate(q)
  T.raises("has been evaluated or reported already", quiet.evaluate, quiet, q)
  quiet:close()
  T.eq(#st:intermediate(0), 5)
  T.eq(#st:intermediate(2), 1)
  st:close()
end)

T.test("a script's own loop: study:report, study:should_prune, study:tell(t, \"pruned\")", function()
  local st = sieve.study{space = sieve.space("hpo", {file = branin}), optimizer = "random",
                         objective = {metric = "loss", direction = "minimize"}, seed = 1,
                         pruner = {kind = "median", startup_trials = 2}}
  local verdicts = {}
  for n, slope in ipairs({-1, -2, -0.5, -3}) do
    local t = st:ask()
    T.eq(st:should_prune(t), false, "no verdict before a report")
    local stopped = false
    for step = 1, 5 do
      if not st:report(t, step, 10 + slope * step) then
        T.eq(st:should_prune(t), true)
        verdicts[n] = step
        st:tell(t, "pruned")
        stopped = true
        break
      end
    end
    if not stopped then st:tell(t, {metrics = {loss = 10 + slope * 5}}) end
  end
  T.eq(statuses(st), "ok ok pruned ok")
  T.eq(verdicts[3], 1)
  local third
  for t in st:trials() do if t.number == 2 then third = t end end
  T.eq(third.metrics.loss, 9.5)
  T.eq(third.reason, "pruned at step 1 (loss 9.5)")
  -- the script decides: told a result after the pruner said stop, it is that result (as Optuna's tell)
  local t = st:ask()
  T.eq(st:report(t, 1, 100), false)
  st:tell(t, {metrics = {loss = 100}})
  T.eq(st:count("ok"), 4)
  T.eq(#st:intermediate(t.number), 1)
  -- told pruned before any report, as Optuna allows: pruned without a value
  local early = st:ask()
  st:tell(early, "pruned")
  local stored
  for tr in st:trials() do if tr.number == early.number then stored = tr end end
  T.eq(stored.status, "pruned")
  T.eq(stored.reason, "pruned by the script before it reported a value")
  -- mistakes
  local u = st:ask()
  T.raises("study:tell takes a result ({metrics = {...}}, sieve.result{...}) or \"pruned\", got the string 'prune'",
           st.tell, st, u, "prune")
  T.raises("a step is an integer >= 0", st.report, st, u, -1, 3)
  T.raises("number expected, got string", st.report, st, u, 1, "x")
  T.raises("a fidelity is a finite number >= 0", st.report, st, u, 1, 3, 0 / 0)
  T.raises("trial 999 was not asked in this session", st.report, st, 999, 1, 3)
  T.raises("study:evaluate needs the study's evaluator", st.evaluate, st, u)
  st:tell(u, {metrics = {loss = 1}})
  T.raises("was not asked in this session, or is already told", st.report, st, u, 2, 3)
  st:close()
end)

T.test("study:should_prune judges again against the trials finished since the report, as Optuna's", function()
  local st = sieve.study{space = sieve.space("hpo", {file = branin}), optimizer = "random",
                         objective = {metric = "acc", direction = "maximize"}, seed = 1,
                         pruner = {kind = "median", startup_trials = 2}}
  local waiting = st:ask()
  T.eq(st:report(waiting, 1, 0.2), true, "no trial finished yet: the pruner's startup")
  for _, acc in ipairs({0.5, 0.7}) do
    local t = st:ask()
    st:report(t, 1, acc)
    st:tell(t, {metrics = {acc = acc}})
  end
  T.eq(st:should_prune(waiting), true, "0.2 is below the median 0.6 of the two finished since")
  st:tell(waiting, "pruned")
  T.eq(st:count("pruned"), 1)
  st:close()
end)

T.test("an evaluator's own status = \"pruned\" is stored as it returned it, as sieve run stores it", function()
  sieve.register_evaluator{name = "self-pruning", evaluate = function(self, c)
    c.report(1, 3)
    return {status = "pruned", reason = "my own early stop", metrics = {value = 42}}
  end}
  local space = sieve.space("hpo", {file = branin})
  local st = sieve.study{space = space, optimizer = "random", evaluator = sieve.evaluator("self-pruning", space),
                         objective = {metric = "value"}, seed = 1, pruner = {kind = "median"}}
  T.eq(st:run(1), 1)
  local t = st:trials()()
  T.eq(t.status, "pruned")
  T.eq(t.reason, "my own early stop")
  T.eq(t.metrics.value, 42)
  st:close()
end)

T.test("a reopened study's pruner judges against the trials earlier sessions finished", function()
  ignore, raise = {}, {}
  local store = scratch_store("pruner-resumed")
  slopes = {1, 2, 3, 0.5}
  local pruner = {kind = "median", startup_trials = 3}
  local st = pruned_study(store, pruner)
  T.eq(st:run(3), 3)
  st:close()
  -- trial 3 alone: without the three finished curves it would be the pruner's startup, never pruned
  st = pruned_study(store, pruner)
  T.eq(st:run(1), 1)
  T.eq(statuses(st), "ok ok ok pruned")
  st:close()
end)

T.test("a store opened again by sieve.study must hold the same study, as sieve run --resume checks", function()
  -- (reopened with the other direction its best turned upside down; continued by another optimizer, the
  -- first could no longer open it: "the state lacks 'x'")
  local store = scratch_store("same-study")
  local function open(args)
    args.space = args.space or sieve.space("hpo", {file = branin})
    args.optimizer = args.optimizer or "tpe"
    args.objective = args.objective or {metric = "v", direction = "maximize"}
    args.seed, args.store = 1, store
    return sieve.study(args)
  end
  local st = open{}
  for _ = 1, 3 do local t = st:ask(); st:tell(t, {metrics = {v = t.genotype:get("x1")}}) end
  st:close()
  local function refused(args, wanted)
    local ok, err = pcall(open, args)
    T.eq(ok, false)
    T.truthy(err:find("test_study_pruner%.lua:%d+: sieve%.study: .*same%-study.* holds another study: its " .. wanted), err)
  end
  refused({objective = {metric = "v", direction = "minimize"}},
          "objective%[0%]%.direction is 'maximize', and this script's 'minimize'")
  refused({optimizer = "random"}, "optimizer%.plugin is 'tpe', and this script's 'random'")
  refused({optimizer = {plugin = "tpe", n_startup = 3}}, "optimizer%.n_startup is the default, and this script's '3'")
  refused({space = sieve.space("hpo", {parameters = {x1 = {type = "float", low = -5, high = 20},
                                                     x2 = {type = "float", low = 0, high = 15}}})},
          "space%.decision%[0%] is 'x1 float %[%-5, 10%]")
  refused({pruner = {kind = "median"}}, "pruner%.kind is %(none%), and this script's 'median'")
  st = open{optimizer = {plugin = "tpe", n_startup = 10}}
  T.eq(st:count(), 3, "the same study opens (a default written out is the default), and nothing of it was "
                      .. "changed by the refusals")
  local t = st:ask()
  st:tell(t, {metrics = {v = 1}})
  st:close()
  -- A study begun with an option set, opened by a script that leaves it at its default: the stored key's
  -- line the script's lacks (it was accepted: only the script's lines were walked).
  store = scratch_store("same-study-set")
  st = open{optimizer = {plugin = "tpe", n_startup = 3}}
  st:close()
  refused({}, "optimizer%.n_startup is '3', and this script's the default")
end)

T.test("pruners sieve run refuses are refused at the script's line", function()
  local space = sieve.space("hpo", {file = branin})
  local curves = sieve.evaluator("curves", space)
  local function study(args)
    args.space, args.optimizer = space, "random"
    args.objective = args.objective or {metric = "value"}
    return sieve.study(args)
  end
  local err = T.raises("sieve.study: pruner must be a table", study, {evaluator = curves, pruner = "median"})
  T.truthy(err:find("test_study_pruner%.lua:%d+:"), err)
  err = T.raises("unknown option 'warmup'", study, {evaluator = curves, pruner = {kind = "median", warmup = 2}})
  T.truthy(err:find("test_study_pruner%.lua:%d+"), err)
  T.raises("'kind'", study, {evaluator = curves, pruner = {kind = "mean"}})
  err = T.raises("a pruner judges one objective, and this study has 2", study,
                 {pruner = {kind = "median"}, objective = {{metric = "value"}, {metric = "cost", direction = "minimize"}}})
  T.truthy(err:find("test_study_pruner%.lua:%d+"), err)
  T.raises("a pruner needs intermediate values, and evaluator 'function' reports none", study,
           {evaluator = sieve.evaluator("function", space, {["function"] = "branin"}), pruner = {kind = "median"}})
end)

T.done()
