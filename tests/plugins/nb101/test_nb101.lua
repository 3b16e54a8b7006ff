-- The NAS-Bench-101 network built by hand through the Lua graph API equals
-- the nb101 space's: the same parameter count (the dataset's published
-- 2,694,282 for the Inception-like cell, Ying et al. 2019, the authors'
-- NASBench.ipynb), the same MACs, the same structural hash of the network.
-- Run by meson through `sieve lua`.
local T = require("sieve.testing")

-- The Inception-like cell as the dataset stores it: 1 conv3x3, 2 conv1x1,
-- 3 maxpool, 4 conv3x3 -> 5 conv3x3; 1, 2, 3, 5 feed the output.
local SPEC = "matrix=[[0,1,1,1,1,0,0],[0,0,0,0,0,0,1],[0,0,0,0,0,0,1],[0,0,0,0,0,0,1],[0,0,0,0,0,1,0]," ..
  "[0,0,0,0,0,0,1],[0,0,0,0,0,0,0]],ops=[input,conv3x3-bn-relu,conv1x1-bn-relu,maxpool3x3,conv3x3-bn-relu," ..
  "conv3x3-bn-relu,output]"

-- base_ops.conv_bn_relu, with the benchmark's batch norm (eps 1e-5, decay 0.997).
local function cbr(g, x, out, k)
  local y = g:conv2d(x, {out = out, kernel = k, pad = k // 2})
  y = g:batch_norm(y, {eps = 1e-5, momentum = 0.003})
  return g:relu(y)
end

-- model_builder.build_module for this cell: the output's 4 inputs split its
-- channels, the input is projected (1x1) into each vertex it feeds.
local function cell(g, x, c)
  local q = c // 4
  local v1 = cbr(g, cbr(g, x, q, 1), q, 3)
  local v2 = cbr(g, cbr(g, x, q, 1), q, 1)
  local v3 = g:max_pool(cbr(g, x, q, 1), {kernel = 3, stride = 1, pad = 1})
  local v4 = cbr(g, cbr(g, x, q, 1), q, 3)
  local v5 = cbr(g, v4, q, 3)
  return g:concat(v1, v2, v3, v5)
end

local function network(stem, stacks, cells, in_ch, size)
  local g = sieve.graph.new("inception-like")
  local x = cbr(g, g:input(in_ch, size, size), stem, 3)
  local c = stem
  for s = 1, stacks do
    if s > 1 then
      x = g:max_pool(x, {kernel = 2, stride = 2})
      c = c * 2
    end
    for _ = 1, cells do x = cell(g, x, c) end
  end
  return g:finish(g:linear(g:global_avg_pool(x), {out = 10}))
end

T.test("the benchmark's scale: the published parameter count", function()
  local nb = sieve.space("nb101")
  local built = nb:build(SPEC)
  local by_hand = network(128, 3, 3, 3, 32)
  T.eq(by_hand.params, 2694282)
  T.eq(built.params, 2694282)
  T.eq(built.flops, by_hand.flops)
  T.eq(built:hash(), by_hand:hash())
end)

T.test("a small scale on Fashion-MNIST's shape", function()
  local nb = sieve.space("nb101", {stem_channels = 16, cells = 1, in_channels = 1, size = 28})
  local built = nb:build(SPEC)
  local by_hand = network(16, 3, 1, 1, 28)
  T.eq(built.params, by_hand.params)
  T.eq(built.flops, by_hand.flops)
  T.eq(built:hash(), by_hand:hash())
end)

T.done()
