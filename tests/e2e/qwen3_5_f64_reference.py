#!/usr/bin/env python3
"""An independent float64 NumPy forward pass of the Qwen3.5 text model (no torch), written from
the description of transformers' Qwen3_5ForCausalLM / Qwen3_5ForConditionalGeneration:

  * Qwen3_5RMSNorm (layer, final, q and k norms) is zero-centred: x * rsqrt(mean x^2 + eps) * (1 + w).
  * Full-attention layers: q_proj holds [query | gate] per head; the query and key get their
    per-head norms, then partial RoPE (rotate_half over the first head_dim * partial_rotary_factor
    dimensions; Qwen3.5's interleaved M-RoPE is plain RoPE for text, whose three position rows are
    equal), causal GQA softmax attention scaled by head_dim^-0.5, the output times sigmoid(gate).
  * Linear-attention layers (Gated DeltaNet), token by token: in_proj_qkv, a causal depthwise
    conv1d of kernel K over [zeros(K-1), x] with SiLU, split into q | k | v; q and k L2-normalised
    (eps 1e-6) and q scaled by k_head_dim^-0.5; value head h reads query/key head h // (Hv / Hk);
    beta = sigmoid(b), g = -exp(A_log) * softplus(a + dt_bias); per head the state S [dk, dv]
    decays by exp(g), then S += k (x) ((v - S^T k) * beta), and the output is S^T q; a gated RMSNorm
    o * rsqrt(mean o^2 + eps) * w * silu(z) (plain w) per value head; out_proj.
  * SiLU-gated MLP; the head is lm_head.weight, or the embedding when it is absent (tied).

Both layouts load: Qwen3_5ForCausalLM (config at the top level, weights under model.*) and
Qwen3_5ForConditionalGeneration (config under text_config, weights under model.language_model.*,
lm_head.weight at the top; model.visual.* and mtp.* are not read).

usage:
  qwen3_5_f64_reference.py --check-fixture DIR
      DIR/reference.safetensors (transformers' own logits_f32 for input_ids, greedy_ids after
      input_ids[:8]): prints the max |difference| of this forward pass's logits and whether the
      greedy ids agree; exits 1 when the difference passes 1e-4 or they do not.
  qwen3_5_f64_reference.py --greedy MODEL_DIR N ID [ID ...]
      prints the N greedy token ids that follow the given prompt ids (float64 argmax).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_f64_reference import load  # noqa: E402  (the stdlib safetensors reader)

ARCHITECTURES = ("Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration")


def text_config(cfg):
    """The text model's fields: text_config for the image-text layout, else config.json itself."""
    return cfg.get("text_config") or cfg


def text_prefix(W):
    return "model.language_model." if any(k.startswith("model.language_model.") for k in W) else "model."


def load_model(model_dir):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    return cfg, load(os.path.join(model_dir, "model.safetensors"))


_f64_cache = {}


def f64(a):
    """A float64 copy of a weight, made once per array (the tied head is ~150k x hidden)."""
    key = id(a)
    hit = _f64_cache.get(key)
    if hit is None or hit[0] is not a:
        hit = (a, np.asarray(a, dtype=np.float64))
        _f64_cache[key] = hit
    return hit[1]


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu(x):
    return x * sigmoid(x)


def forward(cfg, W, ids, n_logits=None):
    """float64 logits [n, V] for the last n_logits positions of `ids` (all positions by default)."""
    c = text_config(cfg)
    ids = np.asarray(ids, dtype=np.int64)
    T, D = len(ids), c["hidden_size"]
    eps = float(c["rms_norm_eps"])
    NH, NKV = c["num_attention_heads"], c["num_key_value_heads"]
    HD = c.get("head_dim") or D // NH
    rp = c.get("rope_parameters") or {}
    theta = float(rp.get("rope_theta", c.get("rope_theta", 10000.0)))
    prf = float(rp.get("partial_rotary_factor", c.get("partial_rotary_factor", 1.0)))
    RD = int(HD * prf)
    layer_types = c.get("layer_types") or ["full_attention"] * c["num_hidden_layers"]
    P = text_prefix(W)
    w = lambda name: f64(W[name])

    def norm1p(v, weight):  # Qwen3_5RMSNorm: zero-centred weight
        return v / np.sqrt((v * v).mean(-1, keepdims=True) + eps) * (1.0 + weight)

    # RoPE tables for the rotated part of each head.
    inv = 1.0 / theta ** (np.arange(0, RD, 2, dtype=np.float64) / RD)
    ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    cos = np.cos(np.concatenate([ang, ang], 1))[:, None, :]
    sin = np.sin(np.concatenate([ang, ang], 1))[:, None, :]

    def rope(t):  # t [T, heads, HD]
        r, rest = t[..., :RD], t[..., RD:]
        half = np.concatenate([-r[..., RD // 2:], r[..., :RD // 2]], -1)
        return np.concatenate([r * cos + half * sin, rest], -1)

    mask = np.triu(np.full((T, T), -np.inf), 1)

    def attention(p, h):
        qg = (h @ w(p + "q_proj.weight").T).reshape(T, NH, 2 * HD)
        q, gate = qg[..., :HD], qg[..., HD:].reshape(T, NH * HD)
        k = (h @ w(p + "k_proj.weight").T).reshape(T, NKV, HD)
        v = (h @ w(p + "v_proj.weight").T).reshape(T, NKV, HD)
        q = rope(norm1p(q, w(p + "q_norm.weight")))
        k = rope(norm1p(k, w(p + "k_norm.weight")))
        out = np.empty((T, NH, HD))
        for hh in range(NH):
            g = hh // (NH // NKV)
            s = q[:, hh] @ k[:, g].T * HD ** -0.5 + mask
            s = np.exp(s - s.max(1, keepdims=True))
            out[:, hh] = (s / s.sum(1, keepdims=True)) @ v[:, g]
        return (out.reshape(T, NH * HD) * sigmoid(gate)) @ w(p + "o_proj.weight").T

    Hk, Hv = c.get("linear_num_key_heads"), c.get("linear_num_value_heads")
    dk, dv, K = c.get("linear_key_head_dim"), c.get("linear_value_head_dim"), c.get("linear_conv_kernel_dim")

    def delta_net(p, h):
        key_dim = Hk * dk
        qkv = h @ w(p + "in_proj_qkv.weight").T  # [T, conv_dim]
        cw = w(p + "conv1d.weight")[:, 0, :]  # [conv_dim, K]
        xp = np.concatenate([np.zeros((K - 1, qkv.shape[1])), qkv], 0)
        conv = np.zeros_like(qkv)
        for j in range(K):
            conv += xp[j:j + T] * cw[:, j]
        conv = silu(conv)
        q = conv[:, :key_dim].reshape(T, Hk, dk)
        k = conv[:, key_dim:2 * key_dim].reshape(T, Hk, dk)
        v = conv[:, 2 * key_dim:].reshape(T, Hv, dv)
        z = (h @ w(p + "in_proj_z.weight").T).reshape(T, Hv, dv)
        beta = sigmoid(h @ w(p + "in_proj_b.weight").T)  # [T, Hv]
        a = h @ w(p + "in_proj_a.weight").T
        g = -np.exp(w(p + "A_log")) * np.logaddexp(0.0, a + w(p + "dt_bias"))  # -exp(A) * softplus
        l2 = lambda t: t / np.sqrt((t * t).sum(-1, keepdims=True) + 1e-6)
        q, k = l2(q) * dk ** -0.5, l2(k)
        group = np.arange(Hv) // (Hv // Hk)  # the query/key head each value head reads
        S = np.zeros((Hv, dk, dv))
        o = np.empty((T, Hv, dv))
        for t in range(T):
            kt, qt = k[t][group], q[t][group]  # [Hv, dk]
            S *= np.exp(g[t])[:, None, None]
            delta = (v[t] - np.einsum("hkv,hk->hv", S, kt)) * beta[t][:, None]
            S += kt[:, :, None] * delta[:, None, :]
            o[t] = np.einsum("hkv,hk->hv", S, qt)
        o = o / np.sqrt((o * o).mean(-1, keepdims=True) + eps) * w(p + "norm.weight") * silu(z)
        return o.reshape(T, Hv * dv) @ w(p + "out_proj.weight").T

    embed = W[P + "embed_tokens.weight"]
    x = embed[ids].astype(np.float64)
    for l, kind in enumerate(layer_types[:c["num_hidden_layers"]]):
        p = f"{P}layers.{l}."
        h = norm1p(x, w(p + "input_layernorm.weight"))
        if kind == "linear_attention":
            x = x + delta_net(p + "linear_attn.", h)
        elif kind == "full_attention":
            x = x + attention(p + "self_attn.", h)
        else:
            raise ValueError(f"layer {l}: unknown layer type {kind!r}")
        h = norm1p(x, w(p + "post_attention_layernorm.weight"))
        m = p + "mlp."
        x = x + (silu(h @ w(m + "gate_proj.weight").T) * (h @ w(m + "up_proj.weight").T)) @ w(m + "down_proj.weight").T
    n = T if n_logits is None else min(int(n_logits), T)
    x = norm1p(x[T - n:], w(P + "norm.weight"))
    head = W["lm_head.weight"] if "lm_head.weight" in W else embed  # tied: the embedding, stored once
    return x @ f64(head).T


def greedy(cfg, W, ids, n):
    """The n float64-argmax tokens after `ids`, with the top-1 - top-2 margin of each."""
    ids, out, margins = list(ids), [], []
    for _ in range(n):
        last = forward(cfg, W, ids, 1)[-1]
        top2 = np.argsort(-last)[:2]
        out.append(int(top2[0]))
        margins.append(float(last[top2[0]] - last[top2[1]]))
        ids.append(int(top2[0]))
    return out, margins


def check_fixture(d):
    cfg, W = load_model(d)
    ref = load(os.path.join(d, "reference.safetensors"))
    ids = ref["input_ids"].astype(np.int64)
    logits = forward(cfg, W, ids)
    diff = float(np.abs(logits - ref["logits_f32"]).max())
    scale = float(np.abs(ref["logits_f32"]).max())
    line = {"positions": len(ids), "max_abs_diff": diff, "max_abs_logit": scale}
    if "greedy_ids" in ref:  # the fixtures' greedy_ids continue input_ids[:8] (../shared/README.md)
        g, _ = greedy(cfg, W, ids[:8], len(ref["greedy_ids"]))
        line["greedy_equal"] = g == [int(i) for i in ref["greedy_ids"]]
    print(json.dumps(line))
    return 0 if diff <= 1e-4 and line.get("greedy_equal", True) else 1


def main(argv):
    if len(argv) == 2 and argv[0] == "--check-fixture":
        return check_fixture(argv[1])
    if len(argv) >= 4 and argv[0] == "--greedy":
        cfg, W = load_model(argv[1])
        out, _ = greedy(cfg, W, [int(i) for i in argv[3:]], int(argv[2]))
        print(" ".join(map(str, out)))
        return 0
    print(__doc__.split("usage:")[1].rstrip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
