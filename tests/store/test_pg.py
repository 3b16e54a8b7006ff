#!/usr/bin/env python3
"""Studies on a real PostgreSQL server (tests/support/pg_server.py: initdb
and pg_ctl in a temporary folder, Unix socket only) beside the same studies
in SQLite files: the same trials and results, kill and resume, the single
writer, copies both ways, a server that goes away, bad URLs and refused
credentials.  Skipped, saying why, where PostgreSQL is not installed."""
import csv
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.environ["SIEVE_SOURCE_ROOT"], "tests", "support"))
import sieve_cli  # noqa: E402
from pg_server import PASSWORD, PgServer  # noqa: E402
from sieve_cli import PROGRESS, ROOT, SIEVE, Workdir  # noqa: E402

SKIP = PgServer.skip_reason()
SERVER = None

# The dedupe stage over NAS-Bench-201 looked up in the published table:
# cached trials, hashes and the optimizer's state all go through the store.
TABULAR = """name: tabular
seed: 3
space: {plugin: nb201}
optimizer: {plugin: evolution, population: 10, sample_size: 3}
evaluator:
  plugin: tabular
  table: %s
  key: arch_str
  metrics: [cifar10_valid_acc, params_m]
objective: {metric: cifar10_valid_acc, direction: maximize}
pipeline:
  - dedupe: {hash: functional}
budget: {evaluations: 60}
"""

SLOW = """name: slow
seed: 7
space: {plugin: hpo, file: %s}
optimizer: {plugin: tpe}
evaluator: {plugin: function, function: branin, delay: %s}
objective: {metric: value, direction: minimize}
budget: {evaluations: %d}
"""


def setUpModule():
    global SERVER
    if SKIP is None:
        SERVER = PgServer().start()


def tearDownModule():
    if SERVER is not None:
        SERVER.cleanup()


def sieve(*args, check=None, timeout=120):
    # A study on the server is evaluated by workers: one of this machine's
    # unless the test starts its own.
    if args and args[0] == "run" and any(a.startswith("postgresql:") for a in args) and "--in-flight" not in args:
        args = (*args, "--local-workers", "1")
    return sieve_cli.sieve(*args, check=check, timeout=timeout)


def export_rows(store, stable=True):
    return sieve_cli.export_rows(store, stable)


@unittest.skipIf(SKIP is not None, f"PostgreSQL tests skipped: {SKIP}")
class PgCase(Workdir):
    prefix = "sieve-pg-test-"

    def tabular(self):
        return self.write("tabular.yaml", TABULAR % os.path.join(ROOT, "data", "nb201", "nb201.csv"))

    def slow(self, delay=0.02, n=30):
        return self.write("slow.yaml", SLOW % (os.path.join(ROOT, "search_spaces", "branin.yaml"), delay, n))


class TestSameStudy(PgCase):
    def test_sqlite_and_postgresql_agree(self):
        cfg = self.tabular()
        sieve("run", cfg, "--store", self.path("a.sieve"), "--quiet", check=0)
        url = SERVER.url("same")
        p = sieve("run", cfg, "--store", url, "--quiet", check=0)
        self.assertIn(f"store: {url}", p.stdout)
        ref = export_rows(self.path("a.sieve"))
        self.assertGreater(len(ref), 60, "the dedupe stage should have answered some proposals from the cache")
        self.assertEqual(export_rows(url), ref)
        # JSON too: every double read back as it was written.
        self.assertEqual(sieve("export", url, "--format", "json", "--summary", check=0).stdout,
                         sieve("export", self.path("a.sieve"), "--format", "json", "--summary", check=0).stdout)
        # The report reads the server's study.
        sieve("report", url, "-o", self.path("r.html"), check=0)
        self.assertGreater(os.path.getsize(self.path("r.html")), 1000)
        # Without -o: STUDY.html in the current folder (it tried to write a
        # file named after the URL).
        p = sieve_cli.sieve("report", url, check=0, cwd=self.dir)
        self.assertIn("report: same.html", p.stdout)
        with open(self.path("same.html")) as f:
            self.assertIn("</html>", f.read())

        # Copies both ways keep every row; a copy resumes like the original.
        sieve("store", "copy", url, self.path("back.sieve"), check=0)
        self.assertEqual(export_rows(self.path("back.sieve")), ref)
        sieve("store", "copy", self.path("a.sieve"), SERVER.url("copied"), check=0)
        self.assertEqual(export_rows(SERVER.url("copied")), ref)
        p = sieve("store", "copy", self.path("a.sieve"), SERVER.url("copied"), check=1)
        self.assertIn("already holds a study", p.stderr)
        # The schema's version is where a newer sieve will look for it.
        self.assertEqual(SERVER.psql("SELECT version FROM same.sieve_schema", db="sieve").strip(), "4")

    def test_resume_after_copy(self):
        cfg = self.slow(delay=0, n=30)
        sieve("run", cfg, "--store", self.path("ref.sieve"), "--quiet", check=0)
        ref = export_rows(self.path("ref.sieve"))
        # Half a study in a file, the rest on the server.
        half = self.slow(delay=0, n=15)
        sieve("run", half, "--store", self.path("half.sieve"), "--quiet", check=0)
        sieve("store", "copy", self.path("half.sieve"), SERVER.url("moved"), check=0)
        cfg = self.slow(delay=0, n=30)
        sieve("run", cfg, "--store", SERVER.url("moved"), "--resume", "--quiet", check=0)
        self.assertEqual(export_rows(SERVER.url("moved")), ref)


class TestKillResume(PgCase):
    def run_until(self, cfg, store, resume, kill_at=None, extra=("--local-workers", "1", "--lease", "2")):
        extra = extra if store.startswith("postgresql:") else ()
        sieve_cli.run_until(self, ["run", cfg, "--store", store, *extra] + (["--resume"] if resume else []), kill_at)

    def test_killed_coordinator_resumes(self):
        cfg = self.slow()
        self.run_until(cfg, self.path("ref.sieve"), resume=False)
        ref = export_rows(self.path("ref.sieve"))
        url = SERVER.url("killed")
        resume = False
        for k in (1, 7, 20):
            self.run_until(cfg, url, resume, kill_at=k)
            resume = True
            done = [r for r in export_rows(url) if r["status"] != "pending"]
            self.assertGreaterEqual(len(done), k, "a finished trial was lost")
            self.assertEqual(done, ref[:len(done)])
        self.run_until(cfg, url, resume=True)
        self.assertEqual(export_rows(url), ref)

    def test_second_writer_refused(self):
        cfg = self.slow(delay=0.05, n=400)
        url = SERVER.url("busy")
        proc = subprocess.Popen([SIEVE, "run", cfg, "--store", url, "--local-workers", "1"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            for line in proc.stdout:
                if PROGRESS.match(line):
                    break
            p = sieve("run", cfg, "--store", url, "--resume", check=1)
            self.assertRegex(p.stderr, r"store is in use by another sieve process \(study 'busy' is locked by the "
                                       r"session of server process \d+")
            # Another study of the same database is not locked by it.
            sieve("run", self.slow(delay=0, n=3), "--store", SERVER.url("other"), "--quiet", check=0)
            self.assertGreaterEqual(len(export_rows(url, stable=False)), 1)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
        # The lock went with the killed session.
        sieve("run", self.slow(delay=0.05, n=2), "--store", url, "--resume", "--quiet", check=0)


EVALUATED = re.compile(r"^sieve worker (\d+): trial (\d+): (ok|failed)$", re.M)


class TestWorkers(PgCase):
    def start_workers(self, n, *extra):
        return [subprocess.Popen([SIEVE, "worker", self.url, "--idle-exit", "8", *extra], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(n)]

    def finish(self, workers):
        logs = []
        for w in workers:
            out, err = w.communicate(timeout=60)
            logs.append(err)
        return logs

    def evaluated(self, logs):
        return [int(m.group(2)) for log in logs for m in EVALUATED.finditer(log)]

    def test_four_workers_each_candidate_once(self):
        self.url = SERVER.url("four")
        cfg = self.slow(delay=0.1, n=40)
        coordinator = subprocess.Popen([SIEVE, "run", cfg, "--store", self.url, "--in-flight", "4", "--quiet"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        workers = self.start_workers(4)
        out, err = coordinator.communicate(timeout=120)
        self.assertEqual(coordinator.returncode, 0, err)
        logs = self.finish(workers)
        self.assertTrue(all(w.returncode == 0 for w in workers), logs)
        rows = export_rows(self.url, stable=False)
        self.assertEqual(len(rows), 40)
        self.assertTrue(all(r["status"] == "ok" for r in rows), rows)
        done = self.evaluated(logs)
        self.assertEqual(sorted(done), list(range(40)), "each candidate evaluated exactly once")
        self.assertGreater(sum(1 for log in logs if EVALUATED.search(log)), 1, "the work was shared")
        self.assertTrue(all("the study is finished; exiting" in log for log in logs))

    def test_tell_order_trial_matches_local_workers(self):
        """tell_order: trial through the queue: three workers on the server tell the optimizer
        what three local threads do, in trial order, so the studies are the same."""
        cfg = self.write("ordered.yaml", SLOW % (os.path.join(ROOT, "search_spaces", "branin.yaml"), 0.02, 15)
                         + "workers: 3\ntell_order: trial\n")
        sieve("run", cfg, "--store", self.path("ordered.sieve"), "--quiet", check=0)
        self.url = SERVER.url("ordered")
        coordinator = subprocess.Popen([SIEVE, "run", cfg, "--store", self.url, "--in-flight", "3", "--quiet"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        workers = self.start_workers(3)
        out, err = coordinator.communicate(timeout=120)
        self.assertEqual(coordinator.returncode, 0, err)
        self.finish(workers)
        self.assertEqual(export_rows(self.url), export_rows(self.path("ordered.sieve")))

    def test_killed_worker_evaluation_runs_elsewhere(self):
        self.url = SERVER.url("killw")
        cfg = self.slow(delay=1.0, n=6)
        coordinator = subprocess.Popen([SIEVE, "run", cfg, "--store", self.url, "--in-flight", "2", "--quiet"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        victim = subprocess.Popen([SIEVE, "worker", self.url, "--lease", "2"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        claimed = None
        for line in victim.stderr:
            m = re.search(r"trial (\d+): evaluating", line)
            if m:
                claimed = int(m.group(1))
                break
        victim.kill()
        victim.communicate()
        survivors = self.start_workers(1, "--lease", "2")
        out, err = coordinator.communicate(timeout=120)
        self.assertEqual(coordinator.returncode, 0, err)
        logs = self.finish(survivors)
        self.assertIn(f"trial {claimed}: the lease of", logs[0])
        rows = export_rows(self.url, stable=False)
        self.assertEqual(len(rows), 6)
        self.assertTrue(all(r["status"] == "ok" for r in rows), rows)
        self.assertEqual(sorted(self.evaluated(logs)), list(range(6)))

    def test_coordinator_killed_workers_keep_going(self):
        cfg = self.slow(delay=0.05, n=30)
        sieve("run", cfg, "--store", self.path("ref.sieve"), "--quiet", check=0)
        ref = export_rows(self.path("ref.sieve"))
        self.url = SERVER.url("killc")
        workers = self.start_workers(1)
        proc = subprocess.Popen([SIEVE, "run", cfg, "--store", self.url, "--in-flight", "1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in proc.stdout:
            m = PROGRESS.match(line)
            if m and int(m.group(1)) >= 10:
                proc.send_signal(signal.SIGKILL)
                break
        proc.communicate()
        self.assertEqual(proc.returncode, -signal.SIGKILL)
        time.sleep(0.5)  # the worker finishes its claim meanwhile
        self.assertIsNone(workers[0].poll(), "the worker outlives the coordinator")
        sieve("run", cfg, "--store", self.url, "--resume", "--in-flight", "1", "--quiet", check=0)
        logs = self.finish(workers)
        self.assertEqual(export_rows(self.url), ref)
        done = self.evaluated(logs)
        self.assertEqual(sorted(done), list(range(30)), "no trial lost or evaluated twice")

    def test_worker_started_elsewhere(self):
        """A worker reads the study's relative paths (here the space file) against the folder of
        the coordinator's config, not its own working directory, and names the study as the
        coordinator did (no name: the config's stem, not the URL's)."""
        url = SERVER.url("elsewhere")
        shutil.copy(os.path.join(ROOT, "search_spaces", "branin.yaml"), self.path("branin.yaml"))
        self.write("rel.yaml", SLOW.replace("name: slow\n", "") % ("branin.yaml", 0, 4))
        coordinator = subprocess.Popen([SIEVE, "run", "rel.yaml", "--store", url, "--in-flight", "1", "--quiet"],
                                       cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        worker = subprocess.Popen([SIEVE, "worker", url, "--idle-exit", "8"], cwd="/", stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            log = self.finish([worker])[0]  # it exits when the study is finished, or failing
            self.assertEqual(worker.returncode, 0, log)
        finally:
            if worker.returncode != 0:
                coordinator.kill()  # it would wait for a worker
            out, err = coordinator.communicate(timeout=120)
        self.assertEqual(coordinator.returncode, 0, err)
        self.assertIn("study 'rel' on postgresql:", log)
        self.assertEqual(sorted(self.evaluated([log])), [0, 1, 2, 3])
        self.assertIn("study 'rel'", out)
        # Where the study's folder holds the file no more, the worker says what it cannot run.
        os.remove(self.path("branin.yaml"))
        p = sieve("worker", url, check=2)
        self.assertIn("this worker cannot run the study's evaluator as stored", p.stderr)
        self.assertIn(self.path("branin.yaml"), p.stderr)

    def test_lua_evaluator_through_workers(self):
        """A Lua evaluator runs on the thread that loaded its script: a worker evaluates on that
        thread (it once claimed every trial and failed it, "called from another thread"), and
        --threads 2 runs one thread, saying so, rather than fail half the claims."""
        cfg = self.write("lua.yaml", LUA % (os.path.join(ROOT, "search_spaces", "branin.yaml"),
                                            os.path.join(ROOT, "examples", "lua", "branin.lua")))
        sieve("run", cfg, "--store", self.path("lua.sieve"), "--quiet", check=0)
        ref = export_rows(self.path("lua.sieve"))
        self.assertEqual([r["status"] for r in ref], ["ok"] * 4)
        url = SERVER.url("lua_local")
        sieve("run", cfg, "--store", url, "--quiet", check=0)  # --local-workers 1
        self.assertEqual(export_rows(url), ref)
        self.url = SERVER.url("lua_threads")
        coordinator = subprocess.Popen([SIEVE, "run", cfg, "--store", self.url, "--in-flight", "2", "--quiet"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        workers = self.start_workers(1, "--threads", "2")
        out, err = coordinator.communicate(timeout=120)
        self.assertEqual(coordinator.returncode, 0, err)
        logs = self.finish(workers)
        self.assertEqual(workers[0].returncode, 0, logs)
        self.assertIn("evaluator 'lua' runs in Lua, on one thread: 1 thread, not 2", logs[0])
        rows = export_rows(self.url, stable=False)
        self.assertEqual([r["status"] for r in rows], ["ok"] * 4, rows)

    def test_idle_exit_zero(self):
        """--idle-exit 0: the worker exits as soon as nothing is claimable (it once waited for ever).
        The coordinator is killed with one evaluation queued: the queue stays open, the worker
        evaluates that one and exits."""
        self.url = SERVER.url("idle0")
        coordinator = subprocess.Popen([SIEVE, "run", self.slow(delay=0, n=5), "--store", self.url, "--in-flight",
                                        "1", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        queued = "0"
        for _ in range(300):
            try:
                queued = SERVER.psql("SELECT count(*) FROM idle0.queue", db="sieve").strip()
            except RuntimeError:
                pass  # not made yet
            if queued != "0":
                break
            time.sleep(0.1)
        coordinator.kill()
        coordinator.communicate()
        self.assertEqual(queued, "1")
        worker = subprocess.run([SIEVE, "worker", self.url, "--idle-exit", "0"], capture_output=True, text=True,
                                timeout=60)
        self.assertEqual(worker.returncode, 0, worker.stderr)
        self.assertEqual(self.evaluated([worker.stderr]), [0])
        self.assertIn("nothing to evaluate; exiting (--idle-exit 0)", worker.stderr)

    def test_worker_refuses_what_it_cannot_run(self):
        url = SERVER.url("refuse")
        sieve("run", self.slow(delay=0, n=3), "--store", url, "--quiet", check=0)
        SERVER.psql("UPDATE refuse.meta SET value = '0.0.1' WHERE key = 'sieve_version'", db="sieve")
        p = sieve("worker", url, check=1)
        self.assertIn("a worker must run the same version", p.stderr)
        SERVER.psql("UPDATE refuse.meta SET value = replace(value, 'function: branin', 'function: nosuch') "
                    "WHERE key = 'config'; DELETE FROM refuse.meta WHERE key = 'sieve_version'", db="sieve")
        p = sieve("worker", url, check=2)
        self.assertIn("this worker cannot run the study's evaluator as stored", p.stderr)
        p = sieve("worker", self.path("x.sieve"), check=2)
        self.assertIn("STORE must be a postgresql:// URL", p.stderr)


# The branin function evaluated by a Lua script (examples/lua/branin.lua).
LUA = """name: lua
seed: 0
space: {plugin: hpo, file: %s}
optimizer: {plugin: random}
evaluator: {plugin: lua, script: %s}
objective: {metric: value, direction: minimize}
budget: {evaluations: 4}
"""

# examples/progress/prune.yaml with its paths made absolute: a real Python
# process per trial reports val_acc each epoch; the median rule prunes.
PRUNE = """space: {plugin: hpo, file: %(ex)s/space.yaml}
optimizer: {plugin: random}
evaluator:
  plugin: command
  argv: [%(python)s, %(ex)s/curve.py, --epochs, "9"]
  stdin: json
pruner: {kind: median, startup_trials: 3, warmup_steps: 2}
objective: {metric: val_acc, direction: maximize}
budget: {evaluations: 12}
seed: 1
"""


class TestTrainingAware(PgCase):
    def test_pruning_through_a_worker_matches_sqlite(self):
        """Intermediate values go back through the queue and the worker's pruner reads the
        completed trials from the server: one worker, one evaluation in flight, gives the
        SQLite study's trials, pruned ones included, and the same curves."""
        cfg = self.write("prune.yaml", PRUNE % {"ex": os.path.join(ROOT, "examples", "progress"),
                                                "python": sys.executable})
        sieve("run", cfg, "--store", self.path("p.sieve"), "--quiet", check=0)
        url = SERVER.url("prune")
        sieve("run", cfg, "--store", url, "--quiet", check=0)
        ref = export_rows(self.path("p.sieve"))
        self.assertEqual(len(ref), 12)
        self.assertTrue(any(r["status"] == "pruned" for r in ref) and any(r["status"] == "ok" for r in ref), ref)
        self.assertEqual(export_rows(url), ref)
        curves = sieve("export", url, "--intermediate", check=0).stdout
        self.assertEqual(curves, sieve("export", self.path("p.sieve"), "--intermediate", check=0).stdout)
        self.assertGreater(len(curves.splitlines()), 12)
        summary = sieve("export", url, "--summary", check=0).stdout
        self.assertEqual(summary, sieve("export", self.path("p.sieve"), "--summary", check=0).stdout)
        # store copy carries the intermediate table.
        sieve("store", "copy", self.path("p.sieve"), SERVER.url("prune_copy"), check=0)
        self.assertEqual(sieve("export", SERVER.url("prune_copy"), "--intermediate", check=0).stdout, curves)

    def test_schema_3_study_upgraded(self):
        """A study made by the first PostgreSQL sieve (schema 3) gains the intermediate
        table and the 'pruned' status when opened for writing, its trials kept."""
        url = SERVER.url("old")
        cfg = self.slow(delay=0, n=5)
        sieve("run", cfg, "--store", url, "--quiet", check=0)
        before = export_rows(url)
        SERVER.psql("DROP TABLE old.intermediate; "
                    "ALTER TABLE old.trials DROP CONSTRAINT trials_status_check; "
                    "ALTER TABLE old.trials ADD CONSTRAINT trials_status_check CHECK "
                    "(status IN ('pending', 'ok', 'failed', 'screened', 'cached')); "
                    "UPDATE old.sieve_schema SET version = 3", db="sieve")
        # Read as it is: no intermediate values.
        self.assertEqual(sieve("export", url, "--intermediate", check=0).stdout, "trial,step,fidelity,value\n")
        sieve("run", cfg, "--store", url, "--resume", "--quiet", check=0)
        self.assertEqual(SERVER.psql("SELECT version FROM old.sieve_schema", db="sieve").strip(), "4")
        check = SERVER.psql("SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                            "WHERE conname = 'trials_status_check' AND conrelid = 'old.trials'::regclass", db="sieve")
        self.assertIn("pruned", check)
        self.assertEqual(SERVER.psql("SELECT count(*) FROM old.intermediate", db="sieve").strip(), "0")
        self.assertEqual(export_rows(url), before)


QUICK = ["--warmup", "1", "--runs", "3", "--max-runs", "3", "--max-seconds", "0.05"]
LATENCY_RE = re.compile(r"(\d+) operations from 10 candidates; (\d+) measured now, (\d+) read")


class TestHardwareAware(PgCase):
    def test_latency_table_on_the_server_and_copied(self):
        """The per-op latency table lives in the study on the server (a second run measures
        nothing) and `sieve store copy` carries it to a file."""
        url = SERVER.url("lat")
        args = ["latency", "--table", "--space", "nb201", "--samples", "10", *QUICK]
        first = LATENCY_RE.search(sieve(*args, "--store", url, check=0).stdout)
        n, measured, read = map(int, first.groups())
        self.assertEqual((measured, read), (n, 0))
        second = LATENCY_RE.search(sieve(*args, "--store", url, check=0).stdout)
        self.assertEqual(tuple(map(int, second.groups())), (n, 0, n))
        self.assertEqual(SERVER.psql("SELECT count(*) FROM lat.latency_ops", db="sieve").strip(), str(n))
        sieve("store", "copy", url, self.path("lat.sieve"), check=0)
        copied = LATENCY_RE.search(sieve(*args, "--store", self.path("lat.sieve"), check=0).stdout)
        self.assertEqual(tuple(map(int, copied.groups())), (n, 0, n))

    def test_constrained_study_through_a_worker(self):
        """Constraints reject on the coordinator (status rejected, never queued); the latency
        evaluator runs in the worker."""
        cfg = self.write("c.yaml", "space: {plugin: nb201}\n"
                                   "optimizer: {plugin: random, seed: 11}\n"
                                   "evaluator: {plugin: latency, warmup: 1, min_runs: 3, max_runs: 3, "
                                   "max_seconds: 0.05}\n"
                                   "objective: {metric: latency_ms, direction: minimize}\n"
                                   "constraints: [{metric: params, max: 600000}]\n"
                                   "budget: {evaluations: 8}\n")
        url = SERVER.url("constrained")
        sieve("run", cfg, "--store", url, "--quiet", check=0)
        rows = export_rows(url, stable=False)
        self.assertEqual(sum(r["status"] == "ok" for r in rows), 8)
        self.assertGreater(sum(r["status"] == "rejected" for r in rows), 0)
        for r in rows:
            over = float(r["params"]) > 600000
            self.assertEqual(r["status"] == "rejected", over, r)
            self.assertEqual(r["latency_ms"] == "", over, r)
        summary = next(csv.DictReader(io.StringIO(sieve("export", url, "--summary", check=0).stdout)))
        self.assertEqual(int(summary["rejected"]), sum(r["status"] == "rejected" for r in rows))
        self.assertEqual(int(summary["evaluated"]), 8)


class TestBadStores(PgCase):
    def test_bad_urls(self):
        cfg = self.slow(delay=0, n=2)
        p = sieve("run", cfg, "--store", "postgresql://[::1", check=1)
        self.assertIn("not a valid PostgreSQL URL", p.stderr)
        p = sieve("run", cfg, "--store", SERVER.url("bad-name"), check=1)
        self.assertIn("the study name 'bad-name' is not valid", p.stderr)
        p = sieve("run", cfg, "--store", f"postgresql:///sieve?host={self.dir}&user=sieve", check=1)
        self.assertIn("cannot connect to the PostgreSQL server", p.stderr)
        p = sieve("export", SERVER.url("never_made"), check=1)
        self.assertIn("no such store (no study 'never_made' in this database)", p.stderr)
        p = sieve("run", cfg, "--store", SERVER.url("x", extra="&nosuchoption=1"), check=1)
        self.assertIn("nosuchoption", p.stderr)
        # A parameter given twice is refused, not the last one taken.
        p = sieve("run", cfg, "--store", SERVER.url("dup_a", extra="&study=dup_b"), check=1)
        self.assertIn("the parameter 'study' appears twice in the URL", p.stderr)
        p = sieve("run", cfg, "--store", SERVER.url("dup_a", extra="&user=sieve"), check=1)
        self.assertIn("the parameter 'user' appears twice in the URL", p.stderr)
        p = sieve("worker", SERVER.url("dup_a", extra="&reconnect_timeout=1&reconnect_timeout=2"), check=1)
        self.assertIn("the parameter 'reconnect_timeout' appears twice in the URL", p.stderr)
        self.assertEqual(SERVER.psql("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'dup_%'", db="sieve").strip(),
                         "0")

    def test_credentials_never_printed(self):
        cfg = self.slow(delay=0, n=3)
        wrong = "Wr0ng-secret-xyz"
        # In the URL's authority and as a parameter: refused, and neither
        # password appears in anything sieve prints.
        socket = SERVER.socket_dir.replace("/", "%2F")
        for url in (f"postgresql://sieve_pw:{wrong}@{socket}/sieve?study=pw",
                    SERVER.url("pw", user="sieve_pw", extra=f"&password={wrong}")):
            p = sieve("run", cfg, "--store", url, check=1)
            self.assertIn("password authentication failed", p.stderr)
            self.assertIn("***", p.stderr)
            self.assertNotIn(wrong, p.stdout + p.stderr)
        # The right password, given the way the README advises (a password
        # file), works, and no password is stored in the study.
        pgpass = self.write("pgpass", f"*:*:*:sieve_pw:{PASSWORD}\n")
        os.chmod(pgpass, 0o600)
        env = dict(os.environ, PGPASSFILE=pgpass)
        url = SERVER.url("pw", user="sieve_pw")
        p = subprocess.run([SIEVE, "run", cfg, "--store", url, "--quiet", "--local-workers", "1"], capture_output=True,
                           text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        # With the password in the URL: printed as ***, kept nowhere.
        url = SERVER.url("pw2", user="sieve_pw", extra=f"&password={PASSWORD}")
        p = sieve("run", cfg, "--store", url, "--quiet", check=0)
        self.assertNotIn(PASSWORD, p.stdout + p.stderr)
        self.assertIn("password=***", p.stdout)
        dump = SERVER.psql("SELECT string_agg(key || value, ' ') FROM pw2.meta", db="sieve")
        self.assertNotIn(PASSWORD, dump)


class TestServerAway(PgCase):
    """A server that goes away mid-study: the coordinator and the workers
    reconnect with backoff within --reconnect-timeout, running again the
    transaction the server lost, and past it fail saying so; either way no
    finished trial is lost and none is stored twice."""

    def reference(self, cfg):
        sieve("run", cfg, "--store", self.path("ref.sieve"), "--quiet", check=0)
        return export_rows(self.path("ref.sieve"))

    def start(self, cfg, url, *extra):
        return subprocess.Popen([SIEVE, "run", cfg, "--store", url, *extra], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def wait_progress(self, proc, at):
        for line in proc.stdout:
            m = PROGRESS.match(line)
            if m and int(m.group(1)) >= at:
                return
        self.fail("the run ended before trial %d" % at)

    def test_server_restarted_within_the_budget(self):
        cfg = self.slow(delay=0.02, n=40)
        ref = self.reference(cfg)
        # With a password in the URL: the retry lines name the server, the
        # password masked.
        url = SERVER.url("back", user="sieve_pw", extra=f"&password={PASSWORD}")
        proc = self.start(cfg, url, "--local-workers", "1", "--reconnect-timeout", "30")
        try:
            self.wait_progress(proc, 10)
            SERVER.stop("fast")
            time.sleep(1.5)
        finally:
            SERVER.restart()
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, err)
        retry = re.search(r"^sieve \(process \d+\): (\S+): lost the PostgreSQL server \(.*\); reconnecting in "
                          r"[\d.]+ s \([\d.]+ of 30 s spent\)$", err, re.M)
        self.assertIsNotNone(retry, err)
        self.assertIn("password=***", retry.group(1))
        self.assertNotIn(PASSWORD, out + err)
        self.assertRegex(err, r"reconnected after [\d.]+ s")
        self.assertEqual(export_rows(url), ref, "every trial once, as an uninterrupted run")

    def test_sessions_cut_again_and_again(self):
        """Every session of the study cut (pg_terminate_backend) a dozen
        times while trials are recorded: each cut lands somewhere else, in
        a transaction or between two, in a claim or a result; the study
        still ends as an uninterrupted run."""
        cfg = self.slow(delay=0.02, n=40)
        ref = self.reference(cfg)
        url = SERVER.url("cut")
        proc = self.start(cfg, url, "--local-workers", "1", "--lease", "2", "--reconnect-timeout", "30")
        self.wait_progress(proc, 3)
        cuts = 0
        while proc.poll() is None and cuts < 12:
            cuts += int(SERVER.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                    "WHERE datname = 'sieve' AND pid <> pg_backend_pid()", db="sieve") or 0)
            time.sleep(0.2)
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, err)
        self.assertGreater(cuts, 0)
        self.assertIn("reconnected after", err)
        self.assertEqual(export_rows(url), ref)

    def test_cut_inside_a_transaction_and_in_its_commit(self):
        """The server cuts the coordinator's session while a result's
        transaction is under way, and then in its COMMIT (triggers that end
        their own session, three times each: a sequence counts, outside the
        transaction): the transaction runs again on the new session and is
        stored once."""
        cfg = self.slow(delay=0.02, n=30)
        ref = self.reference(cfg)
        url = SERVER.url("inside")
        proc = self.start(cfg, url, "--local-workers", "1", "--reconnect-timeout", "30")
        self.wait_progress(proc, 3)
        SERVER.psql("""
            SET search_path TO inside;
            CREATE SEQUENCE cut_mid; CREATE SEQUENCE cut_commit;
            CREATE FUNCTION cut_mid() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
              IF nextval('inside.cut_mid') <= 3 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;
              RETURN NULL; END $$;
            CREATE FUNCTION cut_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
              IF nextval('inside.cut_commit') <= 3 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;
              RETURN NULL; END $$;
            CREATE TRIGGER cut_mid AFTER INSERT ON metrics FOR EACH ROW EXECUTE FUNCTION cut_mid();
            CREATE CONSTRAINT TRIGGER cut_commit AFTER INSERT OR UPDATE ON state DEFERRABLE INITIALLY DEFERRED
              FOR EACH ROW EXECUTE FUNCTION cut_commit();""", db="sieve")
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, err)
        self.assertGreaterEqual(err.count("the transaction under way ran again"), 3, err)
        self.assertGreaterEqual(err.count("the transaction lost in its COMMIT had not committed: it ran again"), 3, err)
        for seq in ("cut_mid", "cut_commit"):
            self.assertGreater(int(SERVER.psql(f"SELECT last_value FROM inside.{seq}", db="sieve")), 3, seq)
        self.assertEqual(export_rows(url), ref)

    def test_server_gone_past_the_budget(self):
        """Stopped for longer than --reconnect-timeout: the coordinator and
        the workers give up saying how long they tried, every finished trial
        is kept, and once the server is back --resume completes the study
        as an uninterrupted run."""
        cfg = self.slow(delay=0.02, n=40)
        ref = self.reference(cfg)
        url = SERVER.url("away")
        # One evaluation in flight, two workers: the trials of one worker.
        proc = self.start(cfg, url, "--in-flight", "1", "--reconnect-timeout", "2")
        workers = [subprocess.Popen([SIEVE, "worker", url, "--reconnect-timeout", "2", "--idle-exit", "30"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        try:
            self.wait_progress(proc, 10)
            SERVER.stop("fast")
            t0 = time.monotonic()
            out, err = proc.communicate(timeout=60)
            took = time.monotonic() - t0
            logs = [w.communicate(timeout=60)[1] for w in workers]
        finally:
            for p in [proc, *workers]:
                if p.poll() is None:
                    p.kill()
            SERVER.restart()
        self.assertEqual(proc.returncode, 1, err)
        gave_up = r"the PostgreSQL server: .*; gave up after [\d.]+ s of trying to reconnect \(--reconnect-timeout 2\)"
        self.assertRegex(err, gave_up)
        self.assertIn("finished trials are kept", err)
        self.assertLess(took, 20, "the budget is 2 s")
        for w, log in zip(workers, logs):
            self.assertEqual(w.returncode, 1, log)
            self.assertRegex(log, gave_up)
        done = [r for r in export_rows(url) if r["status"] != "pending"]
        self.assertGreaterEqual(len(done), 10)
        self.assertEqual(done, ref[:len(done)])
        sieve("run", cfg, "--store", url, "--resume", "--quiet", check=0)
        self.assertEqual(export_rows(url), ref)


if __name__ == "__main__":
    unittest.main(verbosity=2)
