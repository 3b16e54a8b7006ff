-- An optimizer that uses os beyond the sandbox's clock functions: it runs
-- only where the config's lua: allow: [os] holds.
sieve.register_optimizer{
  name = "shell",
  create = function(self) self.n = 0 end,
  ask = function(self, n)
    assert(os.getenv("PATH") ~= nil)
    local out = {}
    for i = 1, n do out[i] = self.space:sample(self.rng) end
    return out
  end,
}
