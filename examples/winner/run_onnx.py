"""Runs a model.onnx that sieve exported with OpenCV's DNN module on the
Fashion-MNIST test set (Debian: python3-opencv, python3-onnx, python3-numpy)."""
import gzip
import sys

import cv2
import numpy as np
import onnx

path = sys.argv[1] if len(sys.argv) > 1 else "model.onnx"
meta = {p.key: p.value for p in onnx.load(path).metadata_props}
root = "/usr/share/datasets/fashion-mnist/"
x = np.frombuffer(gzip.open(root + "t10k-images-idx3-ubyte.gz").read()[16:], np.uint8)
y = np.frombuffer(gzip.open(root + "t10k-labels-idx1-ubyte.gz").read()[8:], np.uint8)
x = (x.reshape(-1, 1, 28, 28).astype(np.float32) / 255 - float(meta["normalize_mean"])) / float(meta["normalize_std"])
net = cv2.dnn.readNetFromONNX(path)
correct = 0
for i in range(len(x)):  # the model's batch is 1 (sieve model export --batch N for more)
    net.setInput(x[i:i + 1])
    correct += int(net.forward().argmax() == y[i])
print(f"{meta['genotype']}: OpenCV test accuracy {correct / len(x):.4f}")
