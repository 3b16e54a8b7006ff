-- The functional hash never splits what the structural hash joins, in every
-- space that builds networks and at several of its settings: a property test
-- over random genotypes and their mutants (below), which is where equal
-- structures turn up (an unused decision, a zero, a skipped block; in darts
-- twin nodes, built on purpose).  The
-- functional hash runs at the space's probe scale; a probe with a part the
-- network lacks (darts at 2 cells, all of them reduction cells, probed with a
-- normal cell) breaks it.  Each setting must find some equal pairs, so that
-- the test cannot pass by meeting none.
-- Run by meson through `sieve lua`.  Args: SOURCE_ROOT
local T = require("sieve.testing")
local root = assert(arg[1], "usage: test_hash_spaces.lua SOURCE_ROOT")

-- changes 1 or 2: that many decisions take another random genotype's
-- value; 3: two decisions with the same choices swap their values (a block
-- and a skip of one mobilenet stage: one network).
local function mutant(space, g, rng, changes)
  local h = g:copy()
  local d = space:decisions()
  if changes == 3 then
    local a, b = d[rng:int(1, #d)], d[rng:int(1, #d)]
    local va, vb = g:get(a.name), g:get(b.name)
    if a.choices == nil or b.choices == nil or table.concat(a.choices, ",") ~= table.concat(b.choices, ",") or
       va == nil or vb == nil or not (h:is_active(a.name) and h:is_active(b.name)) then
      return nil
    end
    h:set(a.name, vb)
    h:set(b.name, va)
    changes = 0
  end
  for _ = 1, changes do
    local other = space:sample(rng)
    local name = d[rng:int(1, #d)].name
    local v = other:get(name)
    if v ~= nil and h:is_active(name) then h:set(name, v) end
  end
  if not space:validate(h) then return nil end
  return h
end

-- mobilenet: a skip moved to another position of its stage (after the
-- first), the blocks keeping their order: one network.
local function skip_moved(space, g, rng)
  local stages = {}
  for stage in (g:format() .. "/"):gmatch("([^/]*)/") do stages[#stages + 1] = stage end
  local where = {} -- {stage, position} of each skip
  for s, stage in ipairs(stages) do
    local b = 0
    for block in (stage .. ","):gmatch("([^,]*),") do
      b = b + 1
      if block == "skip" then where[#where + 1] = {s, b} end
    end
  end
  if #where == 0 then return nil end
  local s, from = table.unpack(where[rng:int(1, #where)])
  local blocks = {}
  for b in (stages[s] .. ","):gmatch("([^,]*),") do blocks[#blocks + 1] = b end
  table.remove(blocks, from)
  table.insert(blocks, rng:int(2, #blocks + 1), "skip")
  stages[s] = table.concat(blocks, ",")
  return space:parse(table.concat(stages, "/"))
end

local function check(label, space, draws, min_equal, extra)
  local rng = sieve.rng(7)
  local equal, pairs_ = 0, 0
  for _ = 1, draws do
    local g = space:sample(rng)
    for changes = 1, extra and 4 or 3 do
      local base, h = g, nil
      if changes == 4 then
        local a, b = extra(space, g, rng)
        if b ~= nil then base, h = a, b else h = a end -- a pair built on purpose, or a mutant of g
      else
        h = mutant(space, g, rng, changes)
      end
      local gs = space:hash(base, "structural")
      if h ~= nil and h ~= base then
        pairs_ = pairs_ + 1
        if space:hash(h, "structural") == gs then
          equal = equal + 1
          T.eq(space:hash(h, "functional"), space:hash(base, "functional"),
               string.format("%s: %s and %s have one structural hash but two functional ones", label,
                             base:format(), h:format()))
        end
      end
    end
  end
  T.truthy(equal >= min_equal, string.format("%s: only %d structurally equal pairs of %d (wanted %d)", label, equal,
                                            pairs_, min_equal))
end

T.test("nb201", function()
  check("nb201 C=4 N=1", sieve.space("nb201", {C = 4, N = 1}), 30, 3)
  check("nb201 C=8 N=2 size=8", sieve.space("nb201", {C = 8, N = 2, size = 8}), 20, 2)
end)

-- darts: twin nodes.  Node 3 of a cell given node 2's two edges computes
-- what node 2 does (Liu et al., "DARTS", ICLR 2019: a node is the sum of
-- its two edges), so node 4 reading node 2 or node 3 is one network, the
-- other edges unchanged: a pair (both returned) that the structural hash
-- joins at every number of cells, where random mutants of 3 or more cells
-- meet none.  (A node's two edges in the other order are one genotype:
-- parse writes them in one order.)
local function twin_nodes(space, g, rng)
  local text = g:format()
  local cell = rng:int(1, 2) == 1 and "normal" or "reduce"
  local edges = {}
  for op, input in text:match(cell .. "=(%b[])"):gmatch("%('([%w_]+)', (%d+)%)") do
    edges[#edges + 1] = {op, tonumber(input)}
  end
  edges[3], edges[4] = edges[1], edges[2]
  if edges[5][2] >= 2 then edges[5] = {edges[5][1], 0} end
  local function with(input)
    local list = {}
    for i, e in ipairs(edges) do
      list[i] = string.format("('%s', %d)", e[1], i == 6 and input or e[2])
    end
    return space:parse((text:gsub(cell .. "=%b[]", cell .. "=[" .. table.concat(list, ", ") .. "]", 1)))
  end
  return with(2), with(3)
end

T.test("darts: every number of cells against its probe", function()
  -- 1 and 2 cells are reduction cells only (the normal cell is unused);
  -- 3, 4, 5 and 6 or more put the cells in different situations.
  for _, layers in ipairs({1, 2, 3, 4, 5, 8}) do
    local min = layers <= 2 and 5 or 12 -- from 3 cells on: every twin pair (12 draws)
    check("darts layers=" .. layers, sieve.space("darts", {layers = layers, C = 4, size = 16}), 12, min, twin_nodes)
  end
end)

T.test("darts: the probe keeps the networks it must keep apart", function()
  -- The normal cell with inputs 0 and 1 swapped: one network in a first cell
  -- (both inputs are the stem), another in any later normal cell.  At 3
  -- cells the only normal cell is the first; from 4 on the networks differ.
  local R = "[('max_pool_3x3', 0), ('max_pool_3x3', 1), ('skip_connect', 2), ('max_pool_3x3', 1), " ..
            "('max_pool_3x3', 0), ('skip_connect', 2), ('skip_connect', 2), ('max_pool_3x3', 1)]"
  local N1 = "[('sep_conv_3x3', 0), ('max_pool_3x3', 1), ('sep_conv_3x3', 0), ('sep_conv_3x3', 1), " ..
             "('sep_conv_3x3', 1), ('skip_connect', 0), ('skip_connect', 0), ('dil_conv_3x3', 2)]"
  local N2 = "[('sep_conv_3x3', 1), ('max_pool_3x3', 0), ('sep_conv_3x3', 1), ('sep_conv_3x3', 0), " ..
             "('sep_conv_3x3', 0), ('skip_connect', 1), ('skip_connect', 1), ('dil_conv_3x3', 2)]"
  local function text(n)
    return "Genotype(normal=" .. n .. ", normal_concat=[2, 3, 4, 5], reduce=" .. R .. ", reduce_concat=[2, 3, 4, 5])"
  end
  for _, layers in ipairs({3, 4, 5, 6, 8, 20}) do
    local space = sieve.space("darts", {layers = layers})
    local same = layers == 3
    T.eq(space:hash(text(N1), "structural") == space:hash(text(N2), "structural"), same, "structural, layers=" .. layers)
    T.eq(space:hash(text(N1), "functional") == space:hash(text(N2), "functional"), same, "functional, layers=" .. layers)
  end
end)

T.test("nb101", function()
  check("nb101 cells=1", sieve.space("nb101", {stem_channels = 8, stacks = 1, cells = 1, size = 8}), 20, 1)
  check("nb101 default", sieve.space("nb101", {}), 15, 1)
end)

T.test("mobilenet", function()
  check("mobilenet default", sieve.space("mobilenet", {}), 30, 3, skip_moved)
  check("mobilenet narrow", sieve.space("mobilenet", {width = 0.1, size = 8, se = "search", activation = "relu"}), 30, 3, skip_moved)
end)

T.test("compose and a Lua space", function()
  check("compose nb201+hpo", sieve.space("compose", {parts = {{plugin = "nb201", C = 4, N = 1},
    {plugin = "hpo", parameters = {batch_size = {"64", "128"}}}}}), 20, 3)
  check("lua nb201", sieve.space("lua", {script = root .. "/search_spaces/nb201.lua", options = {C = 4, N = 2}}), 20, 3)
end)

T.done()
