"""Shared by the hostile-input reproducers that drive the sieve command:
a scratch folder per test and a runner under a hard timeout (a hang is a
failure, never a wait)."""
import os
import subprocess
import tempfile
import unittest

SIEVE = os.environ["SIEVE_EXE"]
ROOT = os.environ["SIEVE_SOURCE_ROOT"]
BUILD = os.environ["SIEVE_BUILD_ROOT"]


def sieve(*args, timeout=60, cwd=None, env=None):
    try:
        return subprocess.run([SIEVE, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"sieve {' '.join(args)} hung for {timeout} s") from e


class Scratch(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="sieve-hostile-")
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def write(self, name, text, mode="w"):
        with open(self.path(name), mode) as f:
            f.write(text)
        return self.path(name)

    def expect(self, p, code, *needles):
        """p exited with code and its stderr holds each needle."""
        msg = f"exit {p.returncode}, wanted {code}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-2000:]}"
        self.assertEqual(p.returncode, code, msg)
        for n in needles:
            self.assertIn(n, p.stderr, msg)
