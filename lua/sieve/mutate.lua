-- sieve.mutate: mutations of genotypes for evolutionary optimizers written in Lua.
--
--   local mutate = require("sieve.mutate")
--   local child = mutate.one(space, parent, rng)   -- a copy with one decision changed
--
-- One active decision, drawn uniformly, gets a different value: another
-- choice for a categorical, a neighbouring step for an int, a Gaussian step
-- of a tenth of the range (on a log scale where the decision is log) for a
-- float.  Decisions a changed parent switches on get random values, those it
-- switches off are cleared (genotype:repair).
local M = {}

local function active_decisions(space, g)
  local out = {}
  for _, d in ipairs(space:decisions()) do
    if g:is_active(d.index) then out[#out + 1] = d end
  end
  return out
end

local function clamp(v, lo, hi)
  if v < lo then return lo elseif v > hi then return hi else return v end
end

function M.value(d, current, rng)
  if d.kind == "categorical" then
    if #d.choices == 1 then return current end
    local k = rng:int(1, #d.choices - 1)
    for i, c in ipairs(d.choices) do
      if c == current then
        if k >= i then k = k + 1 end
        break
      end
    end
    return d.choices[k]
  elseif d.kind == "int" then
    if d.low == d.high then return current end
    local step = rng:uniform() < 0.5 and -1 or 1
    local v = current + step
    if v < d.low or v > d.high then v = current - step end
    return v
  else
    if d.log then
      local lo, hi = math.log(d.low), math.log(d.high)
      return math.exp(clamp(math.log(current) + rng:normal(0, (hi - lo) / 10), lo, hi))
    end
    return clamp(current + rng:normal(0, (d.high - d.low) / 10), d.low, d.high)
  end
end

function M.one(space, parent, rng)
  local child = parent:copy()
  local decisions = active_decisions(space, parent)
  local d = decisions[rng:int(1, #decisions)]
  child:set(d.index, M.value(d, parent:get(d.index), rng))
  return child:repair(rng)
end

return M
