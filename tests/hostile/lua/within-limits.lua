-- What the time-limit wrappers must leave alone: patterns over a text of
-- ordinary words, rep, __gc, xpcall's handler on an ordinary error.
local t = {}
for i = 1, 2000 do t[#t + 1] = "key" .. i .. "=value" .. i end
local s = table.concat(t, " ")
local n = 0
for k, v in s:gmatch("(%w+)=(%w+)") do n = n + 1 end
assert(n == 2000, n)
assert(select(2, s:gsub("(%w+)=(%w+)", "%2=%1")) == 2000)
assert(s:match("key2000=(%w+)") == "value2000")
-- a tokenizer: find at each position of the text, anchored
local pos, tokens = 1, 0
while true do
  local a, b = s:find("^(%w+)=(%w+) ?", pos)
  if not a then break end
  tokens, pos = tokens + 1, b + 1
end
assert(tokens == 2000, tokens)
assert(("x"):rep(3, ",") == "x,x,x")
local finalized = 0
setmetatable({}, {__gc = function() finalized = finalized + 1 end})
collectgarbage()
collectgarbage()
assert(finalized == 1, finalized)
local ok, msg = xpcall(function() error("boom", 0) end, function(m) return "handled " .. m end)
assert(not ok and msg == "handled boom", msg)
print("ok", #s)
