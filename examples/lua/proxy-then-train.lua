-- A search flow in sieves, cheapest first: many candidates are screened by
-- zero-cost proxies, a few are trained briefly, and the best of those is
-- trained longer.
--
--   sieve lua examples/lua/proxy-then-train.lua [CANDIDATES] [TOP] [PROXIES] [THREADS]
--     CANDIDATES  cells to sample (default 300)
--     TOP         cells the proxies let through to a short training (default 5)
--     PROXIES     comma-separated zero-cost proxies (default naswot,zen; see sieve.proxy_list())
--     THREADS     threads of each training and proxy computation (default 0: every core)
--
-- 1. sample CANDIDATES cells of the NAS-Bench-201 space written in Lua
--    (search_spaces/nb201.lua) at a small scale for 28x28 grey images, and
--    drop those whose network computes a function already seen (functional
--    hash, Gillard et al. 2023): one of them is enough;
-- 2. score each survivor's untrained network with the proxies and keep the
--    TOP by their aggregated rank (Abdelfattah et al., ICLR 2021);
-- 3. train each of those for one epoch on 2,000 Fashion-MNIST images;
-- 4. train the best of them for two epochs on 6,000 and report its test
--    accuracy.
--
-- naswot and zen are the defaults because on this space they rank cells
-- best among the proxies that need no gradient: Spearman 0.74 and 0.67
-- against the published CIFAR-10 validation accuracy over 150 random cells
-- at this scale (jacob_cov 0.63, snip 0.39, grad_norm 0.41).
local candidates = math.tointeger(tonumber(arg[1] or "300"))
local top = math.tointeger(tonumber(arg[2] or "5"))
local proxies = {}
for name in (arg[3] or "naswot,zen"):gmatch("[^,]+") do proxies[#proxies + 1] = name end
local threads = math.tointeger(tonumber(arg[4] or "0"))
assert(candidates and candidates >= 1 and top and top >= 1 and threads,
       "usage: proxy-then-train.lua [CANDIDATES] [TOP] [PROXIES] [THREADS]")

-- Paths in options are relative to this script, as in a YAML file.
local space = sieve.space("lua", {script = "../../search_spaces/nb201.lua",
                                  options = {C = 8, N = 1, in_channels = 1, size = 28}})
local function trainer(options)
  options.dataset, options.batch_size, options.lr, options.threads = "fashion-mnist", 64, 0.05, threads
  return sieve.evaluator("train", space, options)
end
local short = trainer{train_limit = 2000, validation = 1000, test = false, epochs = 1}
local long = trainer{train_limit = 6000, validation = 2000, test = true, epochs = 2}

-- 1. Sample, and keep one cell per function.
local rng = sieve.rng(1)
local pool, seen, texts = {}, {}, {}
local duplicates = 0
for _ = 1, candidates do
  local g = space:sample(rng)
  local text = g:format()
  if not texts[text] then
    texts[text] = true
    local h = space:hash(g, "functional")
    if seen[h] then
      duplicates = duplicates + 1
    else
      seen[h] = true
      pool[#pool + 1] = {genotype = g, text = text}
    end
  end
end
print(string.format("sampled %d cells: %d distinct functions (%d duplicates dropped)", candidates, #pool, duplicates))

-- 2. Screen with the proxies.
local clock = os.clock()
local rows = {}
for i, c in ipairs(pool) do
  local net = space:build(c.genotype)
  c.params = net.params
  c.scores = sieve.proxies(net, proxies, {batch = 32, seed = 1, threads = threads})
  rows[i] = {}
  for k, name in ipairs(proxies) do rows[i][k] = c.scores[name] end
end
local ranks = sieve.rank_aggregate(rows)
for i, c in ipairs(pool) do c.rank = ranks[i] end
table.sort(pool, function(a, b)
  if a.rank ~= b.rank then return a.rank > b.rank end
  return a.text < b.text
end)
print(string.format("screened %d cells with %s in %.2f s; the top %d go on", #pool, table.concat(proxies, "+"),
                    os.clock() - clock, math.min(top, #pool)))

-- 3. Train the top few briefly.
local finalists = {}
for i = 1, math.min(top, #pool) do
  local c = pool[i]
  local r = short:evaluate(c.genotype)
  assert(r.ok, r.reason)
  c.short_acc = r.metrics.val_acc
  finalists[#finalists + 1] = c
  local scores = {}
  for _, name in ipairs(proxies) do scores[#scores + 1] = string.format("%s=%.4g", name, c.scores[name]) end
  print(string.format("short  %d  val_acc=%.4f  params=%d  %s  %s", i, c.short_acc, c.params,
                      table.concat(scores, " "), c.text))
end
table.sort(finalists, function(a, b) return a.short_acc > b.short_acc end)

-- 4. Train the best longer.
local best = finalists[1]
local r = long:evaluate(best.genotype)
assert(r.ok, r.reason)
print(string.format("best   val_acc=%.4f  test_acc=%.4f  params=%d  epochs=%g  %s", r.metrics.val_acc,
                    r.metrics.test_acc, r.metrics.params, r.metrics.epochs, best.text))
