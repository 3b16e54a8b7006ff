-- Regularized (aging) evolution in Lua: Real, Aggarwal, Huang & Le, "Regularized
-- Evolution for Image Classifier Architecture Search", AAAI 2019.
--
-- A population of the last `population` evaluated genotypes; each proposal
-- mutates one decision of the best of `sample` random members; the oldest
-- member dies when a new one arrives.  The first `population` proposals are
-- random.  Everything it learns lives in self.state, and every random draw
-- comes from self.rng, so a study killed at any point resumes exactly.
--
-- Used from YAML as  optimizer: {plugin: lua, script: evolution.lua,
--                                options: {population: 20, sample: 5}}
local mutate = require("sieve.mutate")

sieve.register_optimizer{
  name = "lua_evolution",
  summary = "regularized evolution (Real et al. 2019), written in Lua",
  options = {
    population = {type = "int", default = 20, min = 2, max = 100000, help = "members alive at once"},
    sample = {type = "int", default = 5, min = 1, max = 100000, help = "members drawn for each tournament"},
  },
  create = function(self)
    self.state.population = {}   -- {genotype, objective} in arrival order, oldest first
    self.state.asked = 0
  end,
  ask = function(self, n)
    local out = {}
    local pop = self.state.population
    for i = 1, n do
      if self.state.asked < self.options.population or #pop == 0 then
        out[i] = self.space:sample(self.rng)
      else
        local best
        for _ = 1, math.min(self.options.sample, #pop) do
          local m = pop[self.rng:int(1, #pop)]
          if best == nil or m.objective > best.objective then best = m end
        end
        out[i] = mutate.one(self.space, best.genotype, self.rng)
      end
      self.state.asked = self.state.asked + 1
    end
    return out
  end,
  tell = function(self, trial)
    -- failed trials (no objective) never join the population
    if trial.objective == nil then return end
    local pop = self.state.population
    pop[#pop + 1] = {genotype = trial.genotype, objective = trial.objective}
    if #pop > self.options.population then table.remove(pop, 1) end
  end,
}
