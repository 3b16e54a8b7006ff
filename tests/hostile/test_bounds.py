"""Hole 6 of issue 20: a size that comes from outside is bounded before
anything is allocated by it, and a reader needs no write access.  Each case
ends in a clear error naming the option or the file, exit status 1 or 2,
within seconds."""
import gzip
import os
import shutil
import struct
import subprocess
import sys
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import SIEVE, Scratch, sieve  # noqa: E402

ARCH = "|nor_conv_3x3~0|+|none~0|nor_conv_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|"


def proxies(*args, **kw):
    return subprocess.run([SIEVE, "proxies", "--space", "nb201", "--proxies", "naswot", *args, ARCH],
                          capture_output=True, text=True, timeout=60, **kw)


READ_ONLY_USER = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--", SIEVE]


class Bounds(Scratch):
    def test_huge_batch(self):
        p = proxies("--batch", "100000000")
        self.expect(p, 2, "--batch 100000000: expected a whole number from 1 to 8192")

    def test_npy_huge_shape(self):
        # The product 2^32 * 2^32 wraps to 0 in 64 bits, which matched the
        # file's empty data: the header alone must be refused.
        header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 1, 1), }"
        header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
        path = self.write("bad.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header, "wb")
        p = proxies("--batch-file", path)
        self.expect(p, 1, f"{path}: ", "the shape claims more elements than any file can hold")

    def test_gzip_bomb(self):
        # 64 MiB of zeros whose trailer declares 1000 bytes: inflating must
        # stop at the declared size, not fill the memory first.
        os.makedirs(self.path("mnist"))
        body = zlib.compressobj(9, zlib.DEFLATED, -15)
        data = body.compress(b"\0" * (64 << 20)) + body.flush()
        bomb = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + data + struct.pack("<II", 0, 1000)
        for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"):
            self.write(os.path.join("mnist", name), bomb, "wb")
        p = proxies("--dataset", "mnist", "--data-dir", self.path("mnist"))
        self.expect(p, 1, "-ubyte.gz", "gzip data inflate to more than 1000 bytes, the size its trailer declares")

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("setpriv"), "needs root and setpriv to drop the DAC capabilities")
    def test_read_only_store_exports(self):
        # Made as root, then read by root without the capabilities that
        # override file permissions (DAC), from a folder its owner may not
        # write: as an unprivileged owner would, wherever the checkout is.
        folder = self.path("ro")
        os.makedirs(folder)
        self.write(os.path.join("ro", "space.yaml"), "parameters:\n  x: {type: int, low: 0, high: 9}\n")
        cfg = self.write(os.path.join("ro", "s.yaml"), "name: ro\nspace: {plugin: hpo, file: space.yaml}\n"
                         "optimizer: {plugin: random}\nevaluator: {plugin: command, argv: [echo, '{{\"v\": 1}}']}\n"
                         "objective: {metric: v}\nbudget: {evaluations: 2}\n")
        store = os.path.join(folder, "s.sieve")
        self.expect(sieve("run", cfg, "--store", store, "-q"), 0)
        os.chmod(store, 0o444)
        os.chmod(folder, 0o555)
        os.chmod(self.dir, 0o755)
        p = subprocess.run(READ_ONLY_USER + ["export", store,
                            "--format", "csv"], capture_output=True, text=True, timeout=60)
        self.expect(p, 0)
        self.assertEqual(p.stdout.count("\n"), 3, p.stdout)
        self.assertEqual(sorted(os.listdir(folder)), ["s.sieve", "s.yaml", "space.yaml"])
        # The report and another study's cache read it the same way, written
        # in a folder it may write.
        rw = self.path("rw")
        os.makedirs(rw)
        os.chmod(rw, 0o777)
        p = subprocess.run(READ_ONLY_USER + ["report", store, "-o", os.path.join(rw, "r.html")], capture_output=True,
                           text=True, timeout=60)
        self.expect(p, 0)
        self.assertTrue(os.path.getsize(os.path.join(rw, "r.html")) > 0)
        other = os.path.join(rw, "other.yaml")
        with open(cfg) as f:
            text = f.read()
        with open(other, "w") as f:
            f.write(text.replace("space.yaml", os.path.join(folder, "space.yaml"))
                    + "pipeline:\n  - dedupe: {cache_from: [%s]}\n" % store)
        os.chmod(other, 0o644)
        p = subprocess.run(READ_ONLY_USER + ["run", other, "--store", os.path.join(rw, "o.sieve"), "-q"], capture_output=True,
                           text=True, timeout=60)
        self.expect(p, 0)
        self.assertEqual(sorted(os.listdir(folder)), ["s.sieve", "s.yaml", "space.yaml"])

    def test_plugin_crashing_in_init_is_named(self):
        plugin = os.environ["HOSTILE_CRASH_PLUGIN"]
        p = sieve("plugins", "--plugin-path", plugin)
        self.assertEqual(p.returncode, -11, p.stderr)  # still dies of the signal, but says of what
        self.assertIn(f"sieve: plugin {plugin} crashed in its init", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
