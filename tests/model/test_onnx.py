#!/usr/bin/python3
"""ONNX files sieve writes, checked by two consumers that are not sieve:
python3-onnx's checker and shape inference accept each file, and OpenCV's DNN
module (cv2.dnn.readNetFromONNX) runs it with outputs equal to sieve's
eval-mode forward within 1e-4 relative (the largest difference over the
logits, against the largest logit) on one small graph per IR operation and on
50 random NAS-Bench-201 networks (25 at C=8, 25 at C=16), whose batch-norm
statistics and affine terms are randomised through the weights file (read and
written here with NumPy alone, which also shows the format needs no sieve).

Skips (exit 77) where python3-onnx, python3-opencv or python3-numpy is missing."""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

try:
    import cv2
    import numpy as np
    import onnx
    from onnx import shape_inference
except ImportError as e:
    print(f"SKIP: needs Debian's python3-onnx, python3-opencv and python3-numpy ({e}); "
          "scripts/setup.sh installs them", file=sys.stderr)
    sys.exit(77)

SIEVE = os.environ["SIEVE_EXE"]
OPS_HELPER = os.environ["SIEVE_ONNX_OPS"]
TOLERANCE = 1e-4
NB201_OPS = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"]


def run(*args):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p


def read_safetensors(path):
    """The weights file as any tool reads it: length, JSON header, raw data."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = blob[8 + n:]
    tensors = {}
    for name, t in header.items():
        assert t["dtype"] == "F32", (name, t["dtype"])
        b, e = t["data_offsets"]
        tensors[name] = np.frombuffer(data[b:e], dtype="<f4").reshape(t["shape"]).copy()
    return meta, tensors


def write_safetensors(path, meta, tensors):
    header, chunks, at = {"__metadata__": meta}, [], 0
    for name, v in tensors.items():
        raw = np.ascontiguousarray(v, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [at, at + len(raw)]}
        chunks.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def check_onnx(path, expected_output):
    """Checker and strict shape inference accept it; the inferred output shape is the declared one."""
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    inferred = shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    out = inferred.graph.output[0]
    dims = [d.dim_value for d in out.type.tensor_type.shape.dim]
    assert dims == list(expected_output), f"{path}: output {dims}, sieve computed {list(expected_output)}"
    assert model.opset_import[0].version >= 13
    return {p.key: p.value for p in model.metadata_props}


def graph_output_shape(path):
    """The output's shape as onnx's shape inference derives it from the graph
    alone (the declared shape cleared), propagating the values of shape
    tensors (Shape, Slice, Concat): a symbolic dimension comes back as its
    name ('N')."""
    model = onnx.load(path)
    model.graph.output[0].type.tensor_type.ClearField("shape")
    inferred = shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    return [d.dim_value or d.dim_param for d in inferred.graph.output[0].type.tensor_type.shape.dim]


def randomise(init, weights, np_rng):
    """The weights file init again as weights, with random batch-norm
    statistics and affine terms; its metadata."""
    meta, tensors = read_safetensors(init)
    for name, v in tensors.items():
        if name.endswith(".running_mean") or name.endswith(".beta"):
            tensors[name] = np_rng.uniform(-0.5, 0.5, v.shape).astype(np.float32)
        elif name.endswith(".running_var") or name.endswith(".gamma"):
            tensors[name] = np_rng.uniform(0.5, 1.5, v.shape).astype(np.float32)
    meta.pop("sieve.data_sha256", None)  # the data changed
    write_safetensors(weights, meta, tensors)
    return meta


# NAS-Bench-201 cells where part of the network no longer depends on the
# input, so that the export computes it as a constant: a convolution of a
# zero (node 1 is none), a zero-only path to the output, and cells whose
# output is cut off (a constant classifier).
FOLDED_CELLS = [
    "|none~0|+|skip_connect~0|nor_conv_3x3~1|+|skip_connect~0|none~1|nor_conv_1x1~2|",
    "|none~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|avg_pool_3x3~1|none~2|",
    "|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|nor_conv_3x3~2|",
    "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|",
    "|none~0|+|none~0|nor_conv_3x3~1|+|none~0|avg_pool_3x3~1|nor_conv_1x1~2|",
]


def check_folded(d, xpath, np_rng):
    """Each of FOLDED_CELLS exported at batch 2 and with a symbolic batch:
    onnx accepts the file, the output's shape derived from the graph is the
    one declared (N rows for --dynamic-batch, also where the output is a
    constant), and sieve reads its own ONNX back (model info, model eval)
    with the very logits of the weights file."""
    for i, arch in enumerate(FOLDED_CELLS):
        space = ["--space", "nb201", "--set", "space.C=4", "--set", "space.N=1"]
        init = os.path.join(d, f"folded{i}.safetensors")
        run(SIEVE, "model", "export", *space, "--arch", arch, "--seed", str(i), "-o", init)
        weights = os.path.join(d, f"folded{i}-random.safetensors")
        randomise(init, weights, np_rng)
        ypath = os.path.join(d, f"folded{i}.y.npy")
        run(SIEVE, "model", "eval", weights, "--input", xpath, "--output", ypath)
        y = np.load(ypath)
        for batch, declared in ((["--batch", "2"], [2, 10]), (["--dynamic-batch"], ["N", 10])):
            model = os.path.join(d, f"folded{i}{batch[0]}.onnx")
            run(SIEVE, "model", "export", *space, "--arch", arch, "--weights", weights, *batch, "-o", model)
            check_onnx(model, [0 if v == "N" else v for v in declared])
            got = graph_output_shape(model)
            assert got == declared, f"{arch} {batch[0]}: the graph computes {got}, the model declares {declared}"
            info = run(SIEVE, "model", "info", model).stdout
            assert f"genotype: {arch}\n" in info, info
            back = os.path.join(d, f"folded{i}{batch[0]}.y.npy")
            run(SIEVE, "model", "eval", model, "--input", xpath, "--output", back)
            assert np.array_equal(np.load(back), y), f"{arch} {batch[0]}: model eval of the ONNX differs"
        print(f"folded {arch}: onnx accepts it, output shapes as declared, sieve reads it back")


def fixed_batch(path, out, batch):
    """The model at path with its symbolic batch set to batch, written to
    out: OpenCV 4.6 folds Shape at import from the declared input shape, so
    it runs a symbolic batch as 1 row."""
    model = onnx.load(path)
    for value in (model.graph.input[0], model.graph.output[0]):
        value.type.tensor_type.shape.dim[0].dim_value = batch
    onnx.save(model, out)
    return out


def opencv_difference(path, x, y):
    net = cv2.dnn.readNetFromONNX(path)
    net.setInput(x)
    z = net.forward().reshape(y.shape)
    scale = max(float(np.max(np.abs(y))), 1e-6)
    return float(np.max(np.abs(z - y))) / scale


def depends_on_input(ops):
    """Whether an NB201 cell's output reaches its input through edges that are not none.
    A cell whose output is cut off computes a constant classifier: its ONNX
    file is a graph of initializers alone, which the checker accepts but
    OpenCV refuses to run (a net without an input), so the 50 compared are
    drawn among the others and the cut-off ones are checked by onnx only."""
    edges = {(1, 0): ops[0], (2, 0): ops[1], (2, 1): ops[2], (3, 0): ops[3], (3, 1): ops[4], (3, 2): ops[5]}
    reach = {0}
    for j in (1, 2, 3):
        if any(i in reach and edges[(j, i)] != "none" for i in range(j)):
            reach.add(j)
    return 3 in reach


def main():
    worst = []
    with tempfile.TemporaryDirectory(prefix="sieve-onnx-") as d:
        # One small graph per operation of the IR.
        names = run(OPS_HELPER, d).stdout.split()
        assert len(names) >= 17, names
        for name in names:
            base = os.path.join(d, name)
            x, y = np.load(base + ".x.npy"), np.load(base + ".y.npy")
            path = base + ".onnx"
            if name.endswith("_dynamic"):
                # A symbolic batch: declared and computed by the graph as N rows.
                check_onnx(path, [0, *y.shape[1:]])
                got = graph_output_shape(path)
                assert got == ["N", *y.shape[1:]], f"{name}: the graph computes {got}, the model declares N rows"
                path = fixed_batch(path, base + ".fixed.onnx", x.shape[0])
            else:
                check_onnx(path, y.shape)
            rel = opencv_difference(path, x, y)
            print(f"op {name:16s} opencv relative difference {rel:.2e}")
            assert rel <= TOLERANCE, f"{name}: OpenCV differs from sieve by {rel:.2e} (relative)"
            worst.append((rel, name))

        # 50 random NAS-Bench-201 networks.
        rng = random.Random(21)
        np_rng = np.random.default_rng(21)
        x = np_rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
        xpath = os.path.join(d, "x.npy")
        np.save(xpath, x)
        compared, cut_off, i = 0, 0, -1
        while compared < 50:
            i += 1
            C = 8 if compared < 25 else 16
            ops = [rng.choice(NB201_OPS) for _ in range(6)]
            arch = "|{}~0|+|{}~0|{}~1|+|{}~0|{}~1|{}~2|".format(*ops)
            space = ["--space", "nb201", "--set", f"space.C={C}", "--set", "space.N=1"]
            init = os.path.join(d, f"nb{i}.safetensors")
            run(SIEVE, "model", "export", *space, "--arch", arch, "--seed", str(i), "-o", init)
            weights = os.path.join(d, f"nb{i}-random.safetensors")
            meta = randomise(init, weights, np_rng)
            assert meta["genotype"] == arch, (meta["genotype"], arch)
            model = os.path.join(d, f"nb{i}.onnx")
            run(SIEVE, "model", "export", *space, "--arch", arch, "--weights", weights, "--batch", "2", "-o", model)
            ypath = os.path.join(d, f"nb{i}.y.npy")
            run(SIEVE, "model", "eval", weights, "--input", xpath, "--output", ypath)
            y = np.load(ypath)
            props = check_onnx(model, y.shape)
            assert props["genotype"] == arch and props["space"] == "nb201" and props["classes"] == "10", props
            if not depends_on_input(ops):
                cut_off += 1
                continue
            rel = opencv_difference(model, x, y)
            compared += 1
            worst.append((rel, arch))
            assert rel <= TOLERANCE, f"{arch} (C={C}): OpenCV differs from sieve by {rel:.2e} (relative)"
        print(f"nb201: {cut_off} cut-off cells checked by onnx only")
        check_folded(d, xpath, np_rng)
        print(f"nb201: 50 networks, largest OpenCV relative difference {max(w for w, _ in worst[-50:]):.2e}")
    print(f"largest relative difference overall: {max(worst)[0]:.2e} ({max(worst)[1]})")


if __name__ == "__main__":
    main()
