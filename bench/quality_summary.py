#!/usr/bin/env python3
"""Quality of llama.cpp's quantized models beside ThinTensor's profiles on the same token ids
(bench/quality_vs_llamacpp.sh). Needs numpy only.

  refs IDS.txt BASE.f32 VOCAB OUTDIR       one reference file per sequence (ThinTensor's
                                           `validate --reference` format: input_ids, logits_f32)
  agree REF.safetensors GOT.f32            the base's logits against transformers' on its prompt
  score IDS.txt BASE.f32 GOT.f32 VOCAB     llama.cpp's logits against the base, as validate
                                           computes it (src/runtime/compare.cpp): per position
                                           the cosine, KL(base || got) of the softmaxes and the
                                           top-1 / top-5 agreement; printed as one JSON object
"""
import json
import struct
import sys

import numpy as np


def read_ids(path):
    return [[int(t) for t in line.split()] for line in open(path) if line.strip()]


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        dt = {"F32": np.float32, "I64": np.int64}[t["dtype"]]
        out[name] = np.frombuffer(data[a:b], dtype=dt).reshape(t["shape"])
    return out


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def stats(ref, got):
    """Per position, as compare_logits: cosine, max |diff|, KL(ref || got), top-1, top-5."""
    r, g = ref.astype(np.float64), got.astype(np.float64)
    cos = (r * g).sum(1) / np.sqrt((r * r).sum(1) * (g * g).sum(1))
    lr = r - np.logaddexp.reduce(r, axis=1, keepdims=True)
    lg = g - np.logaddexp.reduce(g, axis=1, keepdims=True)
    kl = np.maximum((np.exp(lr) * (lr - lg)).sum(1), 0.0)
    top = r.argmax(1)
    top1 = got.argmax(1) == top
    top5 = (np.argsort(-got, axis=1, kind="stable")[:, :5] == top[:, None]).any(1)
    return cos, np.abs(r - g).max(1), kl, top1, top5


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "refs":
        ids, base, vocab, outdir = read_ids(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
        logits = np.fromfile(base, dtype=np.float32).reshape(-1, vocab)
        at = 0
        for k, s in enumerate(ids):
            write_safetensors(f"{outdir}/seq{k}.safetensors",
                              {"input_ids": np.array(s, dtype=np.int64), "logits_f32": logits[at:at + len(s)]})
            at += len(s)
        if at != len(logits):
            raise SystemExit(f"quality_summary: {base} holds {len(logits)} positions, the ids {at}")
    elif cmd == "agree":
        ref = read_safetensors(sys.argv[2])["logits_f32"]
        got = np.fromfile(sys.argv[3], dtype=np.float32).reshape(ref.shape)
        cos, diff, kl, top1, _ = stats(ref, got)
        print(json.dumps({"positions": len(ref), "min_cosine": cos.min(), "max_abs_diff": diff.max(), "mean_kl": kl.mean(),
                          "top1_agreement": top1.mean()}))
    elif cmd == "score":
        ids, vocab = read_ids(sys.argv[2]), int(sys.argv[5])
        base = np.fromfile(sys.argv[3], dtype=np.float32).reshape(-1, vocab)
        got = np.fromfile(sys.argv[4], dtype=np.float32).reshape(-1, vocab)
        if base.shape != got.shape or len(base) != sum(map(len, ids)):
            raise SystemExit("quality_summary: the two logit files and the ids disagree on the positions")
        cos, diff, kl, top1, top5 = stats(base, got)
        print(json.dumps({"positions": len(base), "min_cosine": cos.min(), "max_abs_diff": diff.max(), "mean_kl": kl.mean(),
                          "max_kl": kl.max(), "top1_agreement": top1.mean(), "top5_agreement": top5.mean()}))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
