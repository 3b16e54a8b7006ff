-- The NAS-Bench-201 cell space in Lua (Dong & Yang, "NAS-Bench-201:
-- Extending the Scope of Reproducible Neural Architecture Search", ICLR
-- 2020), the same space as the C plugin `nb201` (plugins/spaces/nb201):
-- the same decisions, arch strings and options, and build() writes the same
-- network node for node (same operations, order, attributes and labels), so
-- that both give equal graphs, parameter counts, FLOPs and hashes.  It is
-- the worked example of a Lua architecture space; copy it to write others.
--
--   YAML:  lua: {load: [search_spaces/nb201.lua]}
--          space: {plugin: lua_nb201, C: 8, N: 1}
--     or:  space: {plugin: lua, script: search_spaces/nb201.lua, options: {C: 8, N: 1}}
--   Lua:   local space = sieve.space("lua", {script = ".../search_spaces/nb201.lua", options = {C = 8}})
--
-- A cell is a DAG of 4 nodes; node j (1..3) sums one operation applied to
-- each earlier node i: 6 edges, 5 operations each, 5^6 = 15,625 cells.  The
-- text form is the benchmark's arch string:
--
--   |op~0|+|op~0|op~1|+|op~0|op~1|op~2|
--    node1  node2        node3

-- In the benchmark's order (NAS-Bench-201 `SearchCellOps`): what the
-- categorical indices mean.
local OPS = {"none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"}
local EDGES = {"edge_1_0", "edge_2_0", "edge_2_1", "edge_3_0", "edge_3_1", "edge_3_2"}
local NODES = 4

local function edge_name(j, i) return string.format("edge_%d_%d", j, i) end

local OP_INDEX = {}
for k, op in ipairs(OPS) do OP_INDEX[op] = k end

-- ---- the network (the benchmark's TinyNetwork) ---------------------------------
--
--   stem: conv3x3(C) + BN
--   stage 1: N cells at C channels; reduction block to 2C; stage 2: N cells;
--   reduction block to 4C; stage 3: N cells
--   head: BN + ReLU, global average pool, linear(classes)
--
-- Every convolution has no bias and is followed by an affine batch norm.
-- Each edge gets its own nodes, ReLU included, even where two edges read the
-- same node: the graph is what the benchmark wrote.

-- ReLU - conv(kernel, stride, pad) - BN: the benchmark's `ReLUConvBN`.
local function relu_conv_bn(g, x, channels, kernel, stride, pad, prefix)
  x = g:relu(x, {label = prefix .. ".relu"})
  x = g:conv2d(x, {out = channels, kernel = kernel, stride = stride, pad = pad, label = prefix .. ".conv"})
  return g:batch_norm(x, {label = prefix .. ".bn"})
end

local function edge(g, op, x, channels, prefix)
  if op == "none" then
    return g:zero(x, {label = prefix .. ".zero"})
  elseif op == "skip_connect" then
    return g:identity(x, {label = prefix .. ".skip"})
  elseif op == "nor_conv_1x1" then
    return relu_conv_bn(g, x, channels, 1, 1, 0, prefix)
  elseif op == "nor_conv_3x3" then
    return relu_conv_bn(g, x, channels, 3, 1, 1, prefix)
  elseif op == "avg_pool_3x3" then
    -- count_include_pad=False in the benchmark, which is the IR's only avg pool.
    return g:avg_pool(x, {kernel = 3, stride = 1, pad = 1, label = prefix .. ".pool"})
  end
  error("unknown operation " .. tostring(op))
end

-- One cell: node j = the sum over i < j of op(i, j) applied to node i; the
-- cell's output is node 3.  Node 1 has one edge, which is node 1 itself.
local function cell(g, ops, x, channels, prefix)
  local nodes = {[0] = x}
  for j = 1, NODES - 1 do
    local terms = {}
    for i = 0, j - 1 do
      terms[i + 1] = edge(g, ops[edge_name(j, i)], nodes[i], channels, prefix .. "." .. edge_name(j, i))
    end
    if j == 1 then
      nodes[j] = terms[1]
    else
      nodes[j] = g:add(terms, {label = prefix .. ".node" .. j})
    end
  end
  return nodes[NODES - 1]
end

-- The benchmark's `ResNetBasicblock` with stride 2: a = ReLU-conv3x3/2-BN,
-- b = ReLU-conv3x3-BN, shortcut = avg pool 2x2/2 then conv1x1; out = shortcut + b(a(x)).
local function reduction(g, x, channels, prefix)
  local y = relu_conv_bn(g, x, channels, 3, 2, 1, prefix .. ".a")
  y = relu_conv_bn(g, y, channels, 3, 1, 1, prefix .. ".b")
  local s = g:avg_pool(x, {kernel = 2, stride = 2, pad = 0, label = prefix .. ".shortcut.pool"})
  s = g:conv2d(s, {out = channels, kernel = 1, stride = 1, pad = 0, label = prefix .. ".shortcut.conv"})
  return g:add({s, y}, {label = prefix .. ".add"})
end

local function network(o, ops, name)
  local g = sieve.graph.new(name)
  local x = g:input(o.in_channels, o.size, o.size, {label = "stem.input"})
  x = g:conv2d(x, {out = o.C, kernel = 3, stride = 1, pad = 1, label = "stem.conv"})
  x = g:batch_norm(x, {label = "stem.bn"})
  local channels = o.C
  for stage = 1, 3 do
    if stage > 1 then
      channels = channels * 2
      x = reduction(g, x, channels, "reduce" .. (stage - 1))
    end
    for c = 1, o.N do
      x = cell(g, ops, x, channels, string.format("stage%d.cell%d", stage, c))
    end
  end
  x = g:batch_norm(x, {label = "head.bn"})
  x = g:relu(x, {label = "head.relu"})
  x = g:global_avg_pool(x, {label = "head.pool"})
  x = g:linear(x, {out = o.classes, bias = true, label = "head.linear"})
  return g:finish(x)
end

-- ---- the text form ---------------------------------------------------------------

local function format(values)
  local parts = {}
  for j = 1, NODES - 1 do
    local node = {}
    for i = 0, j - 1 do node[#node + 1] = values[edge_name(j, i)] .. "~" .. i end
    parts[#parts + 1] = "|" .. table.concat(node, "|") .. "|"
  end
  return table.concat(parts, "+")
end

-- What stands at position p, for messages.
local function at(text, p)
  if p > #text then return "the end of the text" end
  return "'" .. text:sub(p, p) .. "'"
end

-- How many '|'-separated operations a node holds from p to its '+' or the end.
local function count_inputs(text, p)
  local n = 0
  while p <= #text and text:sub(p, p) ~= "+" do
    n = n + 1
    local bar = text:find("|", p, true)
    if bar == nil then break end
    p = bar + 1
  end
  return n
end

local function plural(n) return n == 1 and "" or "s" end

-- The arch string as {edge = op}, or nil and a message with the character
-- position (1-based), as the C plugin's parser says it.
-- Whether the text from p reads as one more operation ("op~N|"): else it
-- is stray text, and "extra operation" would mislead.
local function looks_like_operation(text, p)
  local tilde, bar = text:find("~", p, true), text:find("|", p, true)
  return tilde ~= nil and bar ~= nil and tilde > p and tilde < bar
end

local function parse(text)
  if text:sub(1, 1) ~= "|" then
    return nil, "missing leading '|' at character 1 (an arch string looks like |op~0|+|op~0|op~1|+|op~0|op~1|op~2|)"
  end
  local values, p = {}, 2
  for j = 1, NODES - 1 do
    local node_start = p
    for i = 0, j - 1 do
      local c = text:sub(p, p)
      if c == "" or c == "+" then
        return nil, string.format("node %d needs %d input%s, got %d (at character %d)", j, j, plural(j), i, p)
      end
      local name_end = (text:find("[~|+]", p) or #text + 1) - 1
      local op = text:sub(p, name_end)
      if OP_INDEX[op] == nil then
        local list = table.concat(OPS, ", ")
        if op == "" then
          local got = ({["|"] = "'|'", ["~"] = "'~'"})[c] or "nothing"
          return nil, string.format("expected an operation at character %d, got %s (expected one of %s)", p, got, list)
        end
        return nil, string.format("unknown operation '%s' at character %d (expected one of %s)", op, p, list)
      end
      p = name_end + 1
      -- "~i": the edge's source node, which the format fixes to i.
      local digits = text:match("^~(%d+)", p)
      if digits == nil or tonumber(digits) ~= i or #digits ~= 1 then
        local stop = (text:find("[|+]", p) or #text + 1) - 1
        local got = text:sub(p, stop)
        return nil, string.format("expected '~%d' after '%s' at character %d, got %s", i, op, p,
                                  got == "" and "nothing" or "'" .. got .. "'")
      end
      p = p + 2
      if text:sub(p, p) ~= "|" then
        return nil, string.format("expected '|' at character %d, got %s", p, at(text, p))
      end
      p = p + 1
      values[edge_name(j, i)] = op
    end
    -- The node is complete: then comes "+|" before the next node, or the end.
    local c = text:sub(p, p)
    if j + 1 < NODES then
      if c ~= "+" and c ~= "" and not looks_like_operation(text, p) then
        return nil, string.format("expected '+|' after node %d at character %d, got '%s'", j, p, c)
      end
      if c ~= "+" and c ~= "" then
        return nil, string.format("node %d needs %d input%s, got %d (extra operation at character %d)", j, j,
                                  plural(j), count_inputs(text, node_start), p)
      end
      if c ~= "+" then
        return nil, string.format("the text ends after node %d at character %d; expected '+|' and node %d", j, p, j + 1)
      end
      p = p + 1
      if text:sub(p, p) ~= "|" then
        return nil, string.format("expected '|' after '+' at character %d, got %s", p, at(text, p))
      end
      p = p + 1
    elseif c ~= "" then
      if c == "+" then
        return nil, string.format("unexpected '+' at character %d: the cell has only 3 nodes", p)
      end
      if not looks_like_operation(text, p) then
        return nil, string.format("trailing characters at character %d after the last node: '%s'", p, text:sub(p))
      end
      return nil, string.format("node %d needs %d inputs, got %d (extra operation at character %d)", j, j,
                                count_inputs(text, node_start), p)
    end
  end
  return values
end

-- ---- the space -------------------------------------------------------------------

sieve.register_space{
  name = "lua_nb201",
  summary = "NAS-Bench-201 cell written in Lua: 6 edges, 5 operations each (15,625 architectures)",
  -- The defaults are the benchmark's CIFAR-10 network, as the C plugin's.
  options = {
    C = {type = "int", default = 16, min = 1, max = 4096,
         help = "channels of the first stage (the second has 2C, the third 4C)"},
    N = {type = "int", default = 5, min = 1, max = 256, help = "cells per stage"},
    in_channels = {type = "int", default = 3, min = 1, max = 4096, help = "channels of the input images"},
    size = {type = "int", default = 32, min = 4, max = 65536,
            help = "input height and width, a multiple of 4 (the network halves it twice)"},
    classes = {type = "int", default = 10, min = 2, max = 1000000, help = "outputs of the final linear layer"},
  },
  -- The scale the functional hash runs at, the C plugin's: the cell once
  -- per stage, 4 channels, 16x16 inputs (stages at 16, 8 and 4 pixels).
  probe = {C = 4, N = 1, size = 16},
  create = function(self, b)
    -- Each reduction block adds a stride-2 conv (which rounds up) to a 2x2
    -- pooling (which rounds down): they agree only on even extents.
    if self.options.size % 4 ~= 0 then
      error(string.format("option 'size': %d is not a multiple of 4: the two reduction blocks each halve it",
                          self.options.size), 0)
    end
    for _, e in ipairs(EDGES) do b:categorical(e, OPS) end
  end,
  format = function(self, g) return format(g:values()) end,
  parse = function(self, text) return parse(text) end,
  build = function(self, g)
    local values = g:values()
    return network(self.options, values, format(values))
  end,
}
