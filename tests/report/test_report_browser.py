#!/usr/bin/env python3
"""The report in a real browser: headless Chromium (Debian's `chromium`)
loads the reports of real studies (an NB201 table study, NSGA-II on two
objectives, Hyperband, dedupe + screen, one with failed trials, an empty
one, quickstart's trained networks, and one whose every stored text is
hostile markup, with `sieve serve`'s page of it), and the test reads the rendered
DOM (--dump-dom) to check each expected section and plot and the number of
points, computed here from `sieve export`.  Every SVG must be well-formed
XML (xmllint), the page must fetch nothing, and a screenshot of each is kept
in the build tree (tests/report/artifacts/).  Exits 77 (skipped) where
Chromium or xmllint is missing.

    test_report_browser.py [--docs]   # --docs: full quickstart, screenshot into docs/
"""
import csv
import html
import html.parser
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest
import urllib.request

SIEVE = os.environ["SIEVE_EXE"]
ROOT = os.environ["SIEVE_SOURCE_ROOT"]
BUILD = os.environ["SIEVE_BUILD_ROOT"]
CONFIGS = os.path.join(ROOT, "configs")
HERE = os.path.dirname(os.path.abspath(__file__))
ARTIFACTS = os.path.join(BUILD, "tests", "report", "artifacts")
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-headless-shell", "chromium-browser")
                 if shutil.which(n)), None)
XMLLINT = shutil.which("xmllint")
MAX_POINTS = 2000  # SIEVE_REPORT_MAX_POINTS: these studies stay below it


def sieve(*args, check=0, timeout=300, cwd=None):
    p = subprocess.run([SIEVE, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)
    if check is not None and p.returncode != check:
        raise AssertionError(f"sieve {' '.join(args)} exited {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def rows(store):
    return list(csv.DictReader(io.StringIO(sieve("export", store).stdout)))


def chromium(*args):
    """Starts headless Chromium; finish() waits and returns its stdout."""
    # --no-sandbox: tests may run as root (containers); nothing remote is loaded.
    profile = tempfile.mkdtemp(prefix="sieve-chromium-")
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--disable-extensions", "--user-data-dir=" + profile, *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), profile


def finish(started):
    proc, profile = started
    out, err = proc.communicate(timeout=120)
    shutil.rmtree(profile, ignore_errors=True)
    if proc.returncode != 0:
        raise AssertionError(f"chromium exited {proc.returncode}: {err[-2000:]}")
    return out


class Dom(html.parser.HTMLParser):
    """What the tests count in the rendered DOM: sections, plots and their
    marks (by class), table rows."""

    def __init__(self, text):
        super().__init__()
        self.sections, self.plots, self.tables, self.cells = [], {}, {}, []
        self.svg, self.table, self.depth = None, None, 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "section":
            self.sections.append(a.get("id"))
        elif tag == "svg":
            self.svg = a.get("id") or ("cell" if "cell" in classes else "?")
            if self.svg == "cell":
                self.cells.append({"edges": 0})
            self.plots.setdefault(self.svg, {"pt": 0, "classes": {}, "bars": [], "polyline": 0})
        elif self.svg is not None:
            p = self.plots[self.svg]
            if tag == "circle" and "pt" in classes:
                p["pt"] += 1
                for c in classes[1:]:
                    p["classes"][c] = p["classes"].get(c, 0) + 1
            elif tag == "rect" and "bar" in classes:
                p["bars"].append((classes[1] if len(classes) > 1 else "", int(a.get("data-count", -1))))
            elif tag == "polyline":
                p["polyline"] += 1
            elif tag == "g" and "edge" in classes and self.svg == "cell":
                self.cells[-1]["edges"] += 1
        if tag == "table":
            self.table = a.get("id")
            self.tables.setdefault(self.table, 0)
        elif tag == "tr" and self.table is not None:
            self.tables[self.table] += 1

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None
        elif tag == "table":
            self.table = None


def front_size(points):
    """Non-dominated points (both larger-is-better), every pair compared."""
    return sum(1 for p in points
               if not any(q[0] >= p[0] and q[1] >= p[1] and (q[0] > p[0] or q[1] > p[1]) for q in points))


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="sieve-report-")
        cls.dir = cls._tmp.name
        os.makedirs(ARTIFACTS, exist_ok=True)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def study(self, name, config, *sets, text=None):
        """Runs a study, writes its report, renders it; returns (rows, dom, html)."""
        store = os.path.join(self.dir, name + ".sieve")
        if text is not None:
            config = os.path.join(self.dir, name + ".yaml")
            with open(config, "w") as f:
                f.write(text)
        args = ["run", config, "--store", store, "--quiet"]
        for s in sets:
            args += ["--set", s]
        # The whole quickstart (--docs) trains 8 networks: minutes on a busy machine.
        sieve(*args, cwd=self.dir, timeout=1800 if DOCS else 300)
        page = os.path.join(self.dir, name + ".html")
        out = sieve("report", store, "-o", page).stdout
        self.assertIn(f"report: {page}", out)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.check_static(text)
        # The DOM and the screenshot at once: two processes, two cores.
        shot = os.path.join(ARTIFACTS, name + ".png")
        shooting = chromium("--window-size=1200,2600", "--screenshot=" + shot, "file://" + page)
        dom = Dom(finish(chromium("--dump-dom", "file://" + page)))
        finish(shooting)
        with open(shot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", "the screenshot is a PNG")
        return rows(store), dom, text

    def check_static(self, text):
        # Self-contained: no script, style, font or image from elsewhere.
        self.assertNotRegex(text, r"<(script|link|img|iframe)[^>]*(src|href)=")
        self.assertNotRegex(text, r"url\(")
        stripped = text.replace('xmlns="http://www.w3.org/2000/svg"', "")
        self.assertNotRegex(stripped, r"https?://")
        # Every SVG is well-formed XML.
        svgs = re.findall(r"<svg\b.*?</svg>", text, re.S)
        doc = "<svgs>" + "".join(svgs) + "</svgs>"
        p = subprocess.run([XMLLINT, "--noout", "-"], input=doc, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, "SVG not well-formed:\n" + p.stderr[-2000:])

    def count(self, rs, *statuses):
        return sum(1 for r in rs if r["status"] in statuses)

    def test_table_study(self):
        rs, dom, _ = self.study("table", os.path.join(CONFIGS, "nb201-random.yaml"), "budget.evaluations=40")
        for s in ("header", "funnel", "history", "importance", "top"):
            self.assertIn(s, dom.sections)
        for s in ("pareto", "fidelity", "proxies", "failures", "empty"):
            self.assertNotIn(s, dom.sections)
        ok = self.count(rs, "ok")
        self.assertEqual(ok, 40)
        self.assertEqual(dom.plots["history-trial"]["pt"], ok)
        self.assertEqual(dom.plots["history-time"]["pt"], ok)
        self.assertEqual(dom.plots["history-trial"]["polyline"], 1, "one best-so-far line")
        self.assertEqual(dom.plots["parallel-plot"]["polyline"], ok)
        self.assertEqual(len(dom.plots["importance-plot"]["bars"]), 6, "NB201 has six decisions")
        self.assertEqual(dom.tables["top-table"], 1 + 10, "header and report.top rows")
        # Each top row holds its cell: 4 nodes, 6 labelled edges.
        self.assertEqual(len(dom.cells), 10)
        self.assertTrue(all(c["edges"] == 6 for c in dom.cells))
        self.assertIn(40, [n for c, n in dom.plots["funnel-plot"]["bars"]])

    def test_nsga2(self):
        rs, dom, text = self.study("nsga2", os.path.join(CONFIGS, "nb201-nsga2.yaml"), "budget.evaluations=60")
        self.assertIn("pareto", dom.sections)
        ok = [r for r in rs if r["status"] == "ok"]
        points = [(float(r["cifar10_valid_acc"]), -float(r["lat_ms_gold_6226"])) for r in ok]
        front = front_size(points)
        plot = dom.plots["pareto-plot"]
        self.assertEqual(plot["pt"], len(ok))
        self.assertEqual(plot["classes"].get("front", 0), front)
        self.assertEqual(plot["classes"].get("dominated", 0), len(ok) - front)
        self.assertEqual(dom.tables["pareto-table"], 1 + min(front, 50))
        self.assertIn(f"{front} non-dominated of {len(ok)} evaluated", text)

    def test_hyperband(self):
        rs, dom, _ = self.study("hyperband", os.path.join(CONFIGS, "branin-hyperband.yaml"), "budget.evaluations=60")
        self.assertIn("fidelity", dom.sections)
        ok = [r for r in rs if r["status"] == "ok" and r["fidelity"] not in ("", "nan")]
        self.assertGreater(len({r["fidelity"] for r in ok}), 1)
        self.assertEqual(dom.plots["fidelity-plot"]["pt"], len(ok))
        by_config = {}
        for r in ok:
            by_config.setdefault(r["genotype"], set()).add(r["fidelity"])
        self.assertEqual(dom.plots["fidelity-plot"]["polyline"], sum(1 for f in by_config.values() if len(f) > 1))
        # An hpo space: the importance of its two decisions, no networks.
        self.assertEqual(len(dom.plots["importance-plot"]["bars"]), 2)
        self.assertEqual(dom.cells, [])

    def test_dedupe_and_screen(self):
        table = os.path.abspath(os.path.join(ROOT, "data", "nb201", "nb201.csv"))
        rs, dom, _ = self.study("screen", None, text=f"""name: screen
seed: 2
space: {{plugin: nb201, C: 4, N: 1, size: 8}}
optimizer: {{plugin: evolution, population: 6, sample_size: 2}}
evaluator: {{plugin: tabular, table: {table}, metrics: [cifar10_valid_acc]}}
objective: {{metric: cifar10_valid_acc}}
pipeline:
  - dedupe
  - screen: {{proxies: [naswot, params], keep_top: 2, batch: 5, batch_size: 8}}
budget: {{evaluations: 16}}
""")
        for s in ("funnel", "history", "proxies", "top"):
            self.assertIn(s, dom.sections)
        bars = dict((c or "all", n) for c, n in dom.plots["funnel-plot"]["bars"])
        self.assertEqual(bars["cached"], self.count(rs, "cached"))
        self.assertEqual(bars["screened"], self.count(rs, "screened"))
        self.assertGreater(bars["screened"], 0)
        ok = [r for r in rs if r["status"] == "ok"]
        for proxy in ("naswot", "params", "screen_score"):
            pairs = [r for r in ok if r.get(proxy) not in (None, "", "nan")]
            self.assertEqual(dom.plots["proxy-" + proxy]["pt"], len(pairs), proxy)
        self.assertEqual(dom.tables["proxy-table"], 1 + 3)
        h = dom.plots["history-trial"]
        self.assertEqual(h["pt"], self.count(rs, "ok", "cached", "failed"))
        self.assertEqual(h["classes"].get("cached", 0), self.count(rs, "cached"))

    def test_failed_trials(self):
        fixture = os.path.join(HERE, "fixtures", "flaky.py")
        search = os.path.join(ROOT, "search_spaces", "branin.yaml")
        rs, dom, text = self.study("failed", None, text=f"""name: failed
seed: 1
space: {{plugin: hpo, file: {search}}}
optimizer: {{plugin: random}}
evaluator: {{plugin: command, argv: [{sys.executable}, {fixture}], stdin: json, timeout: 30}}
objective: {{metric: value, direction: minimize}}
budget: {{evaluations: 12}}
""")
        failed = self.count(rs, "failed")
        self.assertEqual(failed, 4)
        self.assertIn("failures", dom.sections)
        self.assertEqual(dom.tables["failure-table"], 1 + 1, "one reason")
        self.assertIn("out of memory (told to fail)", text)
        self.assertIn("4 evaluations failed, for 1 reason.", text)
        # a metric named fidelity is told apart from the table's own fidelity column
        self.assertIn("<th>metric.fidelity</th>", text)
        self.assertEqual(text.count("<th>fidelity</th>"), 1)
        h = dom.plots["history-trial"]
        self.assertEqual(h["classes"].get("failed", 0), failed)
        self.assertEqual(h["pt"], 12)
        self.assertEqual([n for c, n in dom.plots["funnel-plot"]["bars"] if c == "failed"], [failed])

    def test_empty(self):
        rs, dom, _ = self.study("empty", os.path.join(CONFIGS, "branin-random.yaml"), "budget.seconds=0.000001",
                                "budget.evaluations=0")
        self.assertEqual(rs, [])
        self.assertEqual([s for s in dom.sections], ["header", "empty"])
        self.assertEqual([p for p in dom.plots if p != "?"], [])

    def test_quickstart(self):
        """quickstart.yaml's trained networks (two, on 256 images, here;
        `--docs` runs it whole for the README's screenshot)."""
        sets = [] if DOCS else ["budget.evaluations=2", "evaluator.train_limit=256", "evaluator.validation=128",
                                "evaluator.test=false"]
        rs, dom, _ = self.study("quickstart", os.path.join(CONFIGS, "quickstart.yaml"), *sets)
        ok = self.count(rs, "ok")
        self.assertEqual(dom.plots["history-trial"]["pt"], ok)
        self.assertEqual(len(dom.cells), ok)
        if DOCS:
            shutil.copy(os.path.join(ARTIFACTS, "quickstart.png"), os.path.join(ROOT, "docs", "report-quickstart.png"))


# Text a study's config, evaluator or store name may hold, made to run
# script if written into the page unescaped: an element with a handler, a
# quote that closes an attribute and opens a handler, and markup's
# special characters (bug hunt 3: a metric named like the first made the
# report's `best` line run it).
HOSTILE = "<img src=x onerror=document.body.dataset.pwned=1>"
ATTR = 'q" onmouseover="document.body.dataset.pwned=2'
BROKEN = "val<ue&\"'>"

HOSTILE_EVALUATOR = r"""import json, sys
d = json.load(sys.stdin)
x, c, t = d["params"]["x"], d["params"]["c"], d["trial"]
if t %% 4 == 3:
    print(json.dumps({"status": "failed", "reason": %r + c}))
else:
    print(json.dumps({%r: x, %r: 1 - x * x, %r: 2 * x, "synflow": 3 * x + t %% 2}))
""" % (HOSTILE, HOSTILE, ATTR, BROKEN)


def yaml_quote(text):
    return "'" + text.replace("'", "''") + "'"


class Hostile(html.parser.HTMLParser):
    """Every element and attribute of a rendered DOM, and the body's."""

    def __init__(self, text):
        super().__init__()
        self.tags, self.handlers, self.body = set(), [], {}
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.handlers += [(tag, k) for k, _ in attrs if k.startswith("on")]
        if tag == "body":
            self.body = dict(attrs)


class HostileText(unittest.TestCase):
    """A study whose every stored text is hostile: its name, the store's file
    name, the objectives' and other metrics' names, a categorical's choices
    (so the genotypes), failure reasons, a running trial's genotype and
    stage; the report and `sieve serve`'s page render in Chromium with no
    element or handler injected, the SVGs stay well-formed XML, and the
    texts read back as they were."""

    def check_dom(self, dom, where):
        d = Hostile(dom)
        self.assertNotIn("img", d.tags, where)
        self.assertEqual(d.handlers, [], where)
        self.assertNotIn("data-pwned", d.body, where)
        # The texts are there, as text.
        for text in (HOSTILE, BROKEN):
            self.assertIn(html.escape(text, quote=False), dom, where)

    def test_hostile_text(self):
        with tempfile.TemporaryDirectory(prefix="sieve-hostile-") as self.dir:
            self.hostile_study()

    def hostile_study(self):
        script = os.path.join(self.dir, "ev.py")
        with open(script, "w") as f:
            f.write(HOSTILE_EVALUATOR)
        config = os.path.join(self.dir, "h.yaml")
        choices = ", ".join(yaml_quote(t) for t in (HOSTILE, ATTR, BROKEN))
        with open(config, "w") as f:
            f.write(f"""name: {yaml_quote(HOSTILE + ATTR)}
seed: 3
space: {{plugin: hpo, parameters: {{x: {{type: float, low: 0, high: 1}}, c: [{choices}]}}}}
optimizer: {{plugin: random}}
evaluator: {{plugin: command, argv: [{sys.executable}, {script}], stdin: json}}
objective: [{{metric: {yaml_quote(HOSTILE)}, direction: minimize}}, {{metric: {yaml_quote(ATTR)}}}]
budget: {{evaluations: 12}}
""")
        store = os.path.join(self.dir, HOSTILE + ".sieve")
        sieve("run", config, "--store", store, "--quiet")
        self.assertEqual(len(rows(store)), 12)
        # What a store can hold that this run did not write: a screen stage
        # naming a proxy (its section compares it with the objective), and
        # a running trial with a hostile genotype and stage.
        with sqlite3.connect(store) as db:
            stored = db.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0]
            db.execute("UPDATE meta SET value = ? WHERE key = 'config'",
                       (stored + "pipeline:\n  - screen: {proxies: [synflow]}\n",))
            db.execute("INSERT INTO trials (number, genotype, status, stage) VALUES (12, ?, 'pending', ?)",
                       ("c=" + HOSTILE + ",x=0.5", HOSTILE + ATTR))
        page = os.path.join(self.dir, "h.html")
        sieve("report", store, "-o", page)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        Report.check_static(self, text)
        for section in ("pareto", "proxies", "importance", "top", "failures"):
            self.assertIn(f'<section id="{section}">', text)
        self.check_dom(finish(chromium("--dump-dom", "file://" + page)), "sieve report")

        # The live page and its status.
        p = subprocess.Popen([SIEVE, "serve", store, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:
            m = re.match(r"^serving .* on (http://[0-9.]+:\d+/)", p.stdout.readline())
            self.assertIsNotNone(m)
            with urllib.request.urlopen(m.group(1), timeout=30) as r:
                live = r.read().decode("utf-8")
            self.assertIn('<section id="live">', live)
            Report.check_static(self, live)
            self.check_dom(finish(chromium("--dump-dom", m.group(1))), "sieve serve")
            with urllib.request.urlopen(m.group(1) + "status", timeout=30) as r:
                status = json.loads(r.read().decode("utf-8"))
        finally:
            p.kill()
            p.communicate()
        self.assertEqual(status["running"], [{"trial": 12, "genotype": "c=" + HOSTILE + ",x=0.5",
                                              "stage": HOSTILE + ATTR}])


DOCS = "--docs" in sys.argv
if __name__ == "__main__":
    if CHROMIUM is None or XMLLINT is None:
        print("SKIP: the browser test needs Debian's chromium and libxml2-utils' xmllint "
              "(scripts/setup.sh installs them)")
        sys.exit(77)
    if DOCS:
        sys.argv.remove("--docs")
    unittest.main(verbosity=2)
