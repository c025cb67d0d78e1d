#!/usr/bin/env python3
"""Writes a tiny, deterministic (seeded) Qwen3.5 checkpoint in the layout of the published
Qwen/Qwen3.5-0.8B (Qwen3_5ForConditionalGeneration: config under text_config, the text model's
weights under model.language_model.*, a vision tower under model.visual.* and a
multi-token-prediction layer under mtp.*, tied embeddings, so no lm_head.weight) with the real Qwen3
tokenizer from ../shared, for tests/e2e/quickstart_qwen3_5.sh. Only the sizes are small: hidden 64,
8 layers [linear_attention x3, full_attention] x 2. The weights are random, initialised the way
transformers does (normal(0, 0.02) embedding, (1 + w) norms near 0, the gated norm near 1,
A_log = log(uniform(1, 16)), dt_bias near 1; the projections a little wider, see PROJ_STD), so the
logits are not degenerate and the greedy tokens vary; the text is noise.

usage: make_qwen3_5_checkpoint.py OUT_DIR [--shared DIR]   (DIR: ../shared, or $TT_SHARED_DIR)
The tied embedding (vocab 151680 x 64 f32, ~39 MB) is most of it; generate it, never commit it.
"""
import argparse
import json
import lzma
import os
import shutil
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from llama_f64_reference import save  # noqa: E402  (the stdlib safetensors writer)

SEED = 1  # of a few tried, the one whose greedy paths (the quickstart prompt, suite quick) have the widest top-1 margins
HIDDEN, LAYERS, INTER = 64, 8, 128
HEADS, KV_HEADS, HEAD_DIM = 4, 2, 16
LIN_K_HEADS, LIN_V_HEADS, LIN_K_DIM, LIN_V_DIM, CONV_K = 2, 4, 16, 16, 4
LAYER_TYPES = (["linear_attention"] * 3 + ["full_attention"]) * (LAYERS // 4)


def tokenizer_size(tok):
    ids = set(tok["model"]["vocab"].values()) | {t["id"] for t in tok.get("added_tokens", [])}
    return max(ids) + 1


def token_id(tok, content):
    for t in tok.get("added_tokens", []):
        if t["content"] == content:
            return t["id"]
    raise KeyError(content)


# transformers draws every matrix from normal(0, initializer_range = 0.02). At hidden 64 that leaves
# the layers' outputs smaller than the tied embedding's echo of the last token, and the greedy
# continuation mostly repeats a token (374 374 374 ...); the projections use 3x that, so the next
# token depends on the context (the DeltaNet state and the KV cache through decode): each greedy
# path of 16 (the quickstart prompt, suite quick's four) has 16 distinct tokens, with top-1 margins
# of 5e-4 or more (f32 logits differ from float64 by ~1e-6 here).
EMBED_STD, PROJ_STD = 0.02, 0.06


def weights(vocab, rng):
    mat = lambda *shape: rng.normal(0.0, PROJ_STD, shape).astype(np.float32)
    norm = lambda n: rng.normal(0.0, 0.1, n).astype(np.float32)  # (1 + w) norms: small w
    W = {}
    P = "model.language_model."
    W[P + "embed_tokens.weight"] = rng.normal(0.0, EMBED_STD, (vocab, HIDDEN)).astype(np.float32)
    key_dim, value_dim = LIN_K_HEADS * LIN_K_DIM, LIN_V_HEADS * LIN_V_DIM
    conv_dim = 2 * key_dim + value_dim
    for l, kind in enumerate(LAYER_TYPES):
        p = f"{P}layers.{l}."
        W[p + "input_layernorm.weight"] = norm(HIDDEN)
        W[p + "post_attention_layernorm.weight"] = norm(HIDDEN)
        if kind == "linear_attention":
            a = p + "linear_attn."
            W[a + "in_proj_qkv.weight"] = mat(conv_dim, HIDDEN)
            W[a + "in_proj_z.weight"] = mat(value_dim, HIDDEN)
            W[a + "in_proj_b.weight"] = mat(LIN_V_HEADS, HIDDEN)
            W[a + "in_proj_a.weight"] = mat(LIN_V_HEADS, HIDDEN)
            W[a + "conv1d.weight"] = rng.normal(0.0, 0.3, (conv_dim, 1, CONV_K)).astype(np.float32)
            W[a + "dt_bias"] = (1.0 + rng.normal(0.0, 0.1, LIN_V_HEADS)).astype(np.float32)
            W[a + "A_log"] = np.log(rng.uniform(1.0, 16.0, LIN_V_HEADS)).astype(np.float32)
            W[a + "norm.weight"] = (1.0 + rng.normal(0.0, 0.1, LIN_V_DIM)).astype(np.float32)  # plain w: near 1
            W[a + "out_proj.weight"] = mat(HIDDEN, value_dim)
        else:
            a = p + "self_attn."
            W[a + "q_proj.weight"] = mat(2 * HEADS * HEAD_DIM, HIDDEN)  # [query | gate] per head
            W[a + "k_proj.weight"] = mat(KV_HEADS * HEAD_DIM, HIDDEN)
            W[a + "v_proj.weight"] = mat(KV_HEADS * HEAD_DIM, HIDDEN)
            W[a + "o_proj.weight"] = mat(HIDDEN, HEADS * HEAD_DIM)
            W[a + "q_norm.weight"] = norm(HEAD_DIM)
            W[a + "k_norm.weight"] = norm(HEAD_DIM)
        W[p + "mlp.gate_proj.weight"] = mat(INTER, HIDDEN)
        W[p + "mlp.up_proj.weight"] = mat(INTER, HIDDEN)
        W[p + "mlp.down_proj.weight"] = mat(HIDDEN, INTER)
    W[P + "norm.weight"] = norm(HIDDEN)
    # What ThinTensor must skip: a (tiny) vision tower and the multi-token-prediction layer.
    W["model.visual.patch_embed.proj.weight"] = mat(16, 3, 2, 4, 4)
    W["model.visual.blocks.0.norm1.weight"] = np.ones(16, np.float32)
    W["model.visual.merger.linear_fc2.weight"] = mat(HIDDEN, 64)
    W["mtp.fc.weight"] = mat(HIDDEN, 2 * HIDDEN)
    W["mtp.norm.weight"] = norm(HIDDEN)
    return dict(sorted(W.items()))


def config(vocab, tok, tok_cfg):
    # The chat's end (tokenizer_config's eos_token, <|im_end|>) first, then <|endoftext|> (its
    # pad_token), as Qwen's generation_config.json lists them.
    im_end, eot = token_id(tok, tok_cfg["eos_token"]), token_id(tok, tok_cfg["pad_token"])
    text = {
        "model_type": "qwen3_5_text",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attn_output_gate": True,
        "dtype": "float32",
        "eos_token_id": im_end,
        "full_attention_interval": 4,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "initializer_range": 0.02,
        "intermediate_size": INTER,
        "layer_types": LAYER_TYPES,
        "linear_conv_kernel_dim": CONV_K,
        "linear_key_head_dim": LIN_K_DIM,
        "linear_num_key_heads": LIN_K_HEADS,
        "linear_num_value_heads": LIN_V_HEADS,
        "linear_value_head_dim": LIN_V_DIM,
        "mamba_ssm_dtype": "float32",
        "max_position_embeddings": 4096,
        "mtp_num_hidden_layers": 1,
        "mtp_use_dedicated_embeddings": False,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "pad_token_id": None,
        "rms_norm_eps": 1e-6,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                            "mrope_section": [11, 11, 10], "mrope_interleaved": True},
        "tie_word_embeddings": True,
        "use_cache": True,
        "vocab_size": vocab,
    }
    return {
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "model_type": "qwen3_5",
        "image_token_id": token_id(tok, "<|image_pad|>"),
        "video_token_id": token_id(tok, "<|video_pad|>"),
        "vision_start_token_id": token_id(tok, "<|vision_start|>"),
        "vision_end_token_id": token_id(tok, "<|vision_end|>"),
        "eos_token_id": im_end,
        "tie_word_embeddings": True,
        "text_config": text,
        "vision_config": {
            "model_type": "qwen3_5", "deepstack_visual_indexes": [], "depth": 1, "hidden_act": "gelu_pytorch_tanh",
            "hidden_size": 16, "in_channels": 3, "initializer_range": 0.02, "intermediate_size": 32, "num_heads": 2,
            "num_position_embeddings": 16, "out_hidden_size": HIDDEN, "patch_size": 4, "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        "transformers_version": "5.17.0",
    }, [im_end, eot]


README = """# Qwen3.5-0.8B (tiny random stand-in)

Generated by ThinTensor's tests/e2e/make_qwen3_5_checkpoint.py for the quickstart end-to-end test:
the published Qwen/Qwen3.5-0.8B layout (Qwen3_5ForConditionalGeneration, text_config, weights under
model.language_model.*, tied embeddings, a vision tower under model.visual.* and an mtp.* layer)
with tiny random weights (hidden 64, 8 layers: linear_attention x3, full_attention, twice) and the
real Qwen3 tokenizer. Its text is noise; it exists to exercise pull -> convert -> run -> validate.
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--shared", default=os.environ.get("TT_SHARED_DIR") or os.path.join(here, "..", "..", "..", "shared"))
    args = ap.parse_args()
    tok_dir = os.path.join(args.shared, "tokenizers", "qwen3")
    raw = lzma.open(os.path.join(tok_dir, "tokenizer.json.xz")).read()
    tok = json.loads(raw)
    n = tokenizer_size(tok)
    vocab = (n + 63) // 64 * 64  # the embedding rows, padded as Qwen pads them
    os.makedirs(args.out_dir, exist_ok=True)
    out = lambda name: os.path.join(args.out_dir, name)
    with open(out("tokenizer.json"), "wb") as f:
        f.write(raw)
    shutil.copyfile(os.path.join(tok_dir, "tokenizer_config.json"), out("tokenizer_config.json"))
    cfg, eos = config(vocab, tok, json.load(open(out("tokenizer_config.json"))))
    with open(out("config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(out("generation_config.json"), "w") as f:
        json.dump({"bos_token_id": token_id(tok, "<|endoftext|>"), "eos_token_id": eos, "pad_token_id": eos[1],
                   "do_sample": True, "temperature": 0.7, "top_k": 20, "top_p": 0.8,
                   "transformers_version": "5.17.0"}, f, indent=2)
        f.write("\n")
    with open(out("README.md"), "w") as f:
        f.write(README)
    save(out("model.safetensors"), weights(vocab, np.random.default_rng(SEED)))
    print(json.dumps({"out": args.out_dir, "vocab_size": vocab, "tokenizer_size": n}))


if __name__ == "__main__":
    main()
