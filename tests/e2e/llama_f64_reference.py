#!/usr/bin/env python3
"""An independent float64 NumPy forward pass of a Llama-architecture HF checkpoint (and of Mixtral,
Llama with a top-k mixture of experts, for tests/e2e/mock_hf_helper.py), no torch:
writes a reference file in the format of ../shared's (input_ids, logits_f32, greedy_ids) for the
given token ids, so `thintensor validate` can be checked against exact arithmetic. Used for
stories260K, whose bos_greedy_ids (computed by transformers) part from the exact greedy path at a
near-tie (see tests/e2e/stories260k_f64.sh).

usage: llama_f64_reference.py MODEL_DIR IDS_SAFETENSORS IDS_KEY N_TOKENS OUT.safetensors
"""
import json, struct, sys

import numpy as np


def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        s, e = v["data_offsets"]
        dt = {"F32": np.float32, "I64": np.int64}[v["dtype"]]
        out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype=dt).reshape(v["shape"])
    return out


def save(path, tensors):
    header, blobs, off = {}, [], 0
    for k, a in tensors.items():
        raw = np.ascontiguousarray(a).tobytes()
        header[k] = {"dtype": {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[a.dtype],
                     "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def forward(cfg, W, ids):
    """float64 logits [T, V] for a Llama or Mixtral checkpoint."""
    T, H = len(ids), cfg["hidden_size"]
    NH, NKV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    HD = cfg.get("head_dim") or H // NH
    theta = (cfg.get("rope_parameters") or {}).get("rope_theta") or cfg.get("rope_theta", 10000.0)
    eps = cfg["rms_norm_eps"]
    embed = W["model.embed_tokens.weight"] if "model.embed_tokens.weight" in W else W["lm_head.weight"]  # tied, stored once
    x = embed[ids].astype(np.float64)
    inv = 1.0 / (theta ** (np.arange(0, HD, 2) / HD))
    ang = np.arange(T)[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))
    rms = lambda v, w: v / np.sqrt((v * v).mean(-1, keepdims=True) + eps) * w
    rot = lambda q: np.concatenate([-q[..., HD // 2:], q[..., :HD // 2]], -1)
    silu = lambda g: g / (1 + np.exp(-g))
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms(x, W[p + "input_layernorm.weight"])
        q = (h @ W[p + "self_attn.q_proj.weight"].T).reshape(T, NH, HD)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).reshape(T, NKV, HD)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).reshape(T, NKV, HD)
        q = q * cos[:, None] + rot(q) * sin[:, None]
        k = k * cos[:, None] + rot(k) * sin[:, None]
        out = np.zeros((T, NH, HD))
        for hh in range(NH):
            g = hh // (NH // NKV)
            s = q[:, hh] @ k[:, g].T / np.sqrt(HD) + mask
            s = np.exp(s - s.max(1, keepdims=True))
            out[:, hh] = (s / s.sum(1, keepdims=True)) @ v[:, g]
        x = x + out.reshape(T, NH * HD) @ W[p + "self_attn.o_proj.weight"].T
        h = rms(x, W[p + "post_attention_layernorm.weight"])
        if p + "mlp.gate_proj.weight" in W:
            x = x + (silu(h @ W[p + "mlp.gate_proj.weight"].T) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
        else:  # Mixtral: softmax router, top-k experts, weights renormalised over the chosen ones
            e = p + "block_sparse_moe."
            r = h @ W[e + "gate.weight"].T
            r = np.exp(r - r.max(1, keepdims=True))
            r /= r.sum(1, keepdims=True)
            y = np.zeros_like(h)
            for t in range(T):
                top = np.argsort(-r[t])[:cfg["num_experts_per_tok"]]
                wts = r[t, top] / r[t, top].sum()
                for wt, ex in zip(wts, top):
                    f = f"{e}experts.{ex}."
                    y[t] += wt * ((silu(h[t] @ W[f + "w1.weight"].T) * (h[t] @ W[f + "w3.weight"].T)) @ W[f + "w2.weight"].T)
            x = x + y
    x = rms(x, W["model.norm.weight"])
    head = W.get("lm_head.weight", embed)
    return x @ head.T


def main():
    model_dir, ids_file, key, n, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    cfg = json.load(open(f"{model_dir}/config.json"))
    W = load(f"{model_dir}/model.safetensors")
    ids = load(ids_file)[key][:n].astype(np.int64)
    logits = forward(cfg, W, ids)
    greedy = logits.argmax(-1)  # the exact next-token choice after each prefix
    save(out, {"input_ids": ids, "logits_f32": logits.astype(np.float32), "next_ids": greedy.astype(np.int64)})
    top2 = np.sort(logits[-1])[-2:]
    print(json.dumps({"positions": n, "last_argmax": int(greedy[-1]), "last_margin": float(top2[1] - top2[0])}))


if __name__ == "__main__":
    main()
