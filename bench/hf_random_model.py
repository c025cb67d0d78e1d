#!/usr/bin/env python3
"""Makes a random-weight Hugging Face checkpoint of a real model's shape with transformers'
own initialisation (on the GPU, bf16), saves it, then measures transformers on it (bf16, sdpa,
eager generate) and writes reference logits in the format of ../shared's reference files, so that
ThinTensor's run on the same checkpoint can be checked and compared in the same benchmark run.

usage: hf_random_model.py SHAPE OUT_DIR RESULT_JSON [--gen N] [--prefill N] [--no-speed] [--no-f32] [--speed-only]
--speed-only: OUT_DIR already holds the checkpoint (made earlier by this script): load it and
measure transformers' speed only (a benchmark that makes the checkpoint while other work loads the
CPU, and times transformers once the machine is quiet).
SHAPE: llama3-8b | qwen3-0.6b | qwen3-30b-a3b-16l (Qwen3-30B-A3B with 16 of its 48 layers, ~21 GB)
       | qwen3.5-0.8b (Qwen3.5-0.8B's text model: [3 Gated DeltaNet + 1 gated attention] x 6)
       | gemma4-e2b (Gemma-4-E2B's text model: per-layer inputs, [4 sliding + 1 full] x 7, the last
         20 layers sharing KV, head_dim 256 / 512, double-wide MLPs in the shared layers)

note: transformers 5.x holds a MoE layer's experts fused in memory (mlp.experts.gate_up_proj
[E, 2*I, H], gate rows first, and mlp.experts.down_proj [E, H, I]; conversion_mapping.py maps the
hub's per-expert names onto them when loading). The MoE shape is therefore written by
save_per_expert below, with the hub's per-expert names (model.layers.N.mlp.experts.E.{gate,up,down}_proj.weight),
whatever save_pretrained of the installed version would write.
"""
import argparse, json, os, sys, time

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config, Qwen3Config, Qwen3MoeConfig

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
    # Qwen/Qwen2.5-0.5B's config.json (q/k/v biases are Qwen2's own; calm runs it, not Qwen3).
    "qwen2.5-0.5b": lambda: Qwen2Config(
        hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768, rms_norm_eps=1e-6,
        rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False, bos_token_id=151643,
        eos_token_id=151643),
    "qwen3-30b-a3b-16l": lambda: qwen3_moe_config(num_hidden_layers=16),
    "qwen3.5-0.8b": lambda: qwen3_5_config(),
    "gemma4-e2b": lambda: gemma4_e2b_config(),
}


def gemma4_e2b_config():
    """google/gemma-4-E2B's text_config (transformers' gemma4 conversion script, variant gemma-4-e2b;
    head_dim 256 and global_head_dim 512 are the config's defaults, per_layer_config derived from
    them). The vocabulary is 262,145: the Gemma 3 tokenizer in ../shared, the nearest real one, has
    that many entries (llama.cpp refuses a file whose vocabulary and tokenizer differ)."""
    from transformers import Gemma4TextConfig
    cfg = Gemma4TextConfig(
        hidden_size=1536, hidden_size_per_layer_input=256, intermediate_size=4 * 1536, num_hidden_layers=35,
        layer_types=(["sliding_attention"] * 4 + ["full_attention"]) * 7, num_attention_heads=8,
        num_key_value_heads=1, attention_k_eq_v=False, num_kv_shared_layers=20, use_double_wide_mlp=True,
        final_logit_softcapping=30.0, vocab_size=262145, vocab_size_per_layer_input=262145,
        rope_parameters={"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
    cfg.architectures = ["Gemma4ForCausalLM"]
    return cfg


def qwen3_5_config():
    """Qwen/Qwen3.5-0.8B's text_config (the Qwen3_5ForCausalLM part of the published model)."""
    from transformers import Qwen3_5TextConfig
    cfg = Qwen3_5TextConfig(
        hidden_size=1024, intermediate_size=3584, num_hidden_layers=24, num_attention_heads=8, num_key_value_heads=2,
        head_dim=256, linear_num_key_heads=16, linear_num_value_heads=16, linear_key_head_dim=128,
        linear_value_head_dim=128, linear_conv_kernel_dim=4, vocab_size=248320, max_position_embeddings=262144,
        rms_norm_eps=1e-6, tie_word_embeddings=True,
        layer_types=(["linear_attention"] * 3 + ["full_attention"]) * 6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25})
    cfg.architectures = ["Qwen3_5ForCausalLM"]
    return cfg
MOE_SHAPES = {"qwen3-30b-a3b-16l"}


def qwen3_moe_config(num_hidden_layers):
    """Qwen/Qwen3-30B-A3B's config.json with fewer layers. transformers 5.x names some fields
    differently from the hub file (num_experts -> num_local_experts, rope_theta -> rope_parameters);
    the values are set through whichever names this version has and checked afterwards."""
    cfg = Qwen3MoeConfig(
        hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768, num_hidden_layers=num_hidden_layers,
        num_attention_heads=32, num_key_value_heads=4, head_dim=128, vocab_size=151936,
        max_position_embeddings=40960, rms_norm_eps=1e-6, num_experts=128, num_experts_per_tok=8,
        norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], tie_word_embeddings=False,
        bos_token_id=151643, eos_token_id=151645, rope_theta=1000000.0)
    if isinstance(getattr(cfg, "rope_parameters", None), dict):
        cfg.rope_parameters = {"rope_type": "default", "rope_theta": 1000000.0}
    for name in ("num_experts", "num_local_experts"):
        if hasattr(cfg, name) and getattr(cfg, name) != 128:
            setattr(cfg, name, 128)
    n_exp = getattr(cfg, "num_experts", None) or getattr(cfg, "num_local_experts", None)
    if n_exp != 128 or cfg.num_experts_per_tok != 8 or cfg.moe_intermediate_size != 768 or not cfg.norm_topk_prob:
        raise SystemExit(f"Qwen3MoeConfig did not take the MoE fields: experts {n_exp}, top-k {cfg.num_experts_per_tok}, "
                         f"moe_intermediate_size {cfg.moe_intermediate_size}, norm_topk_prob {cfg.norm_topk_prob}")
    return cfg


def save_per_expert(model, cfg, out_dir):
    """Writes the model as the hub's Qwen3-30B-A3B is laid out: one safetensors shard per layer
    (plus one for embedding, final norm and head), per-expert tensor names, an index, config.json
    with the hub's field names beside this version's. Returns the number of expert tensors written."""
    os.makedirs(out_dir, exist_ok=True)
    state = model.state_dict()
    n_inter = cfg.moe_intermediate_size
    groups = {}  # shard key -> {name: tensor}
    n_expert_tensors = 0
    for name, t in state.items():
        layer = name.split(".")[2] if name.startswith("model.layers.") else "rest"
        g = groups.setdefault(layer, {})
        if name.endswith("mlp.experts.gate_up_proj") or name.endswith("mlp.experts.down_proj"):
            base = name.rsplit(".", 1)[0]  # model.layers.N.mlp.experts
            t = t.detach().to("cpu")
            n_exp, hidden = t.shape[0], cfg.hidden_size
            if name.endswith("gate_up_proj"):
                if tuple(t.shape) == (n_exp, hidden, 2 * n_inter):  # a transposed layout: [E, H, 2I]
                    t = t.transpose(1, 2)
                if tuple(t.shape) != (n_exp, 2 * n_inter, hidden):
                    raise SystemExit(f"{name}: expected [{n_exp}, {2 * n_inter}, {hidden}], found {list(t.shape)}")
                for e in range(n_exp):
                    g[f"{base}.{e}.gate_proj.weight"] = t[e, :n_inter].contiguous()
                    g[f"{base}.{e}.up_proj.weight"] = t[e, n_inter:].contiguous()
                n_expert_tensors += 2 * n_exp
            else:
                if tuple(t.shape) == (n_exp, n_inter, hidden):  # transposed: [E, I, H]
                    t = t.transpose(1, 2)
                if tuple(t.shape) != (n_exp, hidden, n_inter):
                    raise SystemExit(f"{name}: expected [{n_exp}, {hidden}, {n_inter}], found {list(t.shape)}")
                for e in range(n_exp):
                    g[f"{base}.{e}.down_proj.weight"] = t[e].contiguous()
                n_expert_tensors += n_exp
        else:
            if ".mlp.experts." in name and name.endswith(("gate_proj.weight", "up_proj.weight", "down_proj.weight")):
                n_expert_tensors += 1  # this version already keeps one module per expert
            g[name] = t.detach().to("cpu").contiguous()
    keys = sorted((k for k in groups if k != "rest"), key=int) + ["rest"]
    weight_map, total = {}, 0
    for i, k in enumerate(keys):
        fname = f"model-{i + 1:05d}-of-{len(keys):05d}.safetensors"
        save_file(groups[k], os.path.join(out_dir, fname), metadata={"format": "pt"})
        for n, t in groups[k].items():
            weight_map[n] = fname
            total += t.numel() * t.element_size()
        groups[k] = None  # free the host copy before the next shard
    json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))},
              open(os.path.join(out_dir, "model.safetensors.index.json"), "w"), indent=2)
    model.config.save_pretrained(out_dir)
    try:
        model.generation_config.save_pretrained(out_dir)
    except Exception as e:  # not needed by any reader here; say so and go on
        print(f"note: generation_config not written: {e}")
    # The hub file's names beside this version's, so that readers of either find them.
    p = os.path.join(out_dir, "config.json")
    c = json.load(open(p))
    c.setdefault("architectures", ["Qwen3MoeForCausalLM"])  # save_pretrained of a bare config leaves it out
    c.setdefault("num_experts", 128)
    c.setdefault("rope_theta", 1000000.0)
    json.dump(c, open(p, "w"), indent=2)
    # Read back: every expert tensor under its own name, no fused tensor left.
    names = []
    for fname in sorted(set(weight_map.values())):
        with safe_open(os.path.join(out_dir, fname), "pt") as f:
            names += list(f.keys())
    fused = [n for n in names if "gate_up_proj" in n or n.endswith("experts.down_proj")]
    want = cfg.num_hidden_layers * 128 * 3
    per_expert = sum(1 for n in names if ".mlp.experts." in n)
    if fused or per_expert != want:
        raise SystemExit(f"saved checkpoint: {per_expert} per-expert tensors (want {want}), fused tensors {fused[:3]}")
    return per_expert


def sync_time(fn, reps):
    out = []
    for _ in range(reps):
        torch.cuda.synchronize(); t0 = time.perf_counter(); fn(); torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    out.sort()
    return out[len(out) // 2]


def measure_speed(model, vocab_size, a, res, g):
    """transformers' decode (eager generate, batch 1, one prompt token, a.gen new tokens) and
    prefill (one forward pass over a.prefill tokens) speed, into res."""
    torch.cuda.reset_peak_memory_stats()
    prompt = torch.randint(0, vocab_size, (1, 1), generator=g).cuda()
    model.generate(prompt, max_new_tokens=4, min_new_tokens=4, do_sample=False, pad_token_id=0)
    dt = sync_time(lambda: model.generate(prompt, max_new_tokens=a.gen, min_new_tokens=a.gen,
                                          do_sample=False, pad_token_id=0), 2)
    res["hf_decode_tok_s"] = a.gen / dt
    long_ids = torch.randint(0, vocab_size, (1, a.prefill), generator=g).cuda()
    model(long_ids, logits_to_keep=1)
    dt = sync_time(lambda: model(long_ids, logits_to_keep=1), 3)
    res["hf_prefill_tok_s"] = a.prefill / dt
    res["hf_prefill_len"] = a.prefill
    res["hf_speed_max_vram_allocated"] = torch.cuda.max_memory_allocated()  # weights + the speed runs' buffers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("out_dir")
    ap.add_argument("result_json")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--prefill", type=int, default=2048)
    ap.add_argument("--no-speed", action="store_true", help="make the checkpoint and reference only")
    ap.add_argument("--no-f32", action="store_true", help="skip the f32 reference logits (logits_bf16 only)")
    ap.add_argument("--ref-len", type=int, default=64, help="tokens of the reference prompt")
    ap.add_argument("--speed-only", action="store_true", help="load OUT_DIR's checkpoint, measure speed only")
    a = ap.parse_args()
    torch.manual_seed(0)
    if a.speed_only:
        model = AutoModelForCausalLM.from_pretrained(a.out_dir, dtype=torch.bfloat16, attn_implementation="sdpa").cuda()
        model.eval()
        res = {"shape": a.shape, "from": a.out_dir, "params": sum(p.numel() for p in model.parameters()),
               "torch": torch.__version__, "transformers": __import__("transformers").__version__,
               "gpu": torch.cuda.get_device_name(0)}
        with torch.no_grad():
            measure_speed(model, model.config.vocab_size, a, res, torch.Generator(device="cpu").manual_seed(1))
        json.dump(res, open(a.result_json, "w"), indent=2)
        print(json.dumps(res))
        return 0
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
            # Gemma 4 scales attention scores by 1, not 1/sqrt(head_dim): trained q/k norm weights
            # keep q.k of order 1. At transformers' init (weights 1) q.k has a standard deviation of
            # sqrt(head_dim) (16 and 22.6), every softmax is nearly one-hot and the model chaotic:
            # its own bf16 run ended at min cosine 0.35 from its f32 run on a 600-token prompt
            # (2026-12-02, H200). Weights of head_dim^-1/4 give scores of standard deviation ~1.
            if a.shape.startswith("gemma4") and n.endswith(("self_attn.q_norm.weight", "self_attn.k_norm.weight")):
                p.mul_(p.numel() ** -0.25)
    torch.cuda.synchronize()
    init_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    if a.shape in MOE_SHAPES:
        n_expert_tensors = save_per_expert(model, cfg, a.out_dir)
    else:
        model.save_pretrained(a.out_dir, safe_serialization=True, max_shard_size="5GB")
    save_s = time.perf_counter() - t0
    res = {"shape": a.shape, "init_s": init_s, "save_s": save_s,
           "params": sum(p.numel() for p in model.parameters()),
           "torch": torch.__version__, "transformers": __import__("transformers").__version__,
           "gpu": torch.cuda.get_device_name(0)}
    if a.shape in MOE_SHAPES:
        res["per_expert_tensors"] = n_expert_tensors
        res["config"] = json.load(open(os.path.join(a.out_dir, "config.json")))
        print(f"saved {n_expert_tensors} per-expert tensors in {save_s:.1f} s", flush=True)

    with torch.no_grad():
        # Reference logits for parity (a --ref-len-token prompt, bf16 model, logits as f32) + greedy ids.
        g = torch.Generator(device="cpu").manual_seed(1)
        ids = torch.randint(0, cfg.vocab_size, (1, a.ref_len), generator=g).cuda()
        logits = model(ids).logits[0].float()
        greedy = model.generate(ids[:, :8], max_new_tokens=24, do_sample=False, min_new_tokens=24,
                                pad_token_id=0)[0, 8:]
        # The same weights upcast to f32 (exact), all arithmetic in f32: what ThinTensor's f32
        # accumulation computes, so the bf16 archive is held to this one too.
        ref = {"input_ids": ids[0].cpu().to(torch.int64), "logits_bf16": logits.cpu().contiguous(),
               "greedy_ids": greedy.cpu().to(torch.int64)}
        if not a.no_f32:
            model.float()
            ref["logits_f32"] = model(ids).logits[0].float().cpu().contiguous()
            model.to(torch.bfloat16)
        save_file(ref, os.path.join(a.out_dir, "reference.safetensors"))

        if a.no_speed:
            json.dump(res, open(a.result_json, "w"), indent=2)
            return 0
        measure_speed(model, cfg.vocab_size, a, res, g)
    json.dump(res, open(a.result_json, "w"), indent=2)
    print(json.dumps(res))


if __name__ == "__main__":
    sys.exit(main())
