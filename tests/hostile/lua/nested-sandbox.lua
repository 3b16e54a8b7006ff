-- A script without grants makes a Lua evaluator whose sandbox asks for os:
-- what it starts may not hold more than it has.
local space = sieve.space("hpo", {file = arg[1] .. "/search_spaces/rosenbrock4.yaml"})
local ev = sieve.evaluator("lua", space, {script = "os-evaluator.lua", lua = {allow = {"os"}}})
print("evaluated", ev:evaluate(space:sample(sieve.rng(1))).metrics.value)
