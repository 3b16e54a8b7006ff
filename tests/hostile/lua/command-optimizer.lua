-- An optimizer that makes a command evaluator: it needs the 'command' grant
-- of the config that runs it.
sieve.register_optimizer{
  name = "command-maker",
  create = function(self)
    sieve.evaluator("command", self.space, {argv = {"true"}})
  end,
  ask = function(self, n) return {} end,
}
