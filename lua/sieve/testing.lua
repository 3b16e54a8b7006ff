-- sieve.testing: a small test harness for Lua scripts run by `sieve lua`.
--
--   local T = require("sieve.testing")
--   T.test("genotypes round-trip", function()
--     T.eq(space:parse(g:format()), g)
--   end)
--   T.done()          -- prints a summary; raises (exit status 1) if a test failed
--
-- Each test runs under pcall with a traceback, so one failure does not hide
-- the others; failures are reported with the file:line of the check.
local M = {}
local passed, failed = 0, {}

local function fail(message, level)
  error(message, (level or 1) + 2)
end

function M.test(name, fn)
  local ok, err = xpcall(fn, debug and debug.traceback or function(e) return e end)
  if ok then
    passed = passed + 1
    print("ok     " .. name)
  else
    failed[#failed + 1] = name
    print("FAILED " .. name .. "\n  " .. tostring(err):gsub("\n", "\n  "))
  end
end

local function show(v)
  if type(v) == "string" then return string.format("%q", v) end
  return tostring(v)
end

function M.eq(got, want, what)
  if got ~= want then
    fail(string.format("%s: got %s, want %s", what or "value", show(got), show(want)))
  end
end

function M.near(got, want, tol, what)
  if type(got) ~= "number" or math.abs(got - want) > (tol or 1e-9) then
    fail(string.format("%s: got %s, want %s (within %s)", what or "value", show(got), show(want), tostring(tol or 1e-9)))
  end
end

function M.truthy(v, what)
  if not v then fail((what or "value") .. " is " .. show(v)) end
end

-- Expects fn(...) to raise an error whose message contains `pattern` (plain text).
function M.raises(pattern, fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then fail("expected an error containing '" .. pattern .. "', got none") end
  if not tostring(err):find(pattern, 1, true) then
    fail("expected an error containing '" .. pattern .. "', got: " .. tostring(err))
  end
  return err
end

function M.done()
  print(string.format("%d passed, %d failed", passed, #failed))
  if #failed > 0 then error(#failed .. " test(s) failed: " .. table.concat(failed, ", "), 0) end
end

return M
