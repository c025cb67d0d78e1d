#!/usr/bin/env python3
"""Makes a random-weight Hugging Face checkpoint of a real model's shape with transformers'
own initialisation (on the GPU, bf16), saves it, then measures transformers on it (bf16, sdpa,
eager generate) and writes reference logits in the format of ../shared's reference files, so that
ThinTensor's run on the same checkpoint can be checked and compared in the same benchmark run.

usage: hf_random_model.py SHAPE OUT_DIR RESULT_JSON [--gen N] [--prefill N]
SHAPE: llama3-8b | qwen3-0.6b
"""
import argparse, json, os, sys, time

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen3Config

SHAPES = {
    "llama3-8b": lambda: LlamaConfig(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
        rope_theta=500000.0, tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
    "qwen3-0.6b": lambda: Qwen3Config(
        hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
        num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=40960,
        rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True, bos_token_id=151643,
        eos_token_id=151645),
}


def sync_time(fn, reps):
    out = []
    for _ in range(reps):
        torch.cuda.synchronize(); t0 = time.perf_counter(); fn(); torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    out.sort()
    return out[len(out) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("out_dir")
    ap.add_argument("result_json")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--prefill", type=int, default=2048)
    ap.add_argument("--no-speed", action="store_true", help="make the checkpoint and reference only")
    a = ap.parse_args()
    torch.manual_seed(0)
    cfg = SHAPES[a.shape]()
    cfg._attn_implementation = "sdpa"
    t0 = time.perf_counter()
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    model.eval()
    # transformers initialises norms to 1 and biases to 0; perturb the norms so they matter.
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.05)
    torch.cuda.synchronize()
    init_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    model.save_pretrained(a.out_dir, safe_serialization=True, max_shard_size="5GB")
    save_s = time.perf_counter() - t0
    res = {"shape": a.shape, "init_s": init_s, "save_s": save_s,
           "params": sum(p.numel() for p in model.parameters()),
           "torch": torch.__version__, "transformers": __import__("transformers").__version__,
           "gpu": torch.cuda.get_device_name(0)}

    with torch.no_grad():
        # Reference logits for parity (64-token prompt, bf16 model, logits as f32) + greedy ids.
        g = torch.Generator(device="cpu").manual_seed(1)
        ids = torch.randint(0, cfg.vocab_size, (1, 64), generator=g).cuda()
        logits = model(ids).logits[0].float()
        greedy = model.generate(ids[:, :8], max_new_tokens=24, do_sample=False, min_new_tokens=24,
                                pad_token_id=0)[0, 8:]
        # The same weights upcast to f32 (exact), all arithmetic in f32: what ThinTensor's f32
        # accumulation computes, so the bf16 archive is held to this one too.
        model.float()
        logits32 = model(ids).logits[0].float()
        model.to(torch.bfloat16)
        save_file({"input_ids": ids[0].cpu().to(torch.int64), "logits_bf16": logits.cpu().contiguous(),
                   "logits_f32": logits32.cpu().contiguous(), "greedy_ids": greedy.cpu().to(torch.int64)},
                  os.path.join(a.out_dir, "reference.safetensors"))

        if a.no_speed:
            json.dump(res, open(a.result_json, "w"), indent=2)
            return 0
        # Decode speed: eager generate, batch 1, one prompt token, a fixed number of new tokens.
        prompt = ids[:, :1]
        model.generate(prompt, max_new_tokens=4, min_new_tokens=4, do_sample=False, pad_token_id=0)
        dt = sync_time(lambda: model.generate(prompt, max_new_tokens=a.gen, min_new_tokens=a.gen,
                                              do_sample=False, pad_token_id=0), 2)
        res["hf_decode_tok_s"] = a.gen / dt
        # Prefill speed: one forward pass over a.prefill tokens.
        long_ids = torch.randint(0, cfg.vocab_size, (1, a.prefill), generator=g).cuda()
        model(long_ids, logits_to_keep=1)
        dt = sync_time(lambda: model(long_ids, logits_to_keep=1), 3)
        res["hf_prefill_tok_s"] = a.prefill / dt
        res["hf_prefill_len"] = a.prefill
    json.dump(res, open(a.result_json, "w"), indent=2)
    print(json.dumps(res))


if __name__ == "__main__":
    sys.exit(main())
