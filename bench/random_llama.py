#!/usr/bin/env python3
"""A random Llama-shaped Hugging Face checkpoint (config.json + model.safetensors, bf16) for
benchmarks on machines without torch or numpy (the CI VM: the host decode path end to end).

Weights are random bf16 values with |w| in [2^-7, 2^-3), norms 1.0: finite, no denormals, so
`thintensor convert` and the quantized profiles take them as a real checkpoint. No tokenizer:
bench feeds token ids.

  python3 bench/random_llama.py OUT_DIR [--hidden 2048 --layers 16 --heads 32 --kv-heads 8
                                         --ffn 8192 --vocab 32000 --context 8192]
The defaults are a 1.1 B-parameter model (2.2 GB in bf16).
"""
import argparse
import json
import os
import struct

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("out")
ap.add_argument("--hidden", type=int, default=2048)
ap.add_argument("--layers", type=int, default=16)
ap.add_argument("--heads", type=int, default=32)
ap.add_argument("--kv-heads", type=int, default=8)
ap.add_argument("--ffn", type=int, default=8192)
ap.add_argument("--vocab", type=int, default=32000)
ap.add_argument("--context", type=int, default=8192)
a = ap.parse_args()
H, L, F, V = a.hidden, a.layers, a.ffn, a.vocab
HD = H // a.heads
cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H, "num_hidden_layers": L,
       "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads, "intermediate_size": F, "vocab_size": V,
       "max_position_embeddings": a.context, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "hidden_act": "silu",
       "tie_word_embeddings": False, "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2}
tensors = [("model.embed_tokens.weight", (V, H))]
for i in range(L):
    p = f"model.layers.{i}."
    tensors += [(p + "input_layernorm.weight", (H,)), (p + "self_attn.q_proj.weight", (H, H)),
                (p + "self_attn.k_proj.weight", (a.kv_heads * HD, H)), (p + "self_attn.v_proj.weight", (a.kv_heads * HD, H)),
                (p + "self_attn.o_proj.weight", (H, H)), (p + "post_attention_layernorm.weight", (H,)),
                (p + "mlp.gate_proj.weight", (F, H)), (p + "mlp.up_proj.weight", (F, H)), (p + "mlp.down_proj.weight", (H, F))]
tensors += [("model.norm.weight", (H,)), ("lm_head.weight", (V, H))]


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


header, off = {}, 0
for name, shape in tensors:
    n = 2 * numel(shape)
    header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
    off += n
hj = json.dumps(header).encode()
hj += b" " * ((8 - len(hj) % 8) % 8)
# A bf16 value's high byte: the sign and an exponent of 2^-7 .. 2^-4 (0x3C or 0x3D, with the low byte's top bit).
high = bytes((0x3C | (b & 1)) | (0x80 if b & 2 else 0) for b in range(256))
os.makedirs(a.out, exist_ok=True)
with open(os.path.join(a.out, "config.json"), "w") as f:
    json.dump(cfg, f, indent=1)
tmp = os.path.join(a.out, "model.safetensors.part")
with open(tmp, "wb") as f:
    f.write(struct.pack("<Q", len(hj)) + hj)
    for name, shape in tensors:
        n = numel(shape)
        if name.endswith("norm.weight"):
            f.write(b"\x80\x3f" * n)  # bf16 1.0
            continue
        while n:
            k = min(n, 1 << 24)
            buf = bytearray(2 * k)
            buf[0::2] = os.urandom(k)
            buf[1::2] = os.urandom(k).translate(high)
            f.write(buf)
            n -= k
os.replace(tmp, os.path.join(a.out, "model.safetensors"))
print(f"{a.out}: {sum(numel(s) for _, s in tensors) / 1e9:.2f} B parameters, {off / 1e9:.2f} GB")
