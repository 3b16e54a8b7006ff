-- The DARTS network written op by op with the Lua graph API (g:crop for the
-- factorized reduction), against the darts space plugin's build: equal
-- dumps (every node's operation, inputs, attributes, shape and label, and
-- the totals) for published and random genotypes at small scales.
-- Run by meson through `sieve lua`.  Args: SOURCE_ROOT
local T = require("sieve.testing")

local OPS = {"max_pool_3x3", "avg_pool_3x3", "skip_connect", "sep_conv_3x3", "sep_conv_5x5", "dil_conv_3x3",
             "dil_conv_5x5"}

-- DARTS-V2 (Liu et al., ICLR 2019; the authors' genotypes.py).
local V2 = {
  normal = {{"sep_conv_3x3", 0}, {"sep_conv_3x3", 1}, {"sep_conv_3x3", 0}, {"sep_conv_3x3", 1},
            {"sep_conv_3x3", 1}, {"skip_connect", 0}, {"skip_connect", 0}, {"dil_conv_3x3", 2}},
  reduce = {{"max_pool_3x3", 0}, {"max_pool_3x3", 1}, {"skip_connect", 2}, {"max_pool_3x3", 1},
            {"max_pool_3x3", 0}, {"skip_connect", 2}, {"skip_connect", 2}, {"max_pool_3x3", 1}},
}

local function genotype_text(cells)
  local parts = {}
  for _, kind in ipairs({"normal", "reduce"}) do
    local pairs_ = {}
    for _, p in ipairs(cells[kind]) do pairs_[#pairs_ + 1] = string.format("('%s', %d)", p[1], p[2]) end
    parts[#parts + 1] = string.format("%s=[%s], %s_concat=[2, 3, 4, 5]", kind, table.concat(pairs_, ", "), kind)
  end
  return "Genotype(" .. table.concat(parts, ", ") .. ")"
end

-- The network, as the paper's NetworkCIFAR, with the plugin's labels.
local function build(name, cells, o)
  local g = sieve.graph.new(name)
  local function conv(x, out, k, stride, pad, dil, groups, label)
    return g:conv2d(x, {out = out, kernel = k, stride = stride, pad = pad, dilation = dil, groups = groups,
                        label = label})
  end
  local function relu_conv_bn(x, out, p)
    x = g:relu(x, {label = p .. ".relu"})
    x = conv(x, out, 1, 1, 0, 1, 1, p .. ".conv")
    return g:batch_norm(x, {label = p .. ".bn"})
  end
  local function factorized_reduce(x, out, p)
    x = g:relu(x, {label = p .. ".relu"})
    local _, h, w = g:shape(x)
    local shifted = g:crop(x, {size = {h - 1, w - 1}, offset = 1, label = p .. ".shift"})
    local a = conv(x, out // 2, 1, 2, 0, 1, 1, p .. ".conv_1")
    local b = conv(shifted, out // 2, 1, 2, 0, 1, 1, p .. ".conv_2")
    return g:batch_norm(g:concat({a, b}, {label = p .. ".concat"}), {label = p .. ".bn"})
  end
  local function sep_dil(x, k, stride, dilated, p)
    local c = g:shape(x)
    local dil = dilated and 2 or 1
    local names = {{"relu", "dw", "pw", "bn"}, {"relu2", "dw2", "pw2", "bn2"}}
    for r = 1, dilated and 1 or 2 do
      x = g:relu(x, {label = p .. "." .. names[r][1]})
      x = conv(x, c, k, r == 1 and stride or 1, dil * (k - 1) // 2, dil, c, p .. "." .. names[r][2])
      x = conv(x, c, 1, 1, 0, 1, 1, p .. "." .. names[r][3])
      x = g:batch_norm(x, {label = p .. "." .. names[r][4]})
    end
    return x
  end
  local function edge(op, x, stride, p)
    if op == "max_pool_3x3" then return g:max_pool(x, {kernel = 3, stride = stride, pad = 1, label = p .. ".max_pool"}) end
    if op == "avg_pool_3x3" then return g:avg_pool(x, {kernel = 3, stride = stride, pad = 1, label = p .. ".avg_pool"}) end
    if op == "skip_connect" then
      if stride == 1 then return g:identity(x, {label = p .. ".skip"}) end
      return factorized_reduce(x, (g:shape(x)), p)
    end
    local k = tonumber(op:sub(-1))
    return sep_dil(x, k, stride, op:sub(1, 3) == "dil", p)
  end
  local x = g:input(o.in_channels, o.size, o.size)
  g:label(x, "stem.input")
  x = conv(x, 3 * o.C, 3, 1, 1, 1, 1, "stem.conv")
  x = g:batch_norm(x, {label = "stem.bn"})
  local s0, s1, c, reduction_prev = x, x, o.C, false
  for i = 0, o.layers - 1 do
    local reduction = i == o.layers // 3 or i == 2 * o.layers // 3
    if reduction then c = c * 2 end
    local p = "cell" .. i
    local genes = cells[reduction and "reduce" or "normal"]
    local states = {}
    states[0] = reduction_prev and factorized_reduce(s0, c, p .. ".pre0") or relu_conv_bn(s0, c, p .. ".pre0")
    states[1] = relu_conv_bn(s1, c, p .. ".pre1")
    for k = 0, 3 do
      local terms = {}
      for e = 1, 2 do
        local op, from = genes[2 * k + e][1], genes[2 * k + e][2]
        terms[e] = edge(op, states[from], (reduction and from < 2) and 2 or 1, p .. ".node" .. (k + 2) .. ".edge_" .. from)
      end
      states[k + 2] = g:add(terms, {label = p .. ".node" .. (k + 2)})
    end
    s0, s1 = s1, g:concat({states[2], states[3], states[4], states[5]}, {label = p .. ".concat"})
    reduction_prev = reduction
  end
  x = g:global_avg_pool(s1, {label = "head.pool"})
  x = g:linear(x, {out = o.classes, label = "head.linear"})
  return g:finish(x)
end

-- Each node's pair in ascending input order: the plugin's canonical order.
local function canonical(cells)
  local out = {}
  for _, kind in ipairs({"normal", "reduce"}) do
    out[kind] = {}
    for k = 0, 3 do
      local a, b = cells[kind][2 * k + 1], cells[kind][2 * k + 2]
      if a[2] > b[2] then a, b = b, a end
      out[kind][2 * k + 1], out[kind][2 * k + 2] = a, b
    end
  end
  return out
end

local function check(cells, o)
  local space = sieve.space("darts", o)
  local text = genotype_text(cells)
  local net = space:build(text)
  local mine = build(space:parse(text):format(), canonical(cells), o)
  if mine:dump() ~= net:dump() then
    error("graphs differ for " .. text .. "\nC:\n" .. net:dump() .. "\nLua:\n" .. mine:dump())
  end
  T.eq(mine.params, net.params, text)
  return net
end

T.test("DARTS-V2 from Lua is the plugin's network", function()
  local o = {C = 8, layers = 5, in_channels = 1, size = 28, classes = 10}
  local net = check(V2, o)
  -- The PyTorch peer (bench/torch_darts.py params ... --C 8 --layers 5 --in-ch 1 --size 28) counts 36,586.
  T.eq(net.params, 36586)
  check(V2, {C = 4, layers = 3, in_channels = 3, size = 16, classes = 10})
end)

T.test("random genotypes from Lua are the plugin's networks", function()
  local rng = sieve.rng(11)
  for _ = 1, 6 do
    local cells = {}
    for _, kind in ipairs({"normal", "reduce"}) do
      cells[kind] = {}
      for k = 0, 3 do
        local i = rng:int(0, k + 1)
        local j = rng:int(0, k)
        if j >= i then j = j + 1 end
        cells[kind][2 * k + 1] = {OPS[rng:int(1, 7)], i}
        cells[kind][2 * k + 2] = {OPS[rng:int(1, 7)], j}
      end
    end
    check(cells, {C = 4, layers = 4, in_channels = 1, size = 28, classes = 10})
  end
end)

T.done()
