-- A constrained search looping over parameter budgets (the kind of flow
-- PyGlove was built for): for each budget on the parameter count, search
-- the NAS-Bench-201 cells that fit it and keep the best; then print the
-- accuracy each budget buys.
--
--   sieve lua examples/lua/budgets.lua [TRIALS_PER_BUDGET]
--
-- The cells are scored by the published NAS-Bench-201 table; its `params_m`
-- column (millions of parameters of the CIFAR-10 network) is the
-- constraint.  Candidates over budget are told to the optimizer as failed,
-- so regularized evolution (sieve.mutate, as in evolution.lua) learns to stay
-- inside the budget.
local mutate = require("sieve.mutate")

local trials = math.tointeger(tonumber(arg[1] or "150"))
local budgets = {0.2, 0.4, 0.8, 1.2, 1.6}

local space = sieve.space("nb201")
local table_ev = sieve.evaluator("tabular", space, {
  table = "../../data/nb201/nb201.csv",   -- relative to this script, as in a YAML file
  metrics = {"cifar10_valid_acc", "cifar10_test_acc", "params_m"},
})

-- One search under one budget: aging evolution with the budget as a hard constraint.
local function search(budget, seed)
  local rng = sieve.rng(seed)
  local population, best = {}, nil
  for i = 1, trials do
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
    local r = table_ev:evaluate(g)
    local params = r.metrics.params_m
    if r.ok and params <= budget then
      local m = {genotype = g, acc = r.metrics.cifar10_valid_acc, test = r.metrics.cifar10_test_acc, params = params}
      population[#population + 1] = m
      if #population > 20 then table.remove(population, 1) end
      if best == nil or m.acc > best.acc then best = m end
    end
  end
  return best
end

print(string.format("%-10s %-9s %-9s %-9s  %s", "budget_M", "params_M", "valid", "test", "cell"))
local previous = -math.huge
for k, budget in ipairs(budgets) do
  local best = search(budget, k)
  if best == nil then
    print(string.format("%-10.2f (no cell found within the budget)", budget))
  else
    print(string.format("%-10.2f %-9.4f %-9.3f %-9.3f  %s", budget, best.params, best.acc, best.test,
                        best.genotype:format()))
    assert(best.params <= budget, "a cell over its budget was kept")
    previous = math.max(previous, best.acc)
  end
end
