#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that a RingZero checkpoint is a valid safetensors file that other tools can read.

Usage: python3 check_safetensors.py FILE [FILE...]

Loads each file with safetensors.numpy.load_file when safetensors and numpy are installed, and
always with the pure-Python parser below (no dependencies), prints the metadata and every
tensor's name, dtype and shape, and exits non-zero on the first problem.
"""
import json
import struct
import sys
import zlib

HEADER_MAX = 100 * 1024 * 1024
REQUIRED_META = ("format", "game", "inputs", "hidden", "blocks", "actions", "iteration",
                 "content_hash")
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
               "U8": 1, "BOOL": 1}


class Bad(Exception):
    pass


def parse(path):
    """Pure-Python safetensors parser: returns (metadata, {name: (dtype, shape, bytes)})."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise Bad(f"truncated: {len(blob)} bytes, shorter than the 8-byte header length")
    (hlen,) = struct.unpack("<Q", blob[:8])
    if hlen > HEADER_MAX or hlen > len(blob) - 8:
        raise Bad(f"header length {hlen} does not fit the {len(blob)}-byte file")
    try:
        header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise Bad(f"header is not valid JSON: {e}")
    if not isinstance(header, dict):
        raise Bad("header is not a JSON object")
    meta = header.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and
                                 all(isinstance(v, str) for v in meta.values())):
        raise Bad("__metadata__ must map strings to strings")
    data = blob[8 + hlen:]
    tensors, spans = {}, []
    for name, t in header.items():
        dtype, shape, offs = t.get("dtype"), t.get("shape"), t.get("data_offsets")
        if dtype not in DTYPE_BYTES:
            raise Bad(f"{name}: unknown dtype {dtype!r}")
        if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
            raise Bad(f"{name}: bad shape {shape!r}")
        if not (isinstance(offs, list) and len(offs) == 2 and
                all(isinstance(o, int) for o in offs) and 0 <= offs[0] <= offs[1] <= len(data)):
            raise Bad(f"{name}: bad data_offsets {offs!r} (data area {len(data)} bytes)")
        n = DTYPE_BYTES[dtype]
        for d in shape:
            n *= d
        if offs[1] - offs[0] != n:
            raise Bad(f"{name}: {offs[1] - offs[0]} bytes for shape {shape} of {dtype}")
        spans.append((offs[0], offs[1], name))
        tensors[name] = (dtype, shape, data[offs[0]:offs[1]])
    pos = 0
    for begin, end, name in sorted(spans):
        if begin != pos:
            raise Bad(f"{name}: tensors overlap or leave a gap at data byte {pos}")
        pos = end
    if pos != len(data):
        raise Bad(f"data area has {len(data)} bytes, tensors cover {pos}")
    return meta or {}, tensors


def tensor_order(meta):
    """Tensor names in the order of az_model_tensor() (net/model.c)."""
    if meta.get("net") == "resnet":
        names = ["trunk.conv.weight", "trunk.conv.bias"]
        for b in range(int(meta["blocks"])):
            names += [f"block.{b}.conv{k}.{p}" for k in (1, 2) for p in ("weight", "bias")]
        return names + [f"{h}.{p}" for h in ("policy.conv", "policy.fc", "value.conv",
                                             "value.fc1", "value.fc2")
                        for p in ("weight", "bias")]
    names = ["trunk.in.weight", "trunk.in.bias"]
    for b in range(int(meta["blocks"])):
        names += [f"block.{b}.fc1.weight", f"block.{b}.fc1.bias",
                  f"block.{b}.fc2.weight", f"block.{b}.fc2.bias"]
    return names + ["policy.weight", "policy.bias", "value.weight", "value.bias"]


def check_ringzero(meta, tensors):
    """RingZero specifics: required metadata and the content hash over the model-order bytes."""
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise Bad(f"metadata lacks {', '.join(missing)}")
    if meta["format"] != "ringzero":
        raise Bad(f"metadata format is {meta['format']!r}, not 'ringzero'")
    names = tensor_order(meta)
    if sorted(names) != sorted(tensors):
        raise Bad("tensor names do not match the architecture in the metadata")
    crc = 0
    for name in names:
        crc = zlib.crc32(tensors[name][2], crc)
    if meta["content_hash"] != f"crc32:{crc:08x}":
        raise Bad(f"content hash mismatch: metadata {meta['content_hash']}, "
                  f"data crc32:{crc:08x}")


def check_with_safetensors(path, tensors):
    """Cross-check with the reference implementation when it is installed."""
    try:
        from safetensors.numpy import load_file
    except ImportError:
        return "not installed, pure-Python parser only"
    try:
        arrays = load_file(path)
    except Exception as e:  # the library raises its own error types
        raise Bad(f"safetensors.numpy.load_file failed: {e}")
    for name, (dtype, shape, raw) in tensors.items():
        a = arrays.get(name)
        if a is None or list(a.shape) != shape or a.tobytes() != raw:
            raise Bad(f"{name}: safetensors and the pure-Python parser disagree")
    return f"loaded {len(arrays)} tensors"


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in argv[1:]:
        try:
            meta, tensors = parse(path)
            check_ringzero(meta, tensors)
            ref = check_with_safetensors(path, tensors)
        except (Bad, OSError, ValueError, KeyError) as e:
            print(f"{path}: FAIL: {e}", file=sys.stderr)
            return 1
        print(f"{path}: OK ({ref})")
        for k in sorted(meta):
            print(f"  meta {k} = {meta[k]}")
        for name in tensor_order(meta):
            dtype, shape, _ = tensors[name]
            print(f"  {name:24s} {dtype} {shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
