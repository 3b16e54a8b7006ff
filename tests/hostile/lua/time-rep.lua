-- Hole 2c: string.rep of nothing, 2^63-1 times: one C call, no hook.
assert(string.rep("", math.maxinteger) == "")
-- and one that would copy for minutes
local s = string.rep("ab", 1 << 40)
