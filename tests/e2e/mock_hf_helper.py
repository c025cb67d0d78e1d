#!/usr/bin/env python3
"""A stand-in for transformers in CI (no torch there): tools/thintensor_hf.py's own protocol code
(request checks, safetensors writing, exit codes) with its engine replaced by a float64 NumPy
forward pass of Llama-architecture checkpoints (tests/e2e/llama_f64_reference.py) and, for the
fallback test, of Mixtral (Llama with a top-2 mixture of experts). Point $THINTENSOR_HF_HELPER
at this file. $MOCK_HF_LOG, when set, gets one line per request (mode and model) so that a test
can tell whether the helper ran at all (the reference cache).
"""
import json
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "tools"))
sys.path.insert(0, here)
import thintensor_hf as hf  # noqa: E402
from llama_f64_reference import load  # noqa: E402


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


class NumpyEngine:
    def versions(self):
        return {"engine": "mock_hf_helper (float64 NumPy)", "numpy": np.__version__}

    def _model(self, req):
        if log := os.environ.get("MOCK_HF_LOG"):
            with open(log, "a") as f:
                f.write(f"{sys.argv[1]} {req['model_dir']}\n")
        cfg = json.load(open(os.path.join(req["model_dir"], "config.json")))
        arch = cfg["architectures"][0]
        if arch not in ("LlamaForCausalLM", "MixtralForCausalLM"):
            raise hf.HelperError(hf.EXIT_LOAD, f"{req['model_dir']}: the mock helper runs Llama and Mixtral only, not {arch}")
        return cfg, load(os.path.join(req["model_dir"], "model.safetensors"))

    def reference(self, req):
        cfg, W = self._model(req)
        out = []
        for p in req["prompts"]:
            ids = list(p["input_ids"])
            logits = forward(cfg, W, np.array(ids))
            kept = logits[-int(p["logits_positions"]):]
            greedy, margins, last = [], [], logits[-1]
            for _ in range(int(p["greedy_tokens"])):
                order = np.argsort(-last)
                greedy.append(int(order[0]))
                margins.append(float(last[order[0]] - last[order[1]]))
                ids.append(int(order[0]))
                last = forward(cfg, W, np.array(ids))[-1]
            out.append({"logits": kept.astype(np.float32), "greedy_ids": greedy, "greedy_margins": margins})
        return out

    def generate(self, req):
        cfg, W = self._model(req)
        s = req.get("sampling", {})
        if s.get("temperature") != 0:
            raise hf.HelperError(hf.EXIT_USAGE, "the mock helper generates greedily only (--temperature 0)")
        ids = hf.parse_ids(req["prompt"])
        new = []
        for _ in range(int(req["max_tokens"])):
            nxt = int(np.argmax(forward(cfg, W, np.array(ids + new))[-1]))
            new.append(nxt)
        print(" ".join(str(i) for i in new), flush=True)


if __name__ == "__main__":
    sys.exit(hf.main(sys.argv[1:], engine_factory=NumpyEngine))
