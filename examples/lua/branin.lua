-- The Branin function as an evaluator written in Lua: the same function as
-- the C evaluator `function: branin` (plugins/evaluators/function), on a
-- space with float decisions x1 in [-5, 10] and x2 in [0, 15]
-- (search_spaces/branin.yaml).  Its minimum, 0.397887, is reached at
-- (-pi, 12.275), (pi, 2.275) and (9.42478, 2.475) (Dixon & Szego, "The
-- global optimisation problem: an introduction", 1978).
--
-- Used from YAML as  evaluator: {plugin: lua, script: examples/lua/branin.lua}
--                    objective: {metric: value, direction: minimize}
sieve.register_evaluator{
  name = "lua_branin",
  summary = "the Branin function of decisions x1 and x2 (minimum 0.397887), written in Lua",
  evaluate = function(self, c)
    local x1, x2 = c.genotype:get("x1"), c.genotype:get("x2")
    local b, cc, t = 5.1 / (4 * math.pi ^ 2), 5 / math.pi, 1 / (8 * math.pi)
    local value = (x2 - b * x1 ^ 2 + cc * x1 - 6) ^ 2 + 10 * (1 - t) * math.cos(x1) + 10
    return {metrics = {value = value, regret = value - 0.39788735772973816}}
  end,
}
