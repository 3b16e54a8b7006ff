-- Running YAML experiments from Lua, with overrides: the same Lua-optimizer
-- experiment (nb201-evolution.yaml) under two seeds, then the best of each.
--
--   sieve lua examples/lua/run-yaml.lua [STORE_DIR]
--
-- The stores go to STORE_DIR, by default the build folder (`build/`, made by
-- `meson setup build`, relative to where sieve runs) so that trying the
-- example leaves nothing in the source tree or the current folder.
local dir = arg[1] or "build"

for _, seed in ipairs({1, 2}) do
  local study = sieve.run("nb201-evolution.yaml", {   -- relative to this script
    store = string.format("%s/nb201-evolution-seed%d.sieve", dir, seed),
    set = {seed = seed, ["budget.evaluations"] = 40},
  })
  local best = study:best()
  print(string.format("seed %d: best of %d trials: %.3f  %s", seed, study:count(), best.objective, best.text))
end
