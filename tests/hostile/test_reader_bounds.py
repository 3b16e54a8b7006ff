"""Issue 20, bounds before allocation in the dataset readers: an IDX, CIFAR
or CSV file whose header or size claims more than can be held is a clear
error naming the file (exit 1), never an abort inside an allocation."""
import os
import resource
import struct
import subprocess
import sys
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile import SIEVE, Scratch  # noqa: E402

ARCH = "|nor_conv_3x3~0|+|none~0|nor_conv_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|"


def proxies(*args, preexec_fn=None):
    return subprocess.run([SIEVE, "proxies", "--space", "nb201", "--proxies", "naswot", *args, ARCH],
                          capture_output=True, text=True, timeout=60, preexec_fn=preexec_fn)


def sanitized():
    """AddressSanitizer reserves terabytes of address space: no RLIMIT_AS under it."""
    out = subprocess.run(["ldd", SIEVE], capture_output=True, text=True).stdout
    return "libasan" in out


class ReaderBounds(Scratch):
    def mnist(self, images_header, body=b""):
        os.makedirs(self.path("mnist"), exist_ok=True)
        images = self.write(os.path.join("mnist", "train-images-idx3-ubyte"), images_header + body, "wb")
        self.write(os.path.join("mnist", "train-labels-idx1-ubyte"), struct.pack(">II", 0x801, 1) + b"\0", "wb")
        return images

    def test_idx_huge_count(self):
        # 4,294,967,295 images of 28x28 claimed by a 16-byte header and one image.
        images = self.mnist(struct.pack(">IIII", 0x803, 0xFFFFFFFF, 28, 28), b"\0" * 784)
        p = proxies("--dataset", "mnist", "--data-dir", self.path("mnist"))
        self.expect(p, 1, f"{images}: truncated: the header announces 4294967295 images")

    def test_idx_shape_overflow(self):
        # The product of the three dimensions is past 2^64.
        images = self.mnist(struct.pack(">IIII", 0x803, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF))
        p = proxies("--dataset", "mnist", "--data-dir", self.path("mnist"))
        self.expect(p, 1, f"{images}: the header's dimensions 4294967295 x 4294967295 x 4294967295 claim more")

    def test_idx_no_images_of_huge_size(self):
        # Zero images of 65535x65535 pixels: an empty body matches, and the
        # batcher would ask 16 GiB a batch for the empty dataset.
        images = self.mnist(struct.pack(">IIII", 0x803, 0, 65535, 65535))
        p = proxies("--dataset", "mnist", "--data-dir", self.path("mnist"))
        self.expect(p, 1, f"{images}: the header announces no images (of 65535x65535 pixels)")

    @unittest.skipIf(sanitized(), "RLIMIT_AS does not work under AddressSanitizer")
    def test_cifar_larger_than_memory(self):
        # 87,000 CIFAR-100 records (267 MB, 260 KB gzipped) become 1.07 GB of
        # floats, more than the 1 GiB of address space the process may use.
        os.makedirs(self.path("cifar"))
        records = 87000
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        body = z.compress(b"\0" * (records * 3074)) + z.flush()
        batch = self.write(os.path.join("cifar", "train.bin"), body, "wb")
        limit = 1 << 30
        p = proxies("--dataset", "cifar100", "--data-dir", self.path("cifar"),
                    preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
        self.expect(p, 1, f"{batch}: 87000 examples of 3x32x32 values need 1019.5", "more than can be allocated")

    def test_csv_too_many_fields(self):
        # A header of 2^20 + 1 empty fields: 1 MiB of commas would ask 32 MiB
        # of field records, a 2 GiB file 64 GiB.
        csv = self.write("wide.csv", "," * (1 << 20) + "\n0\n")
        p = proxies("--dataset", f"csv:{csv}")
        self.expect(p, 1, f"{csv}:1:1048577: more than 1048576 fields in the record that starts on line 1")


if __name__ == "__main__":
    unittest.main(verbosity=2)
