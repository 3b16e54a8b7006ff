#!/usr/bin/env python3
"""Holes 1 and 2 of issue 20, tried as an attacker would: a Lua script may
not gain a right it was not given (the command evaluator, a config's
plugin_path or lua: allow, a nested sandbox), and its time limit holds
where Lua's count hook does not reach (xpcall's handler, __gc, long C calls
of the string library), also inside a study.  Every case runs under a hard
timeout: a hang fails the test.  Each asserts the exit status and the exact
first line of the error; the capability cases run both ways, without the
grant (refused, naming it) and with it (works)."""
import os
import subprocess
import tempfile
import time
import unittest

SIEVE = os.environ["SIEVE_EXE"]
ROOT = os.environ["SIEVE_SOURCE_ROOT"]
HERE = os.path.join(ROOT, "tests", "hostile", "lua")
HARD_TIMEOUT = 20  # seconds; every case should end within about one


def fixture(name):
    return os.path.join(HERE, name)


def lua_chunk(name):
    """A fixture's path as Lua names it in an error position: whole up to
    LUA_IDSIZE - 1 (59) characters, else "..." and its last 56 (lobject.c's
    luaO_chunkid), so that the test holds in a clone at any depth."""
    path = fixture(name)
    return path if len(path) <= 59 else "..." + path[-56:]


def sieve(*args, cwd=None):
    t0 = time.monotonic()
    try:
        p = subprocess.run([SIEVE, *args], capture_output=True, text=True, timeout=HARD_TIMEOUT, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"sieve {' '.join(args)} hung (killed after {HARD_TIMEOUT} s)")
    p.elapsed = time.monotonic() - t0
    return p


def first_error(p):
    lines = [l for l in p.stderr.splitlines() if l.startswith("sieve: ")]
    return lines[0] if lines else ""


class Case(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="sieve-hostile-lua-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def assertRefused(self, p, message):
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(first_error(p), "sieve: " + message)

    def assertDone(self, p, stdout):
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, stdout)


class SandboxEscapes(Case):
    """Hole 1: plain `sieve lua` reached the shell three ways."""

    def test_command_evaluator_needs_the_command_grant(self):
        script = fixture("escape-command.lua")
        self.assertRefused(sieve("lua", script, ROOT),
                           f"{script}:3: the 'command' evaluator needs the 'command' grant, which this script "
                           "was not given (sieve lua --allow command)")
        self.assertDone(sieve("lua", "--allow", "command", script, ROOT), "evaluated\t1.0\n")

    def run_config(self, config, *allow):
        store = os.path.join(self.dir, "study.sieve")
        args = ["--allow", ",".join(allow)] if allow else []
        return sieve("lua", *args, fixture("escape-run.lua"), fixture(config), store), store

    def test_config_cannot_grant_itself_lua_libraries(self):
        p, store = self.run_config("grant-self.yaml")
        self.assertRefused(p, f"{lua_chunk('escape-run.lua')}:3: sieve.run: {fixture('grant-self.yaml')}:3:15: "
                              "lua: allow: [os] needs the 'os' grant, which this script was not given "
                              "(sieve lua --allow os)")
        self.assertFalse(os.path.exists(store), "a refused config must not create its store")
        p, store = self.run_config("grant-self.yaml", "io")
        self.assertRefused(p, f"{lua_chunk('escape-run.lua')}:3: sieve.run: {fixture('grant-self.yaml')}:3:15: "
                              "lua: allow: [os] needs the 'os' grant, which this script was not given "
                              "(sieve lua --allow os)")
        # Granted: the config's Lua optimizer uses os (its ask asserts os.getenv).
        p, store = self.run_config("grant-self.yaml", "os", "io")
        self.assertDone(p, "ran\t2\n")

    def test_plugin_path_needs_the_plugins_grant(self):
        p, store = self.run_config("plugin-path.yaml")
        self.assertRefused(p, f"{lua_chunk('escape-run.lua')}:3: sieve.run: {fixture('plugin-path.yaml')}:3:14: "
                              "plugin_path needs the 'plugins' grant, which this script was not given "
                              "(sieve lua --allow plugins)")
        self.assertNotIn("plugin refused", p.stderr, "nothing may be loaded before the grant is checked")
        self.assertFalse(os.path.exists(store))
        # Granted: the loader is asked (and warns that the folder is missing).
        p, store = self.run_config("plugin-path.yaml", "plugins")
        self.assertDone(p, "ran\t2\n")
        # (at the config's line: it named only the path)
        self.assertIn(f"plugin refused: {fixture('plugin-path.yaml')}:3:15: plugin_path: {fixture('no-such-plugins')}: no "
                      "such plugin file or folder", p.stderr)

    def test_config_run_from_lua_needs_the_command_grant(self):
        p, store = self.run_config("command.yaml")
        self.assertRefused(p, f"{lua_chunk('escape-run.lua')}:3: sieve.run: {fixture('command.yaml')}:5:21: "
                              "the 'command' evaluator needs the 'command' grant, which this script was not "
                              "given (sieve lua --allow command)")
        self.assertFalse(os.path.exists(store))
        p, store = self.run_config("command.yaml", "command")
        self.assertDone(p, "ran\t2\n")

    def test_nested_sandbox_cannot_widen(self):
        script = fixture("nested-sandbox.lua")
        self.assertRefused(sieve("lua", script, ROOT),
                           f"{script}:4: a Lua sandbox that allows os needs the 'os' grant, which this script "
                           "was not given (sieve lua --allow os)")
        self.assertDone(sieve("lua", "--allow", "os", script, ROOT), "evaluated\t1.0\n")

    def test_study_script_needs_the_config_grant(self):
        config = fixture("command-optimizer.yaml")
        store = os.path.join(self.dir, "co.sieve")
        p = sieve("run", config, "--set", f"store={store}")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"{lua_chunk('command-optimizer.lua')}:6: the 'command' evaluator needs the 'command' grant, "
                      "which this script was not given (lua: {allow: [command]} in the config that starts the "
                      "script)", p.stderr)
        store2 = os.path.join(self.dir, "co2.sieve")
        p = sieve("run", config, "--set", f"store={store2}", "--set", "lua.allow=[command]")
        self.assertEqual(p.returncode, 0, p.stderr)


class TimeLimitEscapes(Case):
    """Hole 2: four ways past the count hook, each must end with the limit's
    error within about the limit."""

    def limited(self, name, *limit):
        p = sieve("lua", *(limit or ("--seconds", "1")), fixture(name))
        self.assertLess(p.elapsed, 5, f"{name} ran {p.elapsed:.1f} s past a 1 s limit")
        return p

    def test_xpcall_handler_loop(self):
        p = self.limited("time-xpcall.lua")
        self.assertRefused(p, f"{lua_chunk('time-xpcall.lua')}:3: time limit exceeded: more than 1.0 seconds in one "
                              "call into Lua (raise lua.seconds, or 0 for no limit)")
        p = self.limited("time-xpcall.lua", "--instructions", "100000")
        self.assertRefused(p, f"{lua_chunk('time-xpcall.lua')}:3: instruction limit exceeded: more than 100000 "
                              "instructions in one call into Lua (raise lua.instructions, or 0 for no limit)")

    def test_gc_loop_and_rearm(self):
        p = self.limited("time-gc.lua")
        self.assertRefused(p, f"{lua_chunk('time-gc.lua')}: time limit exceeded: more than 1.0 seconds in one call "
                              "into Lua (raise lua.seconds, or 0 for no limit)")

    def test_rep_in_one_c_call(self):
        # The instruction limit gives an exact count of what is left.
        p = self.limited("time-rep.lua", "--instructions", "1000000")
        self.assertRefused(p, f"{lua_chunk('time-rep.lua')}:4: string.rep: this call could run for about 1.13e+12 "
                              "steps in one C call, more than the 1e+06 its instruction or time limit leaves, and "
                              "the limit cannot stop a C call (build the string in smaller pieces)")
        p = self.limited("time-rep.lua")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(first_error(p), r"^sieve: .*time-rep.lua:4: string.rep: this call could run for about "
                                         r"1.13e\+12 steps in one C call, more than the [0-9.e+]+ its")

    def test_backtracking_find_in_one_c_call(self):
        p = self.limited("time-find.lua", "--instructions", "1000000")
        self.assertRefused(p, f"{lua_chunk('time-find.lua')}:2: string.find: this call could run for about "
                              "3.33e+10 steps in one C call, more than the 1e+06 its instruction or time limit "
                              "leaves, and the limit cannot stop a C call (use a smaller subject, or a pattern "
                              "with fewer repetition items)")

    def test_what_the_wrappers_leave_alone(self):
        # A 10 s limit: 10^9 steps, under the worst case of (%w+)=(%w+) on the
        # text by its length (1.1e9), so the wrappers scan the subject's runs.
        p = self.limited("within-limits.lua", "--seconds", "10")
        self.assertDone(p, "ok\t33785\n")

    def test_escape_in_a_study_fails_the_study(self):
        store = os.path.join(self.dir, "hang.sieve")
        p = sieve("run", fixture("hang-study.yaml"), "--set", f"store={store}")
        self.assertLess(p.elapsed, 5)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"sieve: optimizer 'lua': optimizer 'hang', ask(): {lua_chunk('hang-optimizer.lua')}:6: time "
                      "limit exceeded: more than 1.0 seconds in one call into Lua (raise lua.seconds, or 0 for no "
                      "limit)\n", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
