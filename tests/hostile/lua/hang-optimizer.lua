-- An optimizer whose ask() escapes the time limit through xpcall's handler.
sieve.register_optimizer{
  name = "hang",
  ask = function(self, n)
    local function handler() while true do end end
    while true do xpcall(function() while true do end end, handler) end
  end,
}
