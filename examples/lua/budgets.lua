-- A constrained search looping over parameter budgets (the kind of flow
-- PyGlove was built for): for each budget on the parameter count, search
-- the NAS-Bench-201 cells whose network fits it and keep the best; then
-- print the accuracy each budget buys.
--
--   sieve lua examples/lua/budgets.lua [TRIALS_PER_BUDGET]
--
-- The constraint is checked on the network itself: space:build(g) makes the
-- benchmark's CIFAR-10 network (C=16, N=5) and graph.params counts its
-- parameters, before anything is evaluated, as a search whose evaluations
-- are trainings would do.  The cells within budget are scored by the
-- published NAS-Bench-201 table.  Candidates over budget are dropped from
-- the population, so regularized evolution (sieve.mutate, as in
-- evolution.lua) learns to stay inside the budget.
local mutate = require("sieve.mutate")

local trials = math.tointeger(tonumber(arg[1] or "150"))
local budgets = {0.2, 0.4, 0.8, 1.2, 1.6} -- millions of parameters

local space = sieve.space("nb201")
local table_ev = sieve.evaluator("tabular", space, {
  table = "../../data/nb201/nb201.csv",   -- relative to this script, as in a YAML file
  metrics = {"cifar10_valid_acc", "cifar10_test_acc"},
})

-- One search under one budget: aging evolution with the budget as a hard constraint.
local function search(budget, seed)
  local rng = sieve.rng(seed)
  local population, best, over = {}, nil, 0
  for _ = 1, trials do
    local g
    if #population < 20 then
      g = space:sample(rng)
    else
      local parent
      for _ = 1, 5 do
        local m = population[rng:int(1, #population)]
        if parent == nil or m.acc > parent.acc then parent = m end
      end
      g = mutate.one(space, parent.genotype, rng)
    end
    local net = space:build(g)
    local params = net.params / 1e6
    if params > budget then
      over = over + 1
    else
      local r = table_ev:evaluate(g)
      if r.ok then
        local m = {genotype = g, acc = r.metrics.cifar10_valid_acc, test = r.metrics.cifar10_test_acc,
                   params = params, mflops = net.flops / 1e6}
        population[#population + 1] = m
        if #population > 20 then table.remove(population, 1) end
        if best == nil or m.acc > best.acc then best = m end
      end
    end
  end
  return best, over
end

print(string.format("%-10s %-9s %-9s %-9s %-9s %-6s %s", "budget_M", "params_M", "MFLOPs", "valid", "test", "over",
                    "cell"))
for k, budget in ipairs(budgets) do
  local best, over = search(budget, k)
  if best == nil then
    print(string.format("%-10.2f (no cell found within the budget)", budget))
  else
    print(string.format("%-10.2f %-9.6f %-9.2f %-9.3f %-9.3f %-6d %s", budget, best.params, best.mflops, best.acc,
                        best.test, over, best.genotype:format()))
    assert(best.params <= budget, "a cell over its budget was kept")
  end
end
