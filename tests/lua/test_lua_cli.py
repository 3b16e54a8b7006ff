#!/usr/bin/env python3
"""Lua components through the `sieve` command: a Lua optimizer named in YAML
is deterministic and resumes exactly after SIGKILL at many points; the
sandbox and limits are set from YAML and the command line; the examples
run.  Real processes, real stores."""
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
import unittest

ROOT = os.environ["SIEVE_SOURCE_ROOT"]
EXAMPLES = os.path.join(ROOT, "examples", "lua")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import sieve_cli  # noqa: E402
from sieve_cli import SIEVE, export_rows, sieve  # noqa: E402


class Workdir(sieve_cli.Workdir):
    prefix = "sieve-lua-cli-"


# Regularized evolution in Lua (examples/lua/evolution.lua) on Branin, slow
# enough to be killed in the middle: its population of genotypes, counters
# and rng are what a resume must restore.
EVOLUTION = """name: lua-evolution
seed: 5
space: {plugin: hpo, file: %s}
optimizer:
  plugin: lua
  script: %s
  options: {population: 8, sample: 3}
evaluator: {plugin: function, function: branin, delay: %s}
objective: {metric: value, direction: minimize}
budget: {evaluations: %d}
"""


class TestLuaOptimizerResume(Workdir):
    N = 40

    def config(self, delay=0.02):
        return self.write("evo.yaml", EVOLUTION % (os.path.join(ROOT, "search_spaces", "branin.yaml"),
                                                   os.path.join(EXAMPLES, "evolution.lua"), delay, self.N))

    def run_until(self, cfg, store, resume, kill_at=None, kill_after_s=None):
        args = ["run", cfg, "--store", store] + (["--resume"] if resume else [])
        if kill_after_s is not None:
            proc = subprocess.Popen([SIEVE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(kill_after_s)
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            return
        sieve_cli.run_until(self, args, kill_at)

    def test_deterministic_and_resumes_exactly(self):
        cfg = self.config()
        ref = self.path("ref.sieve")
        self.run_until(cfg, ref, resume=False)
        reference = export_rows(ref)
        self.assertEqual(len(reference), self.N)
        self.assertTrue(all(r["status"] == "ok" for r in reference))
        # Deterministic: a second run gives the same trials.
        again = self.path("again.sieve")
        self.run_until(cfg, again, resume=False)
        self.assertEqual(export_rows(again), reference)
        # Evolution did something: after the first population (8), each
        # proposal is a member with one coordinate changed, so it shares the
        # other exactly with an earlier trial (fresh float draws never do).
        coords = [dict(kv.split("=") for kv in r["genotype"].split(",")) for r in reference]
        shared = sum(1 for i in range(8, len(coords))
                     if any(coords[i]["x1"] == c["x1"] or coords[i]["x2"] == c["x2"] for c in coords[:i]))
        self.assertEqual(shared, len(coords) - 8)

        store = self.path("chain.sieve")
        resume = False
        for k in (1, 7, 8, 9, 20, 38):
            self.run_until(cfg, store, resume, kill_at=k)
            resume = True
            rows = export_rows(store)
            done = [r for r in rows if r["status"] != "pending"]
            self.assertGreaterEqual(len(done), k, "a finished trial was lost")
            self.assertEqual(done, reference[:len(done)])
        self.run_until(cfg, store, resume=True)
        self.assertEqual(export_rows(store), reference)

        rng = random.Random(int(os.environ.get("SIEVE_TEST_SEED", "20261123")))
        for i in range(3):
            store = self.path(f"random{i}.sieve")
            resume = False
            for _ in range(3):
                self.run_until(cfg, store, resume, kill_after_s=rng.uniform(0.0, 0.6))
                resume = True
            self.run_until(cfg, store, resume=True)
            self.assertEqual(export_rows(store), reference, f"random kill run {i}")


OPENS_FILE = """
sieve.register_optimizer{
  name = "reader",
  create = function(self) local f = assert(io.open(%r)) self.state.line = f:read("l") f:close() end,
  ask = function(self, n) local out = {} for i = 1, n do out[i] = self.space:sample(self.rng) end return out end,
}
"""

SPINS = """
sieve.register_optimizer{
  name = "spinner",
  ask = function(self, n)
    self.state.asks = (self.state.asks or 0) + 1
    if self.state.asks == 4 then while true do end end
    return {self.space:sample(self.rng)}
  end,
}
"""

HOGS = """
sieve.register_optimizer{
  name = "hog",
  ask = function(self, n) local t = {} for i = 1, 1e9 do t[i] = {i} end end,
}
"""

SIMPLE = """name: %s
space: {plugin: hpo, file: %s}
optimizer: {plugin: lua, script: %s}
evaluator: {plugin: function, function: branin}
objective: {metric: value, direction: minimize}
budget: {evaluations: 10}
%s
"""


class TestSandboxFromYaml(Workdir):
    def simple(self, name, script, extra=""):
        return self.write(name + ".yaml", SIMPLE % (name, os.path.join(ROOT, "search_spaces", "branin.yaml"),
                                                    script, extra))

    def test_io_denied_then_allowed(self):
        data = self.write("data.txt", "hello\n")
        script = self.write("reader.lua", OPENS_FILE % data)
        cfg = self.simple("reader", script)
        p = sieve("run", cfg, "--store", self.path("a.sieve"), check=1)
        self.assertRegex(p.stderr, r"reader\.lua:4: attempt to index a nil value \(global 'io'\)")
        self.assertIn("stack traceback:", p.stderr)
        # The command-line flag, and the experiment's own lua section.
        sieve("run", cfg, "--store", self.path("b.sieve"), "--lua-allow", "io", check=0)
        allowed = self.simple("reader2", script, "lua: {allow: [io]}")
        sieve("run", allowed, "--store", self.path("c.sieve"), check=0)
        # Resuming without the permission is refused (the script cannot start).
        p = sieve("run", cfg, "--store", self.path("b.sieve"), "--resume", check=1)
        self.assertIn("(global 'io')", p.stderr)
        # The flag is the experiment's lua.allow: the study it made resumes
        # from a file that writes the permission itself.
        p = sieve("run", allowed, "--store", self.path("b.sieve"), "--resume", "--set", "name=reader",
                  "--set", "budget.evaluations=12", check=0)
        self.assertIn("12 trials: 12 ok", p.stdout)
        p = sieve("run", cfg, "--store", self.path("d.sieve"), "--lua-allow", "oss", check=2)
        self.assertIn("cannot allow 'oss' (did you mean 'os'?)", p.stderr)

    def test_time_limit_keeps_finished_trials(self):
        script = self.write("spin.lua", SPINS)
        cfg = self.simple("spin", script, "lua: {seconds: 0.3}")
        t0 = time.monotonic()
        p = sieve("run", cfg, "--store", self.path("s.sieve"), check=1)
        self.assertLess(time.monotonic() - t0, 20)
        self.assertRegex(p.stderr, r"spin\.lua:6: time limit exceeded: more than 0\.3 seconds")
        self.assertIn("finished trials are kept", p.stderr)
        self.assertEqual(len(export_rows(self.path("s.sieve"))), 3)

    def test_memory_cap(self):
        script = self.write("hog.lua", HOGS)
        cfg = self.simple("hog", script, "lua: {memory_mb: 16}")
        p = sieve("run", cfg, "--store", self.path("h.sieve"), check=1)
        self.assertIn("memory limit exceeded: the Lua state needed more than 16 MiB", p.stderr)

    def test_a_script_that_cannot_load_is_a_config_error(self):
        # Exit 2 (bad configuration), as a missing hpo file is: a script
        # that cannot be read or does not compile, named by lua.load or an
        # optimizer's script; said at the YAML line that names it.
        spins = self.write("spin.lua", SPINS)
        self.write("syntax.lua", "x = = 1\n")
        cases = [("missing-load", spins, "lua: {load: [nothere.lua]}", r"missing-load\.yaml:7:13: lua\.load: cannot open "),
                 ("syntax-load", spins, "lua: {load: [syntax.lua]}",
                  r"syntax-load\.yaml:7:13: lua\.load: .*syntax\.lua:1: unexpected symbol near '='"),
                 ("missing-script", self.path("nothere.lua"), "", r"missing-script\.yaml:3:.*cannot open .*nothere\.lua")]
        for name, script, extra, message in cases:
            p = sieve("run", self.simple(name, script, extra), "--store", self.path(name + ".sieve"), check=2)
            self.assertRegex(p.stderr, message)
            self.assertFalse(os.path.exists(self.path(name + ".sieve")), "nothing is stored")
        # A script that loads and then raises as it runs stays a failure (1).
        self.write("raises.lua", 'error("not today")\n')
        p = sieve("run", self.simple("raises", spins, "lua: {load: [raises.lua]}"), "--store", self.path("r.sieve"),
                  check=1)
        self.assertIn("raises.lua:1: not today", p.stderr)
        # Expressions nested too deep stop Lua's compiler with "C stack overflow" and no place (found
        # by fuzzing `sieve lua` scripts): the file and line are added, and it is a config error too.
        deep = self.write("deep.lua", "local a = 1\nlocal x = " + "- " * 300 + "1\n")
        p = sieve("lua", deep, check=2)
        self.assertIn(f"{deep}:2: C stack overflow (expressions or blocks nested too deep)", p.stderr)
        p = sieve("run", self.simple("deep-load", spins, "lua: {load: [deep.lua]}"), "--store",
                  self.path("d.sieve"), check=2)
        self.assertRegex(p.stderr, r"deep-load\.yaml:7:13: lua\.load: .*deep\.lua:2: C stack overflow")
        # So is a module that a running script requires: its error handler added a traceback to the
        # message, which then missed the hint and printed the traceback twice.
        needs = self.write("needsdeep.lua", 'local m = require("deep")\n')
        p = sieve("lua", needs, check=1)
        self.assertIn(f"{deep}:2: C stack overflow (expressions or blocks nested too deep)\n", p.stderr)
        self.assertEqual(p.stderr.count("stack traceback"), 1, p.stderr)

    def test_a_module_that_cannot_load_leaks_nothing(self):
        # require of a module that does not compile raised past the searcher's g_autofree strings
        # (LeakSanitizer, found by fuzzing `sieve lua`): ~200 bytes a call, 10 MB over 50000
        # pcall(require) in a loop; now the peak memory is that of a single call.
        self.write("syn.lua", "x = = 1\n")
        loop = self.write("loop.lua", 'for i = 1, tonumber(arg[1]) do\n'
                                      '  local ok, e = pcall(require, "syn")\n'
                                      '  assert(not ok and e:find("syn.lua:1: unexpected symbol", 1, true), e)\n'
                                      'end\n')

        # Under AddressSanitizer freed blocks wait in its quarantine (256 MB), which would read as a leak.
        env = dict(os.environ, ASAN_OPTIONS=":".join(filter(None, [os.environ.get("ASAN_OPTIONS"),
                                                                   "quarantine_size_mb=0"])))

        def peak_kb(n):
            proc = subprocess.Popen([SIEVE, "lua", loop, str(n)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            self.assertEqual(proc.returncode, 0, proc.stderr.read())
            proc.stderr.close()
            return usage.ru_maxrss

        once, many = peak_kb(1), peak_kb(50000)
        self.assertLess(many - once, 4096, f"{once} KB after one failed require, {many} KB after 50000")

    def test_lua_path_by_set_without_a_config(self):
        # With no config, a relative lua.path is the current folder's, not
        # relative to a folder named after the --set flag's text.
        os.makedirs(self.path("sub/lib"))
        with open(os.path.join(ROOT, "search_spaces", "nb201.lua")) as f:
            self.write("sub/space.lua", 'assert(require("viapath").z == 3)\n' + f.read())
        self.write("sub/lib/viapath.lua", "return {z = 3}\n")
        arch = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
        p = sieve("hash", "--space", "lua", "--set", "space.script=sub/space.lua", "--set",
                  "space.lua={path: [sub/lib]}", arch, cwd=self.dir, check=0)
        self.assertTrue(p.stdout.startswith(arch + "\t"), p.stdout)

    def test_unknown_lua_key(self):
        script = self.write("spin.lua", SPINS)
        cfg = self.simple("typo", script, "lua: {alow: [io]}")
        p = sieve("run", cfg, "--store", self.path("t.sieve"), check=2)
        self.assertRegex(p.stderr, r"typo\.yaml:7:7: unknown option 'alow'.*did you mean 'allow'")


# An optimizer of the user's own (lua.load), with a bug that stops the study
# at its fifth ask: what an Optuna user fixes and then continues.
OWN_OPTIMIZER = """sieve.register_optimizer{name = "myopt",
  ask = function(self, n)
    self.state.n = (self.state.n or 0) + 1
    %s
    return {self.space:sample(self.rng)}
  end,
  tell = function(self, t) end}
"""
BUG = 'if self.state.n > 4 then error("bug in my optimizer") end'

OWN = """name: own
seed: 0
lua: {load: [opt.lua]}
space: {plugin: hpo, file: %s}
optimizer: {plugin: myopt}
evaluator: {plugin: function, function: branin, delay: 0.02}
objective: {metric: value, direction: minimize}
budget: {evaluations: 16}
"""


RUN_AGAIN = """local cfg, store = arg[1], arg[2]
local more = {["budget.evaluations"] = 18}
local ok, err = pcall(sieve.run, cfg, {store = store, resume = true, set = more})
print("refused: " .. tostring(not ok and err:find("accept_changed_scripts = true", 1, true) ~= nil
                                and err:find("changed since the study was stored", 1, true) ~= nil))
local _, flag = pcall(sieve.run, cfg, {store = store, accept_changed_scripts = true})
assert(flag:find("accept_changed_scripts goes with resume = true", 1, true), flag)
local done = sieve.run(cfg, {store = store, resume = true, accept_changed_scripts = true, set = more})
print("count " .. done:count())
"""


# A Lua space, a Lua evaluator and a study of them (scripts of their own).
SPACE_SCRIPT = """sieve.register_space{name = "myspace", create = function(self, b)
  b:categorical("op", {%s})
  b:float("x", -2.0, 2.0)
end}
"""
EVALUATOR_SCRIPT = """sieve.register_evaluator{name = "myev", evaluate = function(self, c)
  local g = c.genotype
  return {metrics = {value = %s}}
end}
"""
SCRIPTED = """name: scripted
seed: 0
%s
optimizer: {plugin: %s}
evaluator: {plugin: lua, script: ev.lua}
objective: {metric: value, direction: minimize}
budget: {evaluations: 4}
%s
"""

class TestChangedScripts(Workdir):
    def meta(self, store, key):
        db = sqlite3.connect(store)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        finally:
            db.close()
        return row[0] if row else None

    def test_fix_a_script_and_go_on(self):
        script = self.write("opt.lua", OWN_OPTIMIZER % BUG)
        cfg = self.write("own.yaml", OWN % os.path.join(ROOT, "search_spaces", "branin.yaml"))
        store = self.path("own.sieve")
        p = sieve("run", cfg, "--store", store, check=1)
        self.assertIn("bug in my optimizer", p.stderr)
        self.assertIn("continue with --resume", p.stderr)
        before = export_rows(store)
        self.assertEqual(len(before), 4)

        # The bug fixed: a plain --resume refuses, and says how to go on.
        self.write("opt.lua", OWN_OPTIMIZER % "")
        p = sieve("run", cfg, "--store", store, "--resume", check=1)
        self.assertIn("lua.load[0]: the file %s changed since the study was stored" % script, p.stderr)
        self.assertIn("continue with --resume --accept-changed-scripts (in sieve.run: accept_changed_scripts = true)",
                      p.stderr)
        self.assertEqual(export_rows(store), before)
        self.assertIsNone(self.meta(store, "script_changes"))
        # The flag is for --resume, and covers scripts only.
        p = sieve("run", cfg, "--store", self.path("new.sieve"), "--accept-changed-scripts", check=2)
        self.assertIn("--accept-changed-scripts goes with --resume", p.stderr)
        p = sieve("run", cfg, "--store", store, "--resume", "--accept-changed-scripts", "--set", "tell_order=trial",
                  check=1)
        self.assertIn("first difference: tell_order: stored 'completion', now 'trial'", p.stderr)
        self.assertNotIn("--accept-changed-scripts:", p.stderr)
        self.assertEqual(export_rows(store), before)

        # Accepted, then killed in the middle and resumed without the flag:
        # the new digest is the study's now, and the first trials stay.
        sieve_cli.run_until(self, ["run", cfg, "--store", store, "--resume", "--accept-changed-scripts"], kill_at=8)
        history = self.meta(store, "script_changes").splitlines()
        self.assertEqual(len(history), 1)
        when, path, old, new, file = history[0].split("\t")
        self.assertEqual((path, file), ("lua.load[0]", script))
        self.assertNotEqual(old, new)
        self.assertRegex(old + new, r"^[0-9a-f]{128}$")
        p = sieve("run", cfg, "--store", store, "--resume", check=0)
        self.assertIn("16 trials: 16 ok", p.stdout)
        rows = export_rows(store)
        self.assertEqual(rows[:4], before)
        self.assertEqual(len(rows), 16)
        self.assertEqual(len(self.meta(store, "script_changes").splitlines()), 1)

        # The same from Lua: sieve.run's accept_changed_scripts.
        self.write("opt.lua", OWN_OPTIMIZER % "-- tidied")
        runner = self.write("again.lua", RUN_AGAIN)
        p = sieve("lua", runner, cfg, store, check=0)
        self.assertIn("refused: true", p.stdout)
        self.assertIn("count 18", p.stdout)
        self.assertEqual(len(self.meta(store, "script_changes").splitlines()), 2)
        self.assertEqual(export_rows(store)[:16], rows)

    def test_a_space_script_is_not_covered(self):
        # The choices of a space's script renamed: the stored genotypes no
        # longer read, so the flag refuses it and stores nothing.
        space = self.write("space.lua", SPACE_SCRIPT % '"a", "b", "c"')
        self.write("ev.lua", EVALUATOR_SCRIPT % "g:get('x') ^ 2")
        cfg = self.write("sp.yaml", SCRIPTED % ("space: {plugin: lua, script: space.lua}", "random", ""))
        store = self.path("sp.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        before, key = export_rows(store), self.meta(store, "study_key")
        self.write("space.lua", SPACE_SCRIPT % '"z", "y"')
        p = sieve("run", cfg, "--store", store, "--resume", "--accept-changed-scripts", "--set",
                  "budget.evaluations=8", check=1)
        self.assertIn("space.script: the file %s changed since the study was stored" % space, p.stderr)
        self.assertIn("a space's script is part of what the stored trials mean, as a space `file` is, so "
                      "--accept-changed-scripts does not cover it", p.stderr)
        self.assertEqual((export_rows(store), self.meta(store, "study_key")), (before, key))
        self.assertIsNone(self.meta(store, "script_changes"))
        # Put back, the study goes on without the flag.
        self.write("space.lua", SPACE_SCRIPT % '"a", "b", "c"')
        p = sieve("run", cfg, "--store", store, "--resume", "--set", "budget.evaluations=8", check=0)
        self.assertIn("8 trials: 8 ok", p.stdout)

    def test_a_loaded_space_script_must_still_read_the_trials(self):
        # A lua.load file that registers the space: accepted only when the
        # stored genotypes still read in the space it defines now.
        self.write("space.lua", SPACE_SCRIPT.replace('"myspace"', '"loaded"') % '"a", "b", "c"')
        self.write("ev.lua", EVALUATOR_SCRIPT % "g:get('x') ^ 2")
        cfg = self.write("ld.yaml", SCRIPTED % ("lua: {load: [space.lua]}\nspace: {plugin: loaded}", "tpe", ""))
        store = self.path("ld.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        before, key = export_rows(store), self.meta(store, "study_key")
        self.write("space.lua", SPACE_SCRIPT.replace('"myspace"', '"loaded"') % '"z", "y"')
        p = sieve("run", cfg, "--store", store, "--resume", "--accept-changed-scripts", "--set",
                  "budget.evaluations=8", check=1)
        self.assertIn("--accept-changed-scripts refused: with the changed lua.load[0]", p.stderr)
        self.assertIn("no longer reads in space 'loaded'", p.stderr)
        self.assertIn("a script that defines the space is part of what the stored trials mean", p.stderr)
        self.assertEqual((export_rows(store), self.meta(store, "study_key")), (before, key))
        self.assertIsNone(self.meta(store, "script_changes"))
        # A change the stored trials still read in (one more choice) is accepted.
        self.write("space.lua", SPACE_SCRIPT.replace('"myspace"', '"loaded"') % '"a", "b", "c", "d"')
        p = sieve("run", cfg, "--store", store, "--resume", "--accept-changed-scripts", "--set",
                  "budget.evaluations=8", check=0)
        self.assertIn("8 trials: 8 ok", p.stdout)
        self.assertEqual(len(self.meta(store, "script_changes").splitlines()), 1)

    def test_dedupe_runs_the_changed_evaluator(self):
        # Two genotypes in all: after the first run every proposal repeats.
        self.write("space.lua", 'sieve.register_space{name = "two", create = function(self, b) '
                                'b:categorical("op", {"a", "b"}) end}')
        self.write("ev.lua", EVALUATOR_SCRIPT % "99")
        cfg = self.write("dd.yaml", (SCRIPTED % ("space: {plugin: lua, script: space.lua}", "random",
                                                 "pipeline: [{dedupe: {hash: genotype}}]"))
                         .replace("evaluations: 4", "proposals: 4"))
        store = self.path("dd.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        rows = export_rows(store)
        self.assertEqual({r["genotype"] for r in rows if r["status"] == "ok"}, {"op=a", "op=b"})
        # Scripts unchanged: the cache answers (its key as before).
        sieve("run", cfg, "--store", store, "-q", "--resume", "--set", "budget.proposals=8", check=0)
        rows = export_rows(store)
        self.assertEqual([r["status"] for r in rows[4:]], ["cached"] * 4)
        # The evaluator fixed: its results are not the old script's.
        self.write("ev.lua", EVALUATOR_SCRIPT % "1")
        sieve("run", cfg, "--store", store, "-q", "--resume", "--accept-changed-scripts", "--set",
              "budget.proposals=12", check=0)
        rows = export_rows(store)
        self.assertEqual({r["value"] for r in rows[8:]}, {"1"}, rows[8:])
        self.assertEqual({r["genotype"] for r in rows[8:] if r["status"] == "ok"}, {"op=a", "op=b"})
        # And back to the first script: its entries again.
        self.write("ev.lua", EVALUATOR_SCRIPT % "99")
        sieve("run", cfg, "--store", store, "-q", "--resume", "--accept-changed-scripts", "--set",
              "budget.proposals=14", check=0)
        rows = export_rows(store)
        self.assertEqual([(r["status"], r["value"]) for r in rows[12:]], [("cached", "99")] * 2)

    def test_a_script_default_written_out(self):
        # `batch: 8` written, the script's default changed from 1 to 8: a
        # pure script change.
        opt = 'sieve.register_optimizer{name = "myopt", options = {batch = %d},\n' \
              '  ask = function(self, n) return {self.space:sample(self.rng)} end, tell = function(self, t) end}\n'
        self.write("opt.lua", opt % 1)
        cfg = self.write("df.yaml", OWN.replace("optimizer: {plugin: myopt}", "optimizer: {plugin: myopt, batch: 8}")
                         .replace("evaluations: 16", "evaluations: 4")
                         % os.path.join(ROOT, "search_spaces", "branin.yaml"))
        store = self.path("df.sieve")
        sieve("run", cfg, "--store", store, "-q", check=0)
        self.write("opt.lua", opt % 8)
        p = sieve("run", cfg, "--store", store, "--resume", "--accept-changed-scripts", "--set",
                  "optimizer.batch=4", check=1)
        self.assertIn("first difference: optimizer.batch: stored '8', now '4'", p.stderr)
        p = sieve("run", cfg, "--store", store, "--resume", "--accept-changed-scripts", "--set",
                  "budget.evaluations=6", check=0)
        self.assertIn("6 trials: 6 ok", p.stdout)


class TestExamples(Workdir):
    def test_plugins_lists_lua(self):
        out = sieve("plugins", check=0).stdout
        self.assertEqual(len(re.findall(r"(?m)^  lua ", out)), 3)
        out = sieve("plugins", "--describe", "lua", check=0).stdout
        self.assertIn("script (path", out)

    def test_evolution_yaml(self):
        p = sieve("run", os.path.join(EXAMPLES, "nb201-evolution.yaml"), "--store", self.path("e.sieve"),
                  "--set", "budget.evaluations=60", "-q", check=0)
        self.assertIn("60 trials: 60 ok", p.stdout)

    def test_evolution_yaml_beside_the_configs_one(self):
        # Bug hunt 4 (C13): this example and configs/nb201-evolution.yaml
        # shared a name, so both defaulted to one store in the current
        # folder. Their names differ now; and one written onto the other's
        # store is refused naming optimizer.plugin (the setting that differs),
        # not optimizer.script (the file only the Lua one reads).
        c_yaml = os.path.join(ROOT, "configs", "nb201-evolution.yaml")
        lua_yaml = os.path.join(EXAMPLES, "nb201-evolution.yaml")
        for cfg in (c_yaml, lua_yaml):
            sieve("run", cfg, "--set", "budget.evaluations=3", "-q", cwd=self.dir, check=0)
        self.assertEqual(len([f for f in os.listdir(self.dir) if f.endswith(".sieve")]), 2)
        store = self.path("one.sieve")
        table = "evaluator.table=" + os.path.join(ROOT, "data", "nb201", "nb201.csv")
        sieve("run", c_yaml, "--store", store, "--set", "budget.evaluations=3", "--set", table, "-q", check=0)
        # Name and evaluator made the same (as before the rename): the
        # optimizer is all that differs.
        p = sieve("run", lua_yaml, "--store", store, "--resume", "--set", "budget.evaluations=3", "--set", table,
                  "--set", "name=nb201-evolution", "--set",
                  "evaluator.metrics=[cifar10_valid_acc, cifar10_test_acc, params_m, lat_ms_gold_6226]",
                  "--set", "evaluator.key=arch_str", "-q", check=1)
        self.assertIn("first difference: optimizer.plugin: stored 'evolution', now 'lua'", p.stderr)

    def test_budgets(self):
        p = sieve("lua", os.path.join(EXAMPLES, "budgets.lua"), "60", check=0)
        lines = [l for l in p.stdout.splitlines()[1:] if l.strip()]
        self.assertEqual(len(lines), 5)
        accs, overs = [], []
        for line in lines:
            budget, params, mflops, valid, test, over = (float(x) for x in line.split()[:6])
            self.assertLessEqual(params, budget)
            self.assertGreater(mflops, 0)
            accs.append(valid)
            overs.append(over)
        self.assertGreater(accs[-1], accs[0], "a larger parameter budget buys accuracy")
        self.assertGreater(overs[0], overs[-1], "a tight budget rejects more candidates")

    def test_lua_space_from_yaml_trains(self):
        """The Lua NB201 space named in YAML trains the C plugin's networks:
        the same seed proposes the same cells, built with the same
        parameter and MAC counts, and trained to the same accuracies."""
        yaml = os.path.join(EXAMPLES, "nb201-lua-train.yaml")
        # One thread: every core on a machine shared with other tests is slower.
        one = ("--set", "evaluator.threads=1")
        sieve("run", yaml, "--store", self.path("lua.sieve"), *one, "-q", check=0)
        sieve("run", yaml, "--store", self.path("c.sieve"), "--set", "space.plugin=nb201", *one, "-q", check=0)
        keep = ("status", "genotype", "params", "macs", "val_acc", "train_loss")
        lua = [{k: r[k] for k in keep} for r in export_rows(self.path("lua.sieve"))]
        c = [{k: r[k] for k in keep} for r in export_rows(self.path("c.sieve"))]
        self.assertEqual(len(lua), 4)
        self.assertEqual({r["status"] for r in lua}, {"ok"})
        self.assertEqual(lua, c)

    def test_lua_space_dedupes_like_c(self):
        """The dedupe stage hashes the Lua NB201 space's candidates as the C
        plugin's: the same trials are answered from the cache."""
        rows = {}
        for plugin in ("lua_nb201", "nb201"):
            yaml = self.write(plugin + ".yaml", f"""name: dd
seed: 3
lua: {{load: [{ROOT}/search_spaces/nb201.lua]}}
space: {{plugin: {plugin}}}
optimizer: {{plugin: random}}
pipeline: [dedupe]
evaluator: {{plugin: tabular, table: {ROOT}/data/nb201/nb201.csv, metrics: [cifar10_valid_acc]}}
objective: {{metric: cifar10_valid_acc}}
budget: {{proposals: 200}}
""")
            sieve("run", yaml, "--store", self.path(plugin + ".sieve"), "-q", check=0)
            rows[plugin] = [(r["status"], r["genotype"], r["cached_from"], r["cifar10_valid_acc"])
                            for r in export_rows(self.path(plugin + ".sieve"))]
        self.assertEqual(len(rows["nb201"]), 200)
        self.assertGreater(sum(r[0] == "cached" for r in rows["nb201"]), 0)
        self.assertEqual(rows["lua_nb201"], rows["nb201"])

    def test_proxy_then_train(self):
        """Screen 40 cells with proxies, train the top 2 briefly, the best
        longer: each sieve passes on what it says, and the long training
        learns (chance is 0.1)."""
        p = sieve("lua", os.path.join(EXAMPLES, "proxy-then-train.lua"), "40", "2", "naswot,zen", "1", check=0,
                  timeout=300)
        lines = p.stdout.splitlines()
        m = re.match(r"sampled 40 cells: (\d+) distinct functions \((\d+) duplicates dropped\)", lines[0])
        self.assertIsNotNone(m, p.stdout)
        distinct = int(m.group(1))
        self.assertLessEqual(distinct + int(m.group(2)), 40)
        self.assertRegex(lines[1], r"^screened %d cells with naswot\+zen in [\d.]+ s; the top 2 go on$" % distinct)
        shorts = [l for l in lines if l.startswith("short ")]
        self.assertEqual(len(shorts), 2, p.stdout)
        accs = {}
        for line in shorts:
            f = line.split()
            acc = float(f[2].split("=")[1])
            self.assertTrue(0 <= acc <= 1, line)
            self.assertIn("naswot=", line)
            accs[f[-1]] = acc
        best = lines[-1].split()
        self.assertEqual(best[0], "best")
        self.assertEqual(best[-1], max(accs, key=accs.get), "the longer training takes the best short one")
        val, test = float(best[1].split("=")[1]), float(best[2].split("=")[1])
        self.assertGreater(val, 0.5, p.stdout)
        self.assertGreater(test, 0.5, p.stdout)
        self.assertEqual(best[4], "epochs=2")

    def test_run_from_lua_script(self):
        p = sieve("lua", os.path.join(EXAMPLES, "run-yaml.lua"), self.dir, check=0)
        self.assertIn("seed 1:", p.stdout)
        self.assertIn("seed 2:", p.stdout)
        # The finished studies it read are closed at exit as a writer's are:
        # each store is one file again, no -wal or -shm left beside it.
        files = sorted(f for f in os.listdir(self.dir) if ".sieve" in f)
        self.assertEqual(files, ["nb201-evolution-seed1.sieve", "nb201-evolution-seed2.sieve"])
        # So are the stores a command only reads.
        export_rows(self.path("nb201-evolution-seed1.sieve"))
        self.assertEqual(sorted(f for f in os.listdir(self.dir) if ".sieve" in f), files)


if __name__ == "__main__":
    unittest.main(verbosity=2)
