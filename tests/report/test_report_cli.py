#!/usr/bin/env python3
"""`sieve report` of a study run with a relative config path, from another
folder: the space is rebuilt against the config's folder (its hpo file
found).  The store keeps the config's path as given ('r.yaml'); the report
resolved the space's file against that relative folder and crashed
(SIGSEGV)."""
import html
import os
import re
import sqlite3
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.environ["SIEVE_SOURCE_ROOT"], "tests", "support"))
from sieve_cli import ROOT, SIEVE, Workdir, sieve  # noqa: E402

CONFIG = """name: r
space: {plugin: hpo, file: sp.yaml}
optimizer: {plugin: random}
evaluator: {plugin: function, function: branin}
objective: {metric: value, direction: minimize}
budget: {evaluations: 6}
"""
SPACE = "parameters:\n  x1: {type: float, low: -5, high: 10}\n  x2: {type: float, low: 0, high: 15}\n"


class RelativeConfig(Workdir):
    prefix = "sieve-report-cli-"

    def report(self, store="r.sieve"):
        out = self.path("r.html")
        sieve("report", self.path(store), "-o", out, check=0, cwd="/")
        with open(out) as f:
            html = f.read()
        self.assertNotIn("could not be rebuilt", html)
        self.assertIn('<section id="importance">', html)

    def setUp(self):
        super().setUp()
        self.write("sp.yaml", SPACE)
        self.write("r.yaml", CONFIG)
        sieve("run", "r.yaml", "--quiet", check=0, cwd=self.dir)

    def test_relative_config(self):
        with sqlite3.connect(self.path("r.sieve")) as db:
            self.assertEqual(db.execute("SELECT value FROM meta WHERE key = 'config_path'").fetchone()[0], "r.yaml")
        self.report()

    def test_store_elsewhere(self):
        # The config relative to the cwd, the store in another folder: the
        # store keeps the config's folder (config_dir), not only its path.
        os.mkdir(self.path("out"))
        sieve("run", "r.yaml", "--store", "out/o.sieve", "--quiet", check=0, cwd=self.dir)
        self.report("out/o.sieve")


# A space a lua.load script registers (bug hunt 3: the report and the live
# page said "no space plugin named 'lua_nb201'", while the same script as
# space: {plugin: lua, script: ...} was rebuilt).
LUA_CONFIG = """name: ls
seed: 0
lua: {load: [nb201.lua]}
space: {plugin: lua_nb201}
optimizer: {plugin: random}
evaluator: {plugin: tabular, table: %s, key: arch_str, metrics: [cifar10_valid_acc]}
objective: {metric: cifar10_valid_acc, direction: maximize}
budget: {evaluations: 5}
"""


class LuaLoadedSpace(Workdir):
    prefix = "sieve-report-lua-"

    def setUp(self):
        super().setUp()
        with open(os.path.join(ROOT, "search_spaces", "nb201.lua")) as f:
            self.write("nb201.lua", f.read())
        self.write("ls.yaml", LUA_CONFIG % os.path.join(ROOT, "data", "nb201", "nb201.csv"))
        sieve("run", "ls.yaml", "--quiet", check=0, cwd=self.dir)

    def rebuilt(self, page):
        note = re.search(r'<p class="note">The study&apos;s space could not[^<]*', page)
        self.assertIsNone(note, note and note.group(0))
        self.assertIn('<section id="importance">', page)
        # Each of the 5 top rows draws its cell and the network the space built.
        self.assertEqual(page.count('<svg xmlns="http://www.w3.org/2000/svg" class="cell"'), 5)
        self.assertEqual(page.count('<p class="net">'), 5)

    def test_report(self):
        out = self.path("ls.html")
        sieve("report", self.path("ls.sieve"), "-o", out, check=0, cwd="/")
        with open(out) as f:
            self.rebuilt(f.read())

    def test_serve(self):
        p = subprocess.Popen([SIEVE, "serve", self.path("ls.sieve"), "--port", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd="/")
        try:
            m = re.match(r"^serving .* on (http://[0-9.]+:\d+/)", p.stdout.readline())
            self.assertIsNotNone(m)
            with urllib.request.urlopen(m.group(1), timeout=30) as r:
                self.rebuilt(r.read().decode("utf-8"))
        finally:
            p.kill()
            p.communicate()

    def test_script_missing(self):
        # The study stays readable; the page says why its space is not.
        os.rename(self.path("nb201.lua"), self.path("moved.lua"))
        out = self.path("ls.html")
        sieve("report", self.path("ls.sieve"), "-o", out, check=0, cwd="/")
        with open(out) as f:
            page = f.read()
        self.assertIn("could not be rebuilt: its lua.load scripts did not load", page)
        self.assertIn("nb201.lua", page)
        self.assertIn('<section id="top">', page)

    def test_store_grants_not_honoured(self):
        # A viewer opens stores from anyone: a config that granted its
        # scripts io (here to write a file when loaded) does not pass the
        # grant to sieve report, which runs the script in the bare sandbox.
        with open(self.path("nb201.lua")) as f:
            body = f.read()
        marker = self.path("written-by-script")
        self.write("nb201.lua", "if io then local f = io.open(%r, 'w'); f:write('x'); f:close() end\n%s"
                   % (marker, body))
        self.write("io.yaml", LUA_CONFIG.replace("lua: {load: [nb201.lua]}",
                                                 "lua: {load: [nb201.lua], allow: [io]}").replace("name: ls", "name: io")
                   % os.path.join(ROOT, "data", "nb201", "nb201.csv"))
        sieve("run", "io.yaml", "--quiet", check=0, cwd=self.dir)
        self.assertTrue(os.path.exists(marker))  # sieve run honours the config's grant
        os.remove(marker)
        out = self.path("io.html")
        sieve("report", self.path("io.sieve"), "-o", out, check=0, cwd="/")
        self.assertFalse(os.path.exists(marker))
        with open(out) as f:
            page = f.read()
        self.assertIn("could not be rebuilt: its lua.load scripts did not load", page)
        self.assertIn("io", page)
        # What the user can do is said for a viewer, not "(sieve lua --allow io)".
        self.assertIn("sieve report and sieve serve run a store's Lua with no grants", html.unescape(page))
        self.assertNotIn("sieve lua --allow", page)

    def test_store_limits_not_honoured(self):
        # A config that lifted its scripts' time limit (seconds: 0) does not
        # lift a viewer's: a script that loops (here replaced after the run)
        # is stopped within the viewer's 10 s, and the page says why.
        self.write("lim.yaml", LUA_CONFIG.replace("lua: {load: [nb201.lua]}",
                                                  "lua: {load: [nb201.lua], seconds: 0}").replace("name: ls", "name: lim")
                   % os.path.join(ROOT, "data", "nb201", "nb201.csv"))
        sieve("run", "lim.yaml", "--quiet", check=0, cwd=self.dir)
        self.write("nb201.lua", "while true do end\n")
        out = self.path("lim.html")
        start = time.monotonic()
        sieve("report", self.path("lim.sieve"), "-o", out, check=0, cwd="/", timeout=60)
        self.assertLess(time.monotonic() - start, 40)
        with open(out) as f:
            page = f.read()
        self.assertIn("could not be rebuilt: its lua.load scripts did not load", page)
        # The message says the limit is the viewer's (it said "raise lua.seconds, or 0 for no limit",
        # which this config did, to no effect).
        self.assertIn("time limit exceeded: more than 10.0 seconds in one call into Lua (the most this command lets "
                      "a script from a model file or a store take; its lua: options cannot raise it)", page)


if __name__ == "__main__":
    import unittest
    unittest.main()
