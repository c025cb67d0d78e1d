#!/usr/bin/env python3
"""Copies a mixture-of-experts checkpoint with its experts stored fused, as transformers v5 holds
them (Qwen3MoeExperts / Qwen3_5MoeExperts / MixtralExperts): per layer
  mlp.experts.gate_up_proj [n_experts, 2 * ffn, hidden]  expert e's gate_proj rows, then its up_proj rows
  mlp.experts.down_proj    [n_experts, hidden, ffn]      expert e's down_proj
and, for Mixtral, block_sparse_moe.gate renamed mlp.gate (transformers' conversion_mapping.py).
The bytes are restacked as they are: the fused copy holds exactly the per-expert copy's values.

usage: make_fused_experts.py SRC_DIR DST_DIR [--break-down]
  --break-down  store layer 1's down_proj transposed ([n_experts, ffn, hidden]), a wrong shape
"""
import json
import re
import shutil
import struct
import sys
from pathlib import Path

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
break_down = "--break-down" in sys.argv[3:]
dst.mkdir(parents=True, exist_ok=True)
for f in src.iterdir():
    if f.is_file() and f.name not in ("model.safetensors", "reference.safetensors"):
        shutil.copy(f, dst / f.name)

raw = (src / "model.safetensors").read_bytes()
n = struct.unpack_from("<Q", raw)[0]
header = json.loads(raw[8:8 + n])
meta = header.pop("__metadata__", None)
data = raw[8 + n:]


def tensor_bytes(name):
    b, e = header[name]["data_offsets"]
    return data[b:e]


# Per-expert names: Qwen's mlp.experts.E.{gate,up,down}_proj.weight, Mixtral's
# block_sparse_moe.experts.E.{w1,w3,w2}.weight.
expert_re = re.compile(r"^(.*\.layers\.\d+\.)(mlp|block_sparse_moe)\.experts\.(\d+)\.(gate_proj|up_proj|down_proj|w1|w3|w2)\.weight$")
which = {"gate_proj": "gate", "w1": "gate", "up_proj": "up", "w3": "up", "down_proj": "down", "w2": "down"}
layers = {}  # layer prefix -> expert -> gate/up/down -> name
out = []     # (name, dtype, shape, bytes), in order
for name in sorted(header, key=lambda k: header[k]["data_offsets"][0]):
    m = expert_re.match(name)
    if m:
        layers.setdefault(m.group(1), {}).setdefault(int(m.group(3)), {})[which[m.group(4)]] = name
        continue
    new_name = name.replace(".block_sparse_moe.gate.", ".mlp.gate.")
    out.append((new_name, header[name]["dtype"], header[name]["shape"], tensor_bytes(name)))
if not layers:
    sys.exit(f"{src}: no per-expert tensors to fuse")

for prefix, experts in sorted(layers.items()):
    n_experts = len(experts)
    assert sorted(experts) == list(range(n_experts)), f"{prefix}: experts {sorted(experts)}"
    first = experts[0]
    dtype = header[first["gate"]]["dtype"]
    ffn, hidden = header[first["gate"]]["shape"]
    gate_up = b"".join(tensor_bytes(experts[e]["gate"]) + tensor_bytes(experts[e]["up"]) for e in range(n_experts))
    down = b"".join(tensor_bytes(experts[e]["down"]) for e in range(n_experts))
    down_shape = [n_experts, hidden, ffn]
    if break_down and ".layers.1." in prefix:
        down_shape = [n_experts, ffn, hidden]  # same bytes, the shape of a transposed layout
    out.append((prefix + "mlp.experts.gate_up_proj", dtype, [n_experts, 2 * ffn, hidden], gate_up))
    out.append((prefix + "mlp.experts.down_proj", dtype, down_shape, down))

new_header = {}
if meta is not None:
    new_header["__metadata__"] = meta
offset = 0
for name, dtype, shape, b in out:
    new_header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(b)]}
    offset += len(b)
text = json.dumps(new_header).encode()
text += b" " * (-len(text) % 8)
with open(dst / "model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    for _, _, _, b in out:
        f.write(b)
