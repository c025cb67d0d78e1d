#!/usr/bin/env python3
"""A Llama-shaped safetensors checkpoint (bench/random_llama.py's, TinyStories-656K) as a GGUF for
llama.cpp on a machine without torch (llama.cpp's convert_hf_to_gguf.py imports it; the CI VM's
Debian python has numpy only). Needs numpy and llama.cpp's gguf-py (PYTHONPATH=.../gguf-py).

The checkpoint's own weights: bf16 stays bf16, f32 stays f32 (norms are f32 either way), and q/k
rows are permuted from transformers' rotary layout (the two halves of each head) into llama.cpp's
(interleaved pairs), as convert_hf_to_gguf.py does, so the logits are the checkpoint's (checked by
bench/quality_vs_llamacpp.sh against transformers' reference logits). A tied head stays tied (no
output.weight: llama.cpp then reads token_embd). Without a tokenizer the vocabulary is synthetic
(SentencePiece-style pieces <0xNN> for the first 256 ids after the three specials, then "t<i>"):
llama-bench and bench/anchors/llama_logits feed token ids and read no text.

usage: PYTHONPATH=LLAMA/gguf-py python3 bench/llama_gguf.py CKPT_DIR OUT.gguf
"""
import json
import os
import struct
import sys

import numpy as np

import gguf

# HF tensor names -> GGUF ones (the Llama layout).
LAYER = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
TOP = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight", "lm_head.weight": "output.weight"}


def gguf_name(hf):
    if hf in TOP:
        return TOP[hf]
    parts = hf.split(".")
    if parts[:2] == ["model", "layers"] and ".".join(parts[3:]) in LAYER:
        return f"blk.{parts[2]}.{LAYER['.'.join(parts[3:])]}"
    raise SystemExit(f"llama_gguf: unexpected tensor {hf}")


def tensors(path):
    """(name, dtype, shape, memmapped array) of each tensor of one .safetensors file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        dt = {"BF16": np.uint16, "F32": np.float32, "F16": np.float16}[t["dtype"]]
        yield name, t["dtype"], t["shape"], data[a:b].view(dt).reshape(t["shape"])


def rotary_rows(arr, heads):
    """transformers' q/k rows (per head: the first halves of the rotary pairs, then the second
    halves) in llama.cpp's order (per head: the pairs interleaved)."""
    rows = arr.shape[0]
    return arr.reshape(heads, 2, rows // heads // 2, *arr.shape[1:]).swapaxes(1, 2).reshape(arr.shape)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    ckpt, out = sys.argv[1:3]
    cfg = json.load(open(os.path.join(ckpt, "config.json")))
    if cfg.get("model_type") != "llama":
        raise SystemExit(f"llama_gguf: {ckpt}: model_type {cfg.get('model_type')!r}, not llama")
    # (model*.safetensors: ../shared's folders also hold a reference.safetensors of logits)
    files = sorted(f for f in os.listdir(ckpt) if f.startswith("model") and f.endswith(".safetensors"))
    if not files:
        raise SystemExit(f"llama_gguf: {ckpt}: no .safetensors files")
    w = gguf.GGUFWriter(out + ".part", "llama")
    H, heads, V = cfg["hidden_size"], cfg["num_attention_heads"], cfg["vocab_size"]
    w.add_context_length(cfg.get("max_position_embeddings", 4096))
    w.add_embedding_length(H)
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(cfg.get("num_key_value_heads", heads))
    w.add_rope_dimension_count(H // heads)
    w.add_rope_freq_base(cfg.get("rope_theta", 10000.0))
    w.add_layer_norm_rms_eps(cfg.get("rms_norm_eps", 1e-5))
    kv_heads = cfg.get("num_key_value_heads", heads)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16 if cfg.get("torch_dtype") == "bfloat16" else gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(V)
    w.add_tokenizer_model("llama")
    toks, types = ["<unk>", "<s>", "</s>"], [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for i in range(3, V):
        byte = i - 3
        toks.append(f"<0x{byte:02X}>" if byte < 256 else f"t{i}")
        types.append(gguf.TokenType.BYTE if byte < 256 else gguf.TokenType.NORMAL)
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_scores([0.0] * V)
    w.add_bos_token_id(cfg.get("bos_token_id", 1))
    w.add_eos_token_id(cfg.get("eos_token_id", 2))
    names = {n for f in files for n, *_ in tensors(os.path.join(ckpt, f))}
    # A tied checkpoint may store only lm_head.weight (TinyStories-656K): it is the embedding then.
    tied_head_only = cfg.get("tie_word_embeddings") and "model.embed_tokens.weight" not in names
    for f in files:
        for name, dt, shape, arr in tensors(os.path.join(ckpt, f)):
            g = "token_embd.weight" if tied_head_only and name == "lm_head.weight" else gguf_name(name)
            if g.endswith("attn_q.weight"):
                arr = rotary_rows(arr, heads)
            elif g.endswith("attn_k.weight"):
                arr = rotary_rows(arr, kv_heads)
            if len(shape) == 1:  # norms stay f32, as llama.cpp's converter keeps them
                v = arr.astype(np.float32) if dt != "BF16" else (arr.astype(np.uint32) << 16).view(np.float32)
                w.add_tensor(g, np.ascontiguousarray(v))
            elif dt == "BF16":
                w.add_tensor(g, np.ascontiguousarray(arr), raw_dtype=gguf.GGMLQuantizationType.BF16)
            elif dt == "F32":
                w.add_tensor(g, np.ascontiguousarray(arr))
            else:
                raise SystemExit(f"llama_gguf: {name} is {dt}; convert a bf16 or f32 checkpoint")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(out + ".part", out)


if __name__ == "__main__":
    main()
