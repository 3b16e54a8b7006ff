-- An evaluator that needs os beyond the sandbox's clock functions.
sieve.register_evaluator{
  name = "os-evaluator",
  evaluate = function(self, c)
    return {metrics = {value = os.getenv("PATH") and 1 or 0}}
  end,
}
