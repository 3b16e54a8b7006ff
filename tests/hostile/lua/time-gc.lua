-- Hole 2b: a __gc that loops, and one that re-arms itself at every collection.
local mt = {}
mt.__gc = function(o) setmetatable({}, mt) end
setmetatable({}, mt)
for i = 1, 10 do collectgarbage() end
setmetatable({}, {__gc = function() while true do end end})
collectgarbage()
