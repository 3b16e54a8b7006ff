#!/usr/bin/env python3
"""Bug hunt, datasets, model files and the command: a model file's space
options read back (numbers as JSON numbers, older files' quoted floats
too), empty .npy inputs, augmentation on tabular data, CSV datasets' test
split, labels and advice, flags that clash with --set, and the proxies'
label check."""
import json
import os
import struct
import sys
import unittest

ROOT = os.environ["SIEVE_SOURCE_ROOT"]
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import sieve_cli  # noqa: E402
from sieve_cli import sieve  # noqa: E402

NB101_ARCH = ("matrix=[[0,1,1,0,0,0,0],[0,0,0,1,1,0,1],[0,0,0,1,1,0,0],[0,0,0,0,1,1,1],[0,0,0,0,0,0,0],"
              "[0,0,0,0,0,0,0],[0,0,0,0,0,0,0]],ops=[input,conv1x1-bn-relu,conv3x3-bn-relu,conv1x1-bn-relu,"
              "maxpool3x3,conv3x3-bn-relu,output]")
NB101_SET = ["--set", "space.stem_channels=8", "--set", "space.stacks=1", "--set", "space.cells=1",
             "--set", "space.in_channels=1", "--set", "space.size=28"]


def safetensors_meta(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        rest = f.read()
    return header, rest


def safetensors_write(path, header, rest):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + rest)


class TestModelMetadata(sieve_cli.Workdir):
    prefix = "sieve-data-"

    def test_nb101_float_option(self):
        """nb101's bn_momentum is a JSON number in the file, and the file
        builds again; a file with the quoted number older sieve wrote too."""
        g = self.path("g.safetensors")
        sieve("model", "export", "--space", "nb101", "--arch", NB101_ARCH, *NB101_SET,
              "--set", "space.bn_momentum=0.1", "-o", g, check=0)
        header, rest = safetensors_meta(g)
        options = json.loads(header["__metadata__"]["space_options"])
        self.assertEqual(options["bn_momentum"], 0.1)
        self.assertEqual(options["stem_channels"], 8)
        info = sieve("model", "info", g, check=0).stdout
        self.assertIn('"bn_momentum":0.1', info)
        sieve("model", "export", "--space", "nb101", "--arch", NB101_ARCH, *NB101_SET, "--set",
              "space.bn_momentum=0.1", "--weights", g, "-o", self.path("g.onnx"), check=0)
        # As sieve wrote it before: the float as a string.
        header["__metadata__"]["space_options"] = header["__metadata__"]["space_options"].replace(
            '"bn_momentum":0.1', '"bn_momentum":"0.1"')
        old = self.path("old.safetensors")
        safetensors_write(old, header, rest)
        info = sieve("model", "info", old, check=0).stdout
        self.assertIn("parameters: ", info)


if __name__ == "__main__":
    unittest.main(verbosity=2)
