-- Networks from Lua: the graph-building API, graph userdata (params, flops,
-- nodes, dump), space:build, Lua spaces that build networks, and the Lua
-- NAS-Bench-201 space (search_spaces/nb201.lua) against the C plugin.
-- Run by meson through `sieve lua`.  Args: SOURCE_ROOT
local T = require("sieve.testing")
local root = assert(arg[1], "usage: sieve lua test_graph.lua SOURCE_ROOT")
local nb201_lua = root .. "/search_spaces/nb201.lua"

-- The line of the caller, to check that errors point at the script.
-- (error() at level 3 prefixes the line that called here(); no debug library needed)
local function here() return tonumber(select(2, pcall(error, "@", 3)):match(":(%d+): @$")) end

T.test("a small network: shapes, parameters and FLOPs by hand", function()
  local g = sieve.graph.new("tiny")
  T.eq(g.name, "tiny")
  T.eq(g.finished, false)
  local x = g:input(3, 32, 32)
  T.eq(x, 0, "nodes are numbered from 0, as the dump prints them")
  local c = g:conv2d(x, {out = 16, kernel = 3, pad = 1, label = "conv"})
  T.eq(select("#", g:shape(c)), 3)
  local ch, h, w = g:shape(c)
  T.eq(ch, 16) T.eq(h, 32) T.eq(w, 32)
  local s = g:conv2d(c, {out = 32, kernel = {3, 1}, stride = {2, 1}, pad = {1, 0}, bias = true})
  ch, h, w = g:shape(s)
  T.eq(ch, 32) T.eq(h, 16) T.eq(w, 32)
  local b = g:batch_norm(s)
  local r = g:relu(b)
  local p = g:max_pool(r, {kernel = 2})
  ch, h, w = g:shape(p)
  T.eq(h, 8, "pool stride defaults to the kernel") T.eq(w, 16)
  local dead = g:conv2d(p, {out = 64, kernel = 1}) -- reaches no output: counts nothing
  local gap = g:global_avg_pool(p)
  local out = g:linear(gap, {out = 10})
  T.eq(#g, 9)
  T.raises("is not finished", function() return g.params end)
  T.eq(g:finish(out), g, "finish returns the graph")
  T.eq(g.output, out)
  T.eq(g.finished, true)
  local conv1 = 16 * 3 * 3 * 3
  local conv2 = 32 * 16 * 3 * 1 + 32
  local bn = 2 * 32
  local fc = 10 * 32 + 10
  T.eq(g.params, conv1 + bn + conv2 + fc)
  T.eq(g.flops, conv1 * 32 * 32 + (32 * 16 * 3 * 1) * 16 * 32 + 10 * 32, "flops are MACs of convs and linears")
  T.eq(g.macs, g.flops)
  T.eq(g:node(dead).live, false)
  T.eq(g:node(dead).params, 64 * 32)
  local n = g:node(s)
  T.eq(n.kind, "conv2d") T.eq(n.out, 32) T.eq(n.kernel[1], 3) T.eq(n.kernel[2], 1)
  T.eq(n.stride[1], 2) T.eq(n.pad[2], 0) T.eq(n.dilation[1], 1) T.eq(n.groups, 1) T.eq(n.bias, true)
  T.eq(n.inputs[1], c) T.eq(n.shape[1], 32) T.eq(n.live, true) T.eq(n.params, conv2)
  T.eq(g:node(c).label, "conv")
  T.eq(g:node(b).affine, true) T.near(g:node(b).eps, 1e-5) T.near(g:node(b).momentum, 0.1)
  T.eq(g:node(p).pool, "max")
  local dump = g:dump()
  T.truthy(dump:find("graph tiny: 9 nodes, output %8, params " .. g.params, 1, true), dump)
  T.truthy(dump:find('%1 = conv2d(%0) out=16 k=3x3 s=1,1 p=1,1 -> 16x32x32 params=432 "conv"', 1, true), dump)
  T.eq(tostring(g), string.format("sieve.graph 'tiny' (9 nodes, params %d, flops %d)", g.params, g.flops))
end)

T.test("every builder: add, concat, groups, dilation, activations, pools, identity, zero", function()
  local g = sieve.graph.new()
  T.eq(g.name, "lua")
  local x = g:input(8, 16, 16)
  local d = g:conv2d(x, {out = 8, kernel = 3, pad = 2, dilation = 2, groups = 4})
  T.eq(select(2, g:shape(d)), 16, "dilated conv keeps the extent")
  T.eq(g:node(d).params, 8 * 2 * 3 * 3, "grouped weights")
  local sum = g:add(x, d, g:identity(x))
  T.eq(#g:node(sum).inputs, 3)
  local cat = g:concat({sum, g:zero(x)}, {label = "cat"})
  T.eq((g:shape(cat)), 16)
  T.eq(g:node(cat).label, "cat")
  -- the list form without its options table
  T.eq(#g:node(g:add({x, d})).inputs, 2)
  T.eq((g:shape(g:concat({x, d}))), 16)
  for _, name in ipairs(sieve.graph.activations) do
    local a = g[name](g, cat)
    T.eq(g:node(a).activation, name)
    local b = g:activation(cat, name)
    T.eq(g:node(b).alpha, g:node(a).alpha)
  end
  T.near(g:node(g:leaky_relu(cat)).alpha, 0.01, 0, "PyTorch's default slope")
  T.near(g:node(g:elu(cat, {alpha = 0.5})).alpha, 0.5)
  local avg = g:pool(cat, {kind = "avg", kernel = 3, stride = 1, pad = 1})
  T.eq(g:node(avg).pool, "avg")
  T.eq(select(3, g:shape(avg)), 16)
  local bn = g:batch_norm(avg, {affine = false, eps = 1e-3, momentum = 0.3})
  T.eq(g:node(bn).params, 0)
  T.eq(g:label(bn, "norm"), bn)
  T.eq(g:node(bn).label, "norm")
  local y = g:linear(g:global_avg_pool(bn), {out = 3, bias = false})
  g:finish(y)
  T.eq(g.params, 8 * 2 * 9 + 3 * 16, "bias-free linear, non-affine norm")
  local copy = g:copy()
  T.eq(copy:dump(), g:dump(), "a copy is the same graph")
  T.eq(copy.finished, true)
end)

T.test("builder errors say where and what was expected", function()
  local g = sieve.graph.new("bad")
  local x = g:input(3, 8, 8)
  local line = here()
  local err = T.raises("kernel 9x9 does not fit input 8x8", function() g:conv2d(x, {out = 4, kernel = 9}) end)
  T.truthy(err:find("test_graph.lua:" .. (line + 1) .. ": graph bad: node 1 (conv2d)", 1, true), err)
  -- The graph keeps its first error: later builders and finish raise it.
  T.raises("kernel 9x9 does not fit", function() g:relu(x) end)
  T.raises("kernel 9x9 does not fit", function() g:finish(x) end)

  g = sieve.graph.new("opts")
  x = g:input(3, 8, 8)
  T.raises("conv2d: unknown option 'kernal' (did you mean 'kernel'?)", function() g:conv2d(x, {out = 4, kernal = 3}) end)
  T.raises("conv2d: option 'out' is required", function() g:conv2d(x, {kernel = 3}) end)
  T.raises("conv2d: option 'kernel' expects an integer >= 1, got 0", function() g:conv2d(x, {out = 4, kernel = 0}) end)
  T.raises("conv2d: option 'stride' expects an integer >= 1 or a pair", function()
    g:conv2d(x, {out = 4, kernel = 3, stride = {1}})
  end)
  T.raises("conv2d: option 'bias' expects true or false", function() g:conv2d(x, {out = 4, kernel = 1, bias = 1}) end)
  T.raises("option 'label' expects a string", function() g:relu(x, {label = 3}) end)
  T.raises("unknown activation 'rellu' (did you mean 'relu'?)", function() g:activation(x, "rellu") end)
  T.raises("pool: option 'kind' expects \"avg\" or \"max\"", function() g:pool(x, {kind = "min", kernel = 2}) end)
  T.raises("node 7 does not exist: graph 'opts' has nodes 0..0", function() g:relu(7) end)
  T.raises("expected a node (an integer 0..0), got table", function() g:relu({}) end)
  T.raises("add: input 2 is not a node of graph 'opts'", function() g:add({x, 5}) end)
  T.raises("add: needs at least one input node", function() g:add({}) end)
  -- Those errors were caught before the graph saw them: it still works.
  local y = g:relu(x)
  local line2 = here()
  err = T.raises("input 1 has shape 3x4x4, input 0 has 3x8x8", function()
    g:add(y, g:avg_pool(y, {kernel = 2}))
  end)
  T.truthy(err:find("test_graph.lua:" .. (line2 + 2) .. ":", 1, true), err)

  local h = sieve.graph.new("done")
  local z = h:input(1, 4, 4)
  h:finish(z)
  T.raises("graph 'done' is finished: it cannot take more nodes", function() h:relu(z) end)
  T.raises("node 0 does not exist: graph 'empty' has no nodes yet", function()
    local e = sieve.graph.new("empty")
    e:finish(0)
  end)
  T.raises("a graph has one input", function()
    local e = sieve.graph.new("two")
    e:input(1, 2, 2)
    e:input(1, 2, 2)
  end)
end)

T.test("space:build gives the C plugin's network", function()
  local nb = sieve.space("nb201")
  T.eq(nb:can_build(), true)
  local text = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
  local net = nb:build(text)
  T.eq(net.name, text)
  T.eq(net.finished, true)
  -- The published table's parameter count for this cell (arch 1): 0.802426 M.
  T.near(net.params / 1e6, 0.802426, 5e-7, "params of the published network")
  T.eq(nb:build(nb:parse(text)):dump(), net:dump(), "a genotype or its text")
  T.raises("builds no networks", function()
    sieve.space("hpo", {file = root .. "/search_spaces/branin.yaml"}):build({x1 = 0, x2 = 0})
  end)
  T.eq(sieve.space("hpo", {file = root .. "/search_spaces/branin.yaml"}):can_build(), false)
  T.raises("bad genotype", function() nb:build("|nonsense|") end)
end)

-- Lua spaces that build networks, registered in this host.
sieve.register_space{
  name = "chain",
  options = {depth = {type = "int", default = 2, min = 1, max = 8}, width = 4},
  probe = {width = 2},
  create = function(self, b)
    for i = 1, self.options.depth do b:categorical("op" .. i, {"conv", "pool", "skip"}) end
  end,
  build = function(self, g)
    local net = sieve.graph.new(g:format())
    local x = net:input(1, 8, 8)
    for i = 1, self.options.depth do
      local op = g:get("op" .. i)
      if op == "conv" then
        x = net:conv2d(x, {out = self.options.width, kernel = 3, pad = 1})
      elseif op == "pool" then
        x = net:avg_pool(x, {kernel = 3, stride = 1, pad = 1})
      else
        x = net:identity(x)
      end
    end
    return net:finish(net:linear(net:global_avg_pool(x), {out = 2}))
  end,
}

sieve.register_space{
  name = "broken_build",
  options = {mode = "nil"},
  create = function(self, b) b:categorical("k", {"a", "b"}) end,
  build = function(self, g)
    local mode = self.options.mode
    if mode == "unfinished" then
      local net = sieve.graph.new("half")
      net:input(1, 2, 2)
      return net
    elseif mode == "shape" then
      local net = sieve.graph.new("shape")
      local x = net:input(1, 2, 2)
      SHAPE_LINE = here() + 1
      return net:finish(net:conv2d(x, {out = 1, kernel = 5}))
    elseif mode == "string" then
      return "a network"
    end
  end,
}

-- Decision names the genotype text (name=value,...) cannot read back.
sieve.register_space{
  name = "bad_names",
  options = {name = "a=b,c"},
  create = function(self, b)
    BAD_NAME_LINE = here() + 1
    b:categorical(self.options.name, {"x", "y"})
  end,
}

sieve.register_space{
  name = "no_build",
  create = function(self, b) b:int("n", 1, 3) end,
}

T.test("a decision name holding ',' or '=' is refused where the script declares it", function()
  for _, case in ipairs({{"a=b,c", "'='"}, {"a,b", "','"}}) do
    local err = T.raises("decision name '" .. case[1] .. "' holds " .. case[2], function()
      sieve.space("bad_names", {name = case[1]})
    end)
    T.truthy(err:find("test_graph.lua:" .. BAD_NAME_LINE .. ":", 1, true), "the error names the line: " .. err)
  end
  -- Any other name round-trips through the genotype text.
  local sp = sieve.space("bad_names", {name = "a.b-c d%e"})
  T.eq(sp:format(sp:parse("a.b-c d%e=y")), "a.b-c d%e=y")
end)

T.test("a Lua space builds networks through the C space API", function()
  local chain = sieve.space("chain", {depth = 3, width = 6})
  T.eq(chain:can_build(), true)
  local net = chain:build({op1 = "conv", op2 = "pool", op3 = "conv"})
  T.eq(net.name, "op1=conv,op2=pool,op3=conv")
  T.eq(net.params, 6 * 1 * 9 + 6 * 6 * 9 + 2 * 6 + 2)
  -- A space without build() says so, like a hyper-parameter space.
  local nb = sieve.space("no_build")
  T.eq(nb:can_build(), false)
  T.raises("builds no networks", function() nb:build({n = 2}) end)
  T.raises("build(): returned graph 'half', which is not finished", function()
    sieve.space("broken_build", {mode = "unfinished"}):build({k = "a"})
  end)
  T.raises("build(): must return a sieve.graph, got string", function()
    sieve.space("broken_build", {mode = "string"}):build({k = "a"})
  end)
  T.raises("build(): must return a sieve.graph, got nil", function()
    sieve.space("broken_build", {mode = "nil"}):build({k = "a"})
  end)
  local err = T.raises("kernel 5x5 does not fit input 2x2", function()
    sieve.space("broken_build", {mode = "shape"}):build({k = "a"})
  end)
  T.truthy(err:find("test_graph.lua:" .. SHAPE_LINE .. ":", 1, true), "the error names the build() line: " .. err)
  T.truthy(err:find("space 'broken_build', build()", 1, true), err)
end)

T.test("registration checks build and probe", function()
  T.raises("'build' of 'x' must be a function", function()
    sieve.register_space{name = "x", create = function() end, build = 3}
  end)
  T.raises("'probe' of 'y': 'widht' is not one of its options", function()
    sieve.register_space{name = "y", options = {width = 2}, create = function() end, probe = {widht = 1}}
  end)
  T.raises("'probe' of 'z' must be a table", function()
    sieve.register_space{name = "z", create = function() end, probe = 3}
  end)
end)

-- ---- the Lua NAS-Bench-201 space against the C plugin ----------------------------

local function both(options)
  return sieve.space("nb201", options), sieve.space("lua", {script = nb201_lua, options = options})
end

T.test("nb201.lua: the same decisions and arch strings as the C plugin", function()
  local c, l = both({})
  T.eq(#l, #c)
  for i, d in ipairs(c:decisions()) do
    local e = l:decisions()[i]
    T.eq(e.name, d.name)
    T.eq(table.concat(e.choices, ","), table.concat(d.choices, ","))
  end
  T.eq(l:can_build(), true)
  -- Every cell: the same text both ways, and each parses the other's.
  local rng = sieve.rng(5)
  local n = 0
  for a = 0, 5 ^ 6 - 1 do
    local values, k = {}, a
    for _, d in ipairs(c:decisions()) do
      values[d.name] = d.choices[k % 5 + 1]
      k = k // 5
    end
    local gc, gl = c:genotype(values), l:genotype(values)
    local text = gc:format()
    T.eq(gl:format(), text)
    T.eq(l:parse(text), gl)
    n = n + 1
  end
  T.eq(n, 15625)
  -- Malformed strings: both refuse, with the same message.
  local bad = {"", "x", "|none~0|", "|none~0|+x", "||+", "|~0|", "|nonee~0|+|none~0|none~1|+|none~0|none~1|none~2|",
               "|none~1|+|none~0|none~1|+|none~0|none~1|none~2|", "|none~00|+|none~0|none~1|+|none~0|none~1|none~2|",
               "|none~0+|none~0|none~1|+|none~0|none~1|none~2|", "|none~0|+|none~0|none~1|",
               "|none~0|+|none~0|none~1|none~2|+|none~0|none~1|none~2|",
               "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|+", "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|x",
               "|none~0|+|none~0|+|none~0|none~1|none~2|", "|none~0|+|none~0|none~1|+|none~0|none~1|none~2| ",
               "|none~0|x+|none~0|none~1|+|none~0|none~1|none~2|",
               "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|none~3|"}
  for _, text in ipairs(bad) do
    local ok1, e1 = pcall(c.parse, c, text)
    local ok2, e2 = pcall(l.parse, l, text)
    T.eq(ok1, false, text) T.eq(ok2, false, text)
    T.eq(e2:gsub("space 'lua'", "space 'nb201'"), e1, "message for " .. text)
  end
  T.raises("option 'size': 30 is not a multiple of 4", function()
    sieve.space("lua", {script = nb201_lua, options = {size = 30}})
  end)
  T.raises("option 'C' expects", function() sieve.space("lua", {script = nb201_lua, options = {C = 0}}) end)
end)

T.test("nb201.lua builds the C plugin's network for every cell (C=8, N=1, Fashion-MNIST shape)", function()
  local c, l = both({C = 8, N = 1, in_channels = 1, size = 28})
  local ops = c:decision(1).choices
  for a = 0, 5 ^ 6 - 1 do
    local values, k = {}, a
    for e = 1, 6 do
      values[c:decision(e).name] = ops[k % 5 + 1]
      k = k // 5
    end
    local nc, nl = c:build(values), l:build(values)
    -- The dump holds every node's operation, inputs, attributes, shape and
    -- label, the name, and the totals: equal dumps are equal graphs.
    if nc:dump() ~= nl:dump() then
      error("graphs differ for " .. nc.name .. "\nC:\n" .. nc:dump() .. "\nLua:\n" .. nl:dump())
    end
  end
end)

T.test("nb201.lua at the benchmark's scale matches the C plugin and the published table", function()
  local c, l = both({})
  local rng = sieve.rng(11)
  for _ = 1, 60 do
    local g = c:sample(rng)
    local nc, nl = c:build(g), l:build(g:format())
    T.eq(nl.params, nc.params, g:format())
    T.eq(nl.flops, nc.flops, g:format())
    T.eq(nl:dump(), nc:dump(), g:format())
  end
  local c2, l2 = both({C = 4, N = 3, in_channels = 2, size = 16, classes = 7})
  for _ = 1, 40 do
    local g = c2:sample(rng)
    T.eq(l2:build(g:format()):dump(), c2:build(g):dump(), g:format())
  end
end)

T.test("graph:hash and space:hash: the C library's hashes, as text", function()
  local nb = sieve.space("nb201")
  local text = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
  local net = nb:build(text)
  local h = net:hash()
  T.truthy(h:match("^%x+$") and #h == 32, h)
  T.eq(net:hash("structural"), h)
  T.eq(nb:hash(text), h, "a candidate's structural hash is its network's")
  T.eq(net:copy():hash(), h)
  -- The functional hash of a space's candidate runs at its probe scale
  -- (C=4, N=1, 16x16 for nb201); graph:hash runs the graph it is given.
  local probe = sieve.space("nb201", {C = 4, N = 1, size = 16})
  T.eq(nb:hash(text, "functional"), probe:build(text):hash("functional"))
  T.eq(probe:build(text):hash("functional", {threads = 2}), probe:build(text):hash("functional"),
       "threads never change it")
  -- A cell whose output ignores the input: every such network is one class.
  local zero = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
  T.eq(nb:hash(zero, "functional"), sieve.graph.degenerate_hash)
  T.eq(#sieve.graph.degenerate_hash, 32)
  -- The same network written in another order: a sum's inputs are ordered
  -- canonically, so both hash equal structurally.
  local g = sieve.graph.new("a")
  local x = g:input(2, 8, 8)
  local a = g:conv2d(x, {out = 2, kernel = 1})
  local b = g:avg_pool(x, {kernel = 3, stride = 1, pad = 1})
  g:finish(g:linear(g:global_avg_pool(g:add(a, b)), {out = 2}))
  local k = sieve.graph.new("b")
  x = k:input(2, 8, 8)
  b = k:avg_pool(x, {kernel = 3, stride = 1, pad = 1})
  a = k:conv2d(x, {out = 2, kernel = 1})
  k:finish(k:linear(k:global_avg_pool(k:add(b, a)), {out = 2}))
  T.eq(g:hash(), k:hash(), "node order and a sum's input order do not matter")
  T.truthy(g:hash() ~= nb:build(zero):hash())
  T.raises("expected \"structural\" or \"functional\", got \"funky\"", function() net:hash("funky") end)
  T.raises("hash: unknown option 'bach' (did you mean 'batch'?)", function() net:hash("functional", {bach = 2}) end)
  T.raises("batch and threads are options of the functional hash", function() net:hash("structural", {batch = 2}) end)
  T.raises("is not finished", function()
    local u = sieve.graph.new("u")
    u:input(1, 2, 2)
    u:hash()
  end)
  T.raises("builds no networks", function()
    sieve.space("hpo", {file = root .. "/search_spaces/branin.yaml"}):hash({x1 = 0, x2 = 0})
  end)
end)

T.test("nb201.lua hashes equal to the C plugin's: structural for every cell, functional at the probe scale", function()
  local c, l = both({C = 8, N = 1, in_channels = 1, size = 28})
  local ops = c:decision(1).choices
  local classes_c, classes_l, n_c, n_l = {}, {}, 0, 0
  for a = 0, 5 ^ 6 - 1 do
    local values, k = {}, a
    for e = 1, 6 do
      values[c:decision(e).name] = ops[k % 5 + 1]
      k = k // 5
    end
    local hc, hl = c:hash(values), l:hash(values)
    if hc ~= hl then error("structural hashes differ for " .. c:genotype(values):format()) end
    if not classes_c[hc] then classes_c[hc], n_c = true, n_c + 1 end
    if not classes_l[hl] then classes_l[hl], n_l = true, n_l + 1 end
  end
  T.eq(n_l, n_c, "the same classes")
  T.truthy(n_c < 15625, "the structural hash merges equal cells (" .. n_c .. " classes)")
  -- Both at their probe scale (C=4, N=1, 16x16) whatever their own C, N and
  -- size (the input channels and classes stay theirs).
  local big_c, big_l = both({C = 16, N = 5, in_channels = 1, size = 32})
  local rng = sieve.rng(21)
  for _ = 1, 150 do
    local text = c:sample(rng):format()
    local f = c:hash(text, "functional")
    T.eq(l:hash(text, "functional"), f, text)
    T.eq(big_l:hash(text, "functional"), f, "the probe scale, not the space's: " .. text)
    T.eq(big_c:hash(text, "functional"), f)
  end
end)

T.test("sieve.proxies: scores of an untrained network, by name", function()
  local list = sieve.proxy_list()
  local known = {}
  for _, p in ipairs(list) do
    T.truthy(type(p.help) == "string" and #p.help > 0, p.name .. " has a help line")
    T.eq(type(p.needs_data), "boolean")
    known[p.name] = p
  end
  for _, name in ipairs({"naswot", "zen", "snip", "params", "flops"}) do T.truthy(known[name], name .. " is listed") end
  local nb = sieve.space("nb201", {C = 4, N = 1, in_channels = 1, size = 16})
  local net = nb:build("|nor_conv_3x3~0|+|skip_connect~0|nor_conv_1x1~1|+|avg_pool_3x3~0|none~1|nor_conv_3x3~2|")
  local names = {"naswot", "snip", "params", "flops"}
  local scores, ms = sieve.proxies(net, names, {batch = 8, seed = 3, threads = 1})
  for _, name in ipairs(names) do
    T.eq(math.type(scores[name]), "float", name)
    T.truthy(scores[name] == scores[name], name .. " is a number")
    T.truthy(ms[name] >= 0, name .. " has a time")
  end
  T.eq(scores.params, net.params, "the params proxy is the graph's count")
  T.eq(scores.flops, net.flops, "the flops proxy is the graph's MACs")
  local again = sieve.proxies(net, names, {batch = 8, seed = 3, threads = 1})
  for _, name in ipairs(names) do T.eq(again[name], scores[name], name .. " for the same seed") end
  T.truthy(sieve.proxies(net, "snip", {batch = 8, seed = 4, threads = 1}).snip ~= scores.snip,
           "another seed, another batch and initialisation")
  T.eq(sieve.proxies(net, "naswot", {batch = 8, seed = 3, threads = 1}).naswot, scores.naswot,
       "a proxy alone scores as in company")
  local on_cpu = sieve.proxies(net, names, {batch = 8, seed = 3, threads = 1, device = "cpu"})
  for _, name in ipairs(names) do T.eq(on_cpu[name], scores[name], name .. " on device cpu, the default") end
  T.raises("proxies: option 'device' expects cpu, cuda or auto, got gpu",
           function() sieve.proxies(net, "params", {device = "gpu"}) end)
  T.raises("proxies: option 'device' expects cpu, cuda or auto, got number",
           function() sieve.proxies(net, "params", {device = 1}) end)
  T.raises('unknown proxy "synflo', function() sieve.proxies(net, {"synflo"}) end)
  T.raises("proxies: unknown option 'bach' (did you mean 'batch'?)", function() sieve.proxies(net, "params", {bach = 2}) end)
  T.raises("proxies: option 'batch' expects an integer", function() sieve.proxies(net, "params", {batch = "x"}) end)
  T.raises("proxy 2 of the list is a number, not a name", function() sieve.proxies(net, {"params", 3}) end)
  T.raises("no proxy named", function() sieve.proxies(net, {}) end)
  T.raises("is not finished", function()
    local u = sieve.graph.new("u")
    u:input(1, 2, 2)
    sieve.proxies(u, "params")
  end)
end)

T.test("sieve.rank_aggregate: mean ranks, 0 the worst, NaN lowest", function()
  local r = sieve.rank_aggregate({{1, 5}, {2, 6}, {3, 4}})
  T.eq(#r, 3)
  T.near(r[1], 0.5) T.near(r[2], 1.5) T.near(r[3], 1.0)
  r = sieve.rank_aggregate({{1, 5}, {2, 6}, {3, 4}}, {3, 1})
  T.near(r[1], 0.25) T.near(r[2], 1.25) T.near(r[3], 1.5)
  r = sieve.rank_aggregate({{0 / 0}, {-1}, {}})
  T.near(r[2], 2, 0, "a number beats NaN and a missing score")
  T.near(r[1], 0.5) T.near(r[3], 0.5)
  T.eq(#sieve.rank_aggregate({}), 0)
  T.raises("row 2 has 3 scores, row 1 has 2", function() sieve.rank_aggregate({{1, 2}, {1, 2, 3}}) end)
  T.raises("2 weights for 1 scores per row", function() sieve.rank_aggregate({{1}, {2}}, {1, 2}) end)
  T.raises("score 1 of row 1 is a string", function() sieve.rank_aggregate({{"a"}}) end)
  local ok, err = pcall(function() sieve.rank_aggregate({{1, 2}, {3, 4}}, {0, 0}) end)
  T.eq(ok, false)
  T.truthy(err:find("test_graph%.lua:%d+: rank_aggregate: the weights sum to 0; at least one must be > 0"), err)
  T.raises("rank_aggregate: weight 1 is nan; weights are finite numbers >= 0", sieve.rank_aggregate,
           {{1, 2}, {3, 4}}, {0 / 0 > 0 and 0 or math.abs(0 / 0), -1})
  T.raises("rank_aggregate: weight 2 is -1.0; weights are finite", sieve.rank_aggregate, {{1, 2}, {3, 4}}, {1, -1})
  T.raises("rank_aggregate: weight 1 is inf", sieve.rank_aggregate, {{1, 2}, {3, 4}}, {math.huge, 1})
  T.raises("rank_aggregate: weight 1 is a string, not a number", sieve.rank_aggregate, {{1}}, {"x"})
end)

T.test("graphs dropped in a loop are collected as they go", function()
  -- The collector is told about the nodes held in C; otherwise it sees small
  -- boxes only and lets thousands of dropped networks pile up (3,975 of
  -- 5,000 were still uncollected here before it was told).
  local c = sieve.space("nb201")
  local g = c:sample(sieve.rng(1))
  collectgarbage()
  local alive = setmetatable({}, {__mode = "k"})
  for _ = 1, 5000 do alive[c:build(g)] = true end
  local n = 0
  for _ in pairs(alive) do n = n + 1 end
  T.truthy(n < 500, n .. " of 5000 dropped networks still uncollected")
  for _ = 1, 5000 do
    local net = sieve.graph.new("x")
    local x = net:input(1, 4, 4)
    for _ = 1, 50 do x = net:relu(x) end
    alive[net:finish(x)] = true
  end
  n = 0
  for _ in pairs(alive) do n = n + 1 end
  T.truthy(n < 500, n .. " of 5000 dropped Lua-built networks still uncollected")
end)

-- The mobilenet plugin's network rebuilt by hand with the graph API: an
-- MBConv block (expand, depthwise, SE with g:mul and hard_sigmoid,
-- hard-swish, project, residual) has the plugin's parameters and MACs.
T.test("mobilenet: a network built in Lua has the plugin's counts", function()
  local opts = {in_channels = 1, size = 28, stem_channels = 16, first_channels = 8, stages = "16:2:2",
                last_channels = 32}
  local text = "k5_e3_se,k3_e6_hs"
  local net = sieve.space("mobilenet", opts):build(text)
  local g = sieve.graph.new("mobilenet by hand")
  local function conv_bn(x, out, k, stride, groups, act)
    x = g:batch_norm(g:conv2d(x, {out = out, kernel = k, stride = stride, pad = k // 2, groups = groups}))
    if act then x = g:activation(x, act) end
    return x
  end
  local function mbconv(x, cin, cout, k, e, stride, se, act)
    local mid = cin * e
    local h = x
    if e ~= 1 then h = conv_bn(h, mid, 1, 1, 1, act) end
    h = conv_bn(h, mid, k, stride, mid, act)
    if se then
      local s = g:conv2d(g:global_avg_pool(h), {out = 8, kernel = 1, bias = true}) -- make_divisible(mid / 4, 8)
      s = g:hard_sigmoid(g:conv2d(g:relu(s), {out = mid, kernel = 1, bias = true}))
      h = g:mul(h, s)
    end
    h = conv_bn(h, cout, 1, 1, 1, nil)
    if stride == 1 and cin == cout then h = g:add(x, h) end
    return h
  end
  local x = conv_bn(g:input(1, 28, 28), 16, 3, 1, 1, "relu")
  x = mbconv(x, 16, 8, 3, 1, 1, false, "relu")
  x = mbconv(x, 8, 16, 5, 3, 2, true, "relu")
  x = mbconv(x, 16, 16, 3, 6, 1, false, "hard_swish")
  x = g:linear(g:global_avg_pool(conv_bn(x, 32, 1, 1, 1, "relu")), {out = 10})
  g:finish(x)
  T.eq(g.params, net.params)
  T.eq(g.flops, net.flops)
  T.eq(g:hash("structural"), net:hash("structural"), "the very same network")
end)

T.test("the train evaluator trains a Lua space's network from Lua", function()
  local space = sieve.space("lua", {script = nb201_lua, options = {C = 4, N = 1, in_channels = 1, size = 28}})
  local ev = sieve.evaluator("train", space, {dataset = "fashion-mnist", train_limit = 512, validation = 256,
                                              test = false, epochs = 1, batch_size = 64, lr = 0.05, threads = 1})
  local text = "|nor_conv_3x3~0|+|skip_connect~0|nor_conv_1x1~1|+|skip_connect~0|none~1|avg_pool_3x3~2|"
  local r = ev:evaluate(text)
  T.eq(r.status, "ok", tostring(r.reason))
  T.eq(r.metrics.params, space:build(text).params, "the trained network is the one built")
  T.eq(r.metrics.macs, space:build(text).flops)
  T.truthy(r.metrics.val_acc >= 0 and r.metrics.val_acc <= 1, "an accuracy")
end)

T.done()
