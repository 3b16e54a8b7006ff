"""What the Python tests that drive the `sieve` executable share: running
it, reading a study back through `sieve export`, and a temporary folder per
test.  SIEVE_EXE and SIEVE_SOURCE_ROOT come from meson (tests/*/meson.build)."""
import csv
import io
import os
import pty
import re
import select
import signal
import subprocess
import tempfile
import time
import unittest

SIEVE = os.environ["SIEVE_EXE"]
ROOT = os.environ["SIEVE_SOURCE_ROOT"]
# Columns that legitimately differ between two runs of the same study.
VOLATILE = {"cost_s", "started", "finished", "worker"}
# A progress line of `sieve run`: "[N/..." with N the proposals finished.
PROGRESS = re.compile(r"^\[(\d+)/")


def branin_config(name, evaluations):
    """A small study's experiment text: random search on Branin, quick."""
    return (f"name: {name}\n"
            "space: {plugin: hpo, parameters: {x1: {type: float, low: -5, high: 10}, "
            "x2: {type: float, low: 0, high: 15}}}\n"
            "optimizer: {plugin: random}\n"
            "evaluator: {plugin: function, function: branin}\n"
            "objective: {metric: value, direction: minimize}\n"
            f"budget: {{evaluations: {evaluations}}}\n")


def sieve(*args, check=None, timeout=120, cwd=None, env=None):
    """Runs sieve; check: the exit status wanted (an AssertionError with
    the ends of both outputs otherwise)."""
    p = subprocess.run([SIEVE, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    if check is not None and p.returncode != check:
        raise AssertionError(f"sieve {' '.join(args)} exited {p.returncode}, wanted {check}\n"
                             f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
    return p


def export_rows(store, stable=True, run=sieve):
    """The study's trials as CSV rows; stable: without VOLATILE columns."""
    out = run("export", store, "--format", "csv", check=0).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    if stable:
        rows = [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]
    return rows


class Workdir(unittest.TestCase):
    """A test with a temporary folder of its own, removed after it."""
    prefix = "sieve-test-"

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix=self.prefix)
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)


def run_until(test, args, kill_at=None, timeout=120):
    """Runs sieve with args: to its end, test asserting exit status 0, or,
    with kill_at, until a progress line reports kill_at proposals finished,
    where it is killed with SIGKILL (test asserting it was killed there)."""
    proc = subprocess.Popen([SIEVE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if kill_at is None:
        _, err = proc.communicate(timeout=timeout)
        test.assertEqual(proc.returncode, 0, err)
        return
    for line in proc.stdout:
        m = PROGRESS.match(line)
        if m and int(m.group(1)) >= kill_at:
            proc.send_signal(signal.SIGKILL)
            break
    proc.communicate()
    test.assertEqual(proc.returncode, -signal.SIGKILL, "the run ended before the kill point")


def sieve_tty(*args, timeout=60, cwd=None):
    """Runs sieve on a terminal (a pseudo-terminal: the status line is
    drawn); returns (exit status, what it wrote, as text)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            if cwd:
                os.chdir(cwd)
            os.execv(SIEVE, [SIEVE, *args])
        finally:
            os._exit(127)
    out, deadline = b"", time.time() + timeout
    while time.time() < deadline:
        if not select.select([fd], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(fd)
    if time.time() >= deadline:
        os.kill(pid, signal.SIGKILL)  # a hang fails the test, never waits
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def status_lines(out):
    """The status lines a terminal run drew, oldest first, without their
    escape codes."""
    return [part[len("\033[K"):].split("\n")[0] for part in out.split("\r") if part.startswith("\033[K[")]
