-- Hole 2a: a loop in xpcall's message handler, which the hook's error calls.
local function handler() while true do end end
while true do xpcall(function() while true do end end, handler) end
