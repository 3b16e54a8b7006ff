#!/usr/bin/env python3
"""`sieve serve` with a real HTTP client (urllib) against a study running in
another process: the page and /status follow the new trials within seconds,
unknown paths get 404, the server binds to localhost unless --host says
otherwise, bad stores are refused clearly, and the study finishes as it
would unwatched.  Also `sieve run --report/--report-every`."""
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

SIEVE = os.environ["SIEVE_EXE"]
ROOT = os.environ["SIEVE_SOURCE_ROOT"]
SERVING = re.compile(r"^serving .* on (http://([0-9.]+):(\d+)/)")

# Branin with a delay per evaluation: a study that takes a few seconds.
STUDY = """name: slow
seed: 4
space: {plugin: hpo, file: %s}
optimizer: {plugin: random}
evaluator: {plugin: function, function: branin, delay: 0.15}
objective: {metric: value, direction: minimize}
budget: {evaluations: 40}
""" % os.path.join(ROOT, "search_spaces", "branin.yaml")


def get(url, timeout=10):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8")


class Serve(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="sieve-serve-")
        self.dir = self._tmp.name
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            for stream in (p.stdout, p.stderr):
                if stream:
                    stream.close()
        self._tmp.cleanup()

    def start(self, *args):
        p = subprocess.Popen([SIEVE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=self.dir)
        self.procs.append(p)
        return p

    def serve(self, store, *extra):
        p = self.start("serve", store, "--port", "0", *extra)
        line = p.stdout.readline()
        m = SERVING.match(line)
        self.assertIsNotNone(m, f"serve said {line!r}, stderr {p.stderr.read() if p.poll() is not None else ''}")
        return p, m.group(1), m.group(2), int(m.group(3))

    def test_live_study(self):
        config = os.path.join(self.dir, "slow.yaml")
        with open(config, "w") as f:
            f.write(STUDY)
        store = os.path.join(self.dir, "slow.sieve")
        run = self.start("run", config, "--store", store, "--quiet")
        deadline = time.time() + 30
        while not os.path.exists(store) and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # the study's metadata is in
        server, url, host, port = self.serve(store)
        self.assertEqual(host, "127.0.0.1", "localhost only by default")

        status, page = get(url)
        self.assertEqual(status, 200)
        self.assertIn('<section id="live">', page)
        self.assertIn('<section id="header">', page)
        first = json.loads(get(url + "status")[1])
        # New trials show within a few seconds, on /status and on the page.
        deadline = time.time() + 8
        later = first
        while later["finished"] < first["finished"] + 3 and time.time() < deadline:
            time.sleep(0.3)
            later = json.loads(get(url + "status")[1])
        self.assertGreaterEqual(later["finished"], first["finished"] + 3, "the status follows the study")
        self.assertRegex(later["progress"], r"^\[\d+/40\]")
        page2 = get(url)[1]
        ok = int(re.search(r'<dd id="count-ok">(\d+)</dd>', page2).group(1))
        self.assertGreaterEqual(ok, later["counts"]["ok"])

        self.assertEqual(get(url + "nothing-here")[0], 404)
        self.assertEqual(get(url + "status/x")[0], 404)

        # The study ends as it would unwatched: every evaluation stored, the writer never locked out.
        self.assertEqual(run.wait(timeout=60), 0, run.stderr.read())
        final = json.loads(get(url + "status")[1])
        self.assertEqual(final["counts"]["ok"], 40)
        self.assertEqual(final["running"], [])
        self.assertIn('<dd id="count-ok">40</dd>', get(url)[1])
        self.assertIsNone(server.poll(), "the server is still up")

    def test_localhost_binding(self):
        store = self.empty_store()
        _, _, host, port = self.serve(store)
        # Reachable on the loopback, and not on another address of this machine.
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        other = self.other_address()
        if other is not None:
            with self.assertRaises(OSError):
                socket.create_connection((other, port), timeout=2).close()
        _, url, host, port = self.serve(store, "--host", "0.0.0.0")
        self.assertEqual(host, "0.0.0.0")
        self.assertEqual(get(f"http://127.0.0.1:{port}/status")[0], 200)

    def test_bad_stores(self):
        p = subprocess.run([SIEVE, "serve", os.path.join(self.dir, "missing.sieve")], capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("missing.sieve: no such store", p.stderr)
        junk = os.path.join(self.dir, "junk.sieve")
        with open(junk, "w") as f:
            f.write("not a database\n")
        p = subprocess.run([SIEVE, "serve", junk], capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("not a sieve store", p.stderr)
        p = subprocess.run([SIEVE, "serve", self.empty_store(), "--host", "nowhere"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("is not an IP address", p.stderr)

    def test_run_report(self):
        config = os.path.join(ROOT, "configs", "nb201-random.yaml")
        store, page = os.path.join(self.dir, "r.sieve"), os.path.join(self.dir, "r.html")
        p = subprocess.run([SIEVE, "run", config, "--store", store, "--quiet", "--set", "budget.evaluations=12",
                            "--report", page, "--report-every", "5"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"report: {page}", p.stdout)
        with open(page) as f:
            text = f.read()
        self.assertIn('<dd id="count-ok">12</dd>', text)
        self.assertIn('<section id="top">', text)
        p = subprocess.run([SIEVE, "run", config, "--report-every", "5"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--report-every needs --report FILE", p.stderr)

    def empty_store(self):
        store = os.path.join(self.dir, "empty.sieve")
        if not os.path.exists(store):
            subprocess.run([SIEVE, "run", os.path.join(ROOT, "configs", "branin-random.yaml"), "--store", store,
                            "--quiet", "--set", "budget.seconds=0.000001", "--set", "budget.evaluations=0"],
                           check=True, capture_output=True)
        return store

    @staticmethod
    def other_address():
        """A non-loopback address of this machine, or None."""
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.connect(("10.255.255.255", 1))
            address = s.getsockname()[0]
            s.close()
            return None if address.startswith("127.") else address
        except OSError:
            return None


if __name__ == "__main__":
    unittest.main(verbosity=2)
