-- Hole 1a: the command evaluator runs any program.
local space = sieve.space("hpo", {file = arg[1] .. "/search_spaces/rosenbrock4.yaml"})
local ev = sieve.evaluator("command", space, {argv = {"sh", "-c", "echo '{{\"value\": 1}}'"}})
print("evaluated", ev:evaluate(space:sample(sieve.rng(1))).metrics.value)
