#!/usr/bin/env python3
"""Commands that read a study and write a file refuse, before writing
anything, a file that is the study's store or one of its SQLite side files
(-wal, -shm, -journal): `sieve report S -o S` once replaced a study with
its HTML page (bug hunt, item 1).  And an output that is a pipe or a device
is written into, not replaced: `--report /dev/null` once turned /dev/null
into a plain file."""
import contextlib
import os
import stat
import subprocess
import threading
import sqlite3
import sys
import time
import unittest

ROOT = os.environ["SIEVE_SOURCE_ROOT"]
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import sieve_cli  # noqa: E402
from sieve_cli import export_rows, sieve  # noqa: E402

CONFIG = sieve_cli.branin_config("guard", 6)


class TestOutputIsNotTheStore(sieve_cli.Workdir):
    prefix = "sieve-outputs-"

    def setUp(self):
        super().setUp()
        self.cfg = self.write("guard.yaml", CONFIG)
        self.store = self.path("s.sieve")
        sieve("run", self.cfg, "--store", self.store, "-q", check=0)
        self.rows = export_rows(self.store)
        self.assertEqual(len(self.rows), 6)

    def assert_intact(self, store=None):
        store = store or self.store
        with open(store, "rb") as f:
            self.assertEqual(f.read(16), b"SQLite format 3\0", f"{store} is no longer an SQLite file")
        con = sqlite3.connect(store)
        try:
            self.assertEqual(con.execute("pragma integrity_check").fetchone()[0], "ok")
        finally:
            con.close()
        self.assertEqual(export_rows(store), self.rows)

    def refused(self, *args, names=(), cwd=None):
        p = sieve(*args, check=2, cwd=cwd)
        for name in names:
            self.assertIn(name, p.stderr)
        self.assertIn("would destroy the study", p.stderr)
        self.assertEqual(p.stdout, "")
        return p

    def test_report(self):
        self.refused("report", self.store, "-o", self.store, names=[self.store])
        # Other spellings of the same file: a relative path, "..", a link.
        os.mkdir(self.path("x"))
        self.refused("report", "s.sieve", "-o", os.path.join(self.dir, "x", "..", "s.sieve"), cwd=self.dir)
        self.refused("report", "s.sieve", "--output", "./s.sieve", cwd=self.dir)
        os.symlink(self.store, self.path("link.html"))
        self.refused("report", self.store, "-o", self.path("link.html"))
        os.link(self.store, self.path("hard.html"))
        self.refused("report", self.store, "-o", self.path("hard.html"))
        # The side files, whether SQLite left them or not.
        for side in ("-wal", "-shm", "-journal"):
            p = self.refused("report", self.store, "-o", self.store + side, names=[self.store + side, self.store])
            self.assertIn(f"SQLite {side[1:]} file", p.stderr)
            self.assert_intact()
        # A file beside the store is fine.
        sieve("report", self.store, "-o", self.path("s.html"), check=0)
        self.assert_intact()

    def test_export(self):
        self.refused("export", self.store, "-o", self.store, names=[self.store])
        self.refused("export", self.store, "--finals", "--output", self.store + "-wal")
        self.refused("export", self.store, "--summary", "-f", "json", "-o", self.store + "-shm")
        self.assert_intact()
        sieve("export", self.store, "-o", self.path("s.csv"), check=0)

    def test_model_export(self):
        # Refused before the trial is even looked up (this one kept no weights).
        self.refused("model", "export", self.store, "--trial", "1", "-o", self.store, names=[self.store])
        self.assert_intact()

    def test_run_report(self):
        fresh = self.path("new.sieve")
        self.refused("run", self.cfg, "--store", fresh, "--report", fresh, names=[fresh])
        self.assertFalse(os.path.exists(fresh), "the refused run created its store")
        self.refused("run", self.cfg, "--store", self.store, "--resume", "--report", self.store + "-wal")
        self.assert_intact()

    def test_store_copy(self):
        self.refused("store", "copy", self.store, self.store, names=[self.store])
        self.refused("store", "copy", self.store, self.store + "-wal")
        self.assert_intact()
        sieve("store", "copy", self.store, self.path("copy.sieve"), check=0)
        self.assert_intact(self.path("copy.sieve"))


class TestOutputChecked(sieve_cli.Workdir):
    """`-o -` is standard output (as `sieve hash -` reads standard input):
    it wrote a file named '-'.  And `sieve run --report` into a folder that
    does not exist, or onto a folder, ran the whole study and only warned
    at the end: now a usage error before anything is stored."""
    prefix = "sieve-output-checked-"

    def setUp(self):
        super().setUp()
        self.cfg = self.write("c.yaml", CONFIG)
        self.store = self.path("s.sieve")
        sieve("run", self.cfg, "--store", self.store, "-q", check=0)

    def test_dash_is_standard_output(self):
        p = sieve("report", self.store, "-o", "-", check=0, cwd=self.dir)
        self.assertTrue(p.stdout.startswith("<!DOCTYPE html>"), p.stdout[:100])
        self.assertTrue(p.stdout.endswith("</html>\n"))
        self.assertIn("report: standard output (6 trials", p.stderr)
        p = sieve("export", self.store, "-o", "-", check=0, cwd=self.dir)
        self.assertEqual(p.stdout, sieve("export", self.store, check=0).stdout)
        self.assertFalse(os.path.exists(self.path("-")), "a file named '-' was written")
        # --open needs a file.
        p = sieve("report", self.store, "-o", "-", "--open", check=2)
        self.assertEqual(p.stdout, "")
        self.assertIn("-o - writes the page to standard output", p.stderr)
        for command in ("report", "export"):
            self.assertIn("- is standard output" if command == "export" else "- for standard output",
                          sieve(command, "--help", check=0).stdout)

    def test_run_report_unwritable(self):
        fresh = self.path("new.sieve")
        missing = os.path.join(self.dir, "no", "such", "r.html")
        p = sieve("run", self.cfg, "--store", fresh, "--report", missing, check=2)
        folder = os.path.join(self.dir, "no", "such")
        self.assertIn(f"--report {missing}: the folder {folder} does not exist", p.stderr)
        self.assertEqual(p.stdout, "", "the study started")
        self.assertFalse(os.path.exists(fresh), "the refused run created its store")
        p = sieve("run", self.cfg, "--store", fresh, "--report", self.dir, check=2)
        self.assertIn(f"--report {self.dir} is a folder", p.stderr)
        self.assertFalse(os.path.exists(fresh), "the refused run created its store")
        # Standard output carries the run's own lines: no page there, and no file named '-'.
        p = sieve("run", self.cfg, "--store", fresh, "--report", "-", check=2, cwd=self.dir)
        self.assertIn("--report -: standard output carries the run's progress and summary", p.stderr)
        self.assertFalse(os.path.exists(fresh), "the refused run created its store")
        self.assertFalse(os.path.exists(self.path("-")))
        # The same checks for the commands that write a file at their end.
        p = sieve("report", self.store, "-o", self.dir, check=2)
        self.assertIn("is a folder", p.stderr)
        p = sieve("export", self.store, "-o", missing, check=2)
        self.assertIn("does not exist", p.stderr)

    def test_run_store_is_a_folder(self):
        # New-user review: a folder as the store was "not a sieve store (a directory)", exit 1, no place.
        p = sieve("run", self.cfg, "--store", self.dir, check=2)
        self.assertIn(f"--store {self.dir} is a folder; name the store's file in it", p.stderr)
        cfg = self.write("folder.yaml", CONFIG + f"store: {self.dir}\n")
        p = sieve("run", cfg, check=2)
        self.assertIn(f"folder.yaml:{CONFIG.count(chr(10)) + 1}:8: store {self.dir} is a folder; name the store's "
                      f"file in it ({self.dir}/study.sieve)", p.stderr)


class TestOutputIntoAPipe(sieve_cli.Workdir):
    prefix = "sieve-fifo-"

    def read_fifo(self, fifo, got):
        with open(fifo, "rb") as f:
            got.append(f.read())

    def written_through(self, fifo, *args):
        got = []
        reader = threading.Thread(target=self.read_fifo, args=(fifo, got), daemon=True)
        reader.start()
        sieve(*args, check=0)
        reader.join(30)
        self.assertFalse(reader.is_alive(), "nothing opened the pipe for writing")
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode), f"{fifo} was replaced by a plain file")
        return got[0]

    def test_report_into_fifo(self):
        cfg = self.write("fifo.yaml", sieve_cli.branin_config("fifo", 3))
        store = self.path("f.sieve")
        fifo = self.path("page.fifo")
        os.mkfifo(fifo)
        page = self.written_through(fifo, "run", cfg, "--store", store, "-q", "--report", fifo)
        self.assertIn(b"<html", page[:200].lower())
        page = self.written_through(fifo, "report", store, "-o", fifo)
        self.assertIn(b"</html>", page[-200:].lower())
        rows = self.written_through(fifo, "export", store, "-o", fifo)
        self.assertEqual(len(rows.decode().splitlines()), 4)  # the header and 3 trials

    def test_report_through_a_link(self):
        # A link to a file (or to none yet): the file is written, the link kept.
        store = self.path("l.sieve")
        sieve("run", self.write("l.yaml", sieve_cli.branin_config("l", 2)), "--store", store, "-q", check=0)
        os.symlink("page.html", self.path("link.html"))
        for _ in range(2):
            sieve("report", store, "-o", self.path("link.html"), check=0)
            self.assertTrue(os.path.islink(self.path("link.html")))
            with open(self.path("page.html")) as f:
                self.assertIn("</html>", f.read())


class TestStoreFolder(sieve_cli.Workdir):
    prefix = "sieve-outputs-"

    def test_missing_folder_is_a_config_error(self):
        # Bug hunt 4 (C10): `store: sub/x.sieve` without sub/ failed with
        # exit 1 and no place in the file. The config's key is named with
        # file:line:col, the flag by its name; nothing is created.
        cfg = self.write("s.yaml", "store: sub/x.sieve\n" + sieve_cli.branin_config("s", 2))
        p = sieve("run", cfg, cwd=self.path("."), check=2)
        self.assertIn(f"{cfg}:1:8: store sub/x.sieve: the folder {self.path('sub')} does not exist", p.stderr)
        p = sieve("run", cfg, "--store", "nope/y.sieve", cwd=self.path("."), check=2)
        self.assertIn(f"--store nope/y.sieve: the folder {self.path('nope')} does not exist", p.stderr)
        self.assertEqual(sorted(os.listdir(self.path("."))), ["s.yaml"])
        # With the folder there, the same file runs.
        os.mkdir(self.path("sub"))
        sieve("run", cfg, "-q", cwd=self.path("."), check=0)
        self.assertTrue(os.path.exists(self.path("sub/x.sieve")))


class TestStoreCopy(sieve_cli.Workdir):
    """`sieve store copy` reads one moment of its source, and a copy that
    fails leaves nothing behind (review of damaged stores, item 3)."""
    prefix = "sieve-outputs-"

    def test_copy_while_a_run_writes(self):
        # Read table by table, a copy mixed moments of a running study: it
        # failed ("FOREIGN KEY constraint failed") or resumed to other trials.
        cfg = os.path.join(ROOT, "configs", "nb201-evolution.yaml")
        src = self.path("src.sieve")
        budget = ["--set", "budget.evaluations=1500"]
        run = subprocess.Popen([sieve_cli.SIEVE, "run", cfg, "--store", src, "-q", *budget],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            while run.poll() is None:  # until it holds trials
                try:
                    with contextlib.closing(sqlite3.connect(f"file:{src}?mode=ro", uri=True)) as con:
                        if con.execute("select count(*) from trials").fetchone()[0] > 0:
                            break
                except sqlite3.Error:
                    pass
                time.sleep(0.05)
            copies = []
            while run.poll() is None:
                copy = self.path(f"c{len(copies)}.sieve")
                sieve("store", "copy", src, copy, check=0)
                copies.append(copy)
        finally:
            _, err = run.communicate(timeout=120)
        self.assertEqual(run.returncode, 0, err)
        self.assertGreater(len(copies), 1, "the run ended before a copy was made")
        # A copy of the study in the middle, resumed, ends where the
        # original did.
        want = export_rows(src)
        for copy in (copies[0], copies[len(copies) // 2]):
            sieve("run", cfg, "--store", copy, "--resume", "-q", *budget, check=0)
            self.assertEqual(export_rows(copy), want, copy)

    def test_failed_copy_leaves_nothing(self):
        cfg = self.write("c.yaml", CONFIG)
        src = self.path("s.sieve")
        sieve("run", cfg, "--store", src, "-q", check=0)
        # A trial deleted under its metrics: the copy's foreign keys refuse it.
        with contextlib.closing(sqlite3.connect(src)) as con:
            con.execute("pragma foreign_keys=off")
            con.execute("delete from trials where number=2")
            con.commit()
        dst = self.path("d.sieve")
        p = sieve("store", "copy", src, dst, check=1)
        self.assertIn(f"{dst}: cannot write the copy: FOREIGN KEY constraint failed", p.stderr)
        self.assertEqual(sorted(os.listdir(self.dir)), ["c.yaml", "s.sieve"])
        # A destination that was there (an empty store) stays.
        with contextlib.closing(sqlite3.connect(dst)) as con:
            con.execute("create table keep (x)")
        sieve("store", "copy", src, dst, check=1)
        self.assertTrue(os.path.exists(dst))


if __name__ == "__main__":
    unittest.main(verbosity=2)
