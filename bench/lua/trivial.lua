-- The trivial Lua optimizer of the overhead benchmark: uniform sampling,
-- like the C `random` optimizer, so that the difference is the cost of
-- calling into Lua (ask, tell, and saving {rng, state} after each).
sieve.register_optimizer{
  name = "trivial",
  ask = function(self, n)
    local out = {}
    for i = 1, n do out[i] = self.space:sample(self.rng) end
    return out
  end,
  tell = function(self, trial) end,
}
