#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The ResNet of a RingZero checkpoint in NumPy, with PyTorch's semantics (nn.Conv2d is a
cross-correlation over NCHW tensors, padding k // 2; torch.flatten is channel-major), compared
with the C forward pass on the same input.

Usage: check_resnet_numpy.py CHECKPOINT "LOGITS... | VALUE"
The second argument is what `test_resnet --forward CHECKPOINT` prints: the C logits and value
for the input x[i] = 1 when i * 7 % 5 == 0, else 0. Exit 0 when they agree to 1e-4, 1 when not,
77 when NumPy is missing. docs/python.md shows the same functions.
"""
import json
import struct
import sys

try:
    import numpy as np
except ImportError:
    sys.exit(77)


def load(path):
    """The tensors (by name, shaped) and the metadata of a safetensors file."""
    blob = open(path, "rb").read()
    (hlen,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + hlen])
    meta = header.pop("__metadata__")
    data = blob[8 + hlen:]
    w = {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], dtype="<f4")
         .reshape(v["shape"]) for k, v in header.items()}
    return meta, w


def conv(x, weight, bias):
    """x [C, H, W], weight [F, C, k, k] as nn.Conv2d(C, F, k, padding=k // 2) -> [F, H, W]."""
    k = weight.shape[2]
    p = k // 2
    xp = np.pad(x, ((0, 0), (p, p), (p, p)))
    H, W = x.shape[1:]
    out = np.empty((weight.shape[0], H, W), dtype=np.float64)
    for y in range(H):
        for xx in range(W):
            out[:, y, xx] = np.tensordot(weight, xp[:, y:y + k, xx:xx + k], axes=3) + bias
    return out


def forward_resnet(w, meta, x):
    """x: encoded position [D] -> (policy logits [A], value for the side to move)."""
    relu = lambda v: np.maximum(v, 0.0)
    x = x.reshape(int(meta["planes"]), int(meta["height"]), int(meta["width"]))
    h = relu(conv(x, w["trunk.conv.weight"], w["trunk.conv.bias"]))
    for b in range(int(meta["blocks"])):
        t = relu(conv(h, w[f"block.{b}.conv1.weight"], w[f"block.{b}.conv1.bias"]))
        h = relu(h + conv(t, w[f"block.{b}.conv2.weight"], w[f"block.{b}.conv2.bias"]))
    p = relu(conv(h, w["policy.conv.weight"], w["policy.conv.bias"])).reshape(-1)
    logits = w["policy.fc.weight"] @ p + w["policy.fc.bias"]
    v = relu(conv(h, w["value.conv.weight"], w["value.conv.bias"])).reshape(-1)
    v = relu(w["value.fc1.weight"] @ v + w["value.fc1.bias"])
    v = w["value.fc2.weight"] @ v + w["value.fc2.bias"]
    if v.shape[0] == 3:  # a win/draw/loss head (metadata value_head "wdl"): p_win - p_loss
        q = np.exp(v - v.max())
        q /= q.sum()
        return logits, q[0] - q[2]
    value = np.tanh(v)[0]
    return logits, value


def main(argv):
    meta, w = load(argv[1])
    left, right = argv[2].split("|")
    c_logits, c_value = np.array([float(t) for t in left.split()]), float(right)
    x = np.array([(i * 7 % 5) == 0 for i in range(int(meta["inputs"]))], dtype=np.float32)
    logits, value = forward_resnet(w, meta, x)
    err = max(np.abs(logits - c_logits).max(), abs(value - c_value))
    scale = np.abs(logits).max()
    print(f"numpy vs C: max difference {err:.3g} (logits up to {scale:.3g})")
    return 0 if err <= 1e-4 * (1 + scale) and scale > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
