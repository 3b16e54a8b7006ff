-- Hole 2d: backtracking inside one C call (2^30 tries), no hook.
local r = ("a"):rep(30):find(("a?"):rep(30) .. ("a"):rep(30))
