#!/usr/bin/env python3
"""transformers + accelerate CPU offload on a checkpoint with a GPU memory budget, the way a user of
accelerate runs a model larger than VRAM: device_map="auto", max_memory={0: BUDGET, "cpu": ...}.
Measures greedy decode tok/s (batch 1, one prompt token, N new tokens) and prints one JSON line.

usage: hf_offload.py CHECKPOINT BUDGET RESULT_JSON [--gen N]
"""
import argparse, json, sys, time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("budget", help='GPU budget for accelerate, e.g. "8GiB"')
    ap.add_argument("result_json")
    ap.add_argument("--gen", type=int, default=8)
    a = ap.parse_args()
    res = {"budget": a.budget, "gen": a.gen}
    try:
        import accelerate  # noqa: F401  (device_map="auto" needs it)
        res["accelerate"] = accelerate.__version__
    except Exception as e:  # report, do not fake a number
        res["error"] = f"accelerate is not importable: {e}"
        json.dump(res, open(a.result_json, "w"), indent=2)
        print(json.dumps(res))
        return 1
    import torch
    from transformers import AutoModelForCausalLM
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(a.checkpoint, torch_dtype=torch.bfloat16, device_map="auto",
                                                 max_memory={0: a.budget, "cpu": "100GiB"})
    model.eval()
    res["load_s"] = time.perf_counter() - t0
    devs = {}
    for name, dev in getattr(model, "hf_device_map", {}).items():
        devs[str(dev)] = devs.get(str(dev), 0) + 1
    res["device_map_counts"] = devs
    prompt = torch.tensor([[1]], device="cuda")
    with torch.no_grad():
        model.generate(prompt, max_new_tokens=1, min_new_tokens=1, do_sample=False, pad_token_id=0)  # warm-up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.generate(prompt, max_new_tokens=a.gen, min_new_tokens=a.gen, do_sample=False, pad_token_id=0)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    res["decode_tok_s"] = a.gen / dt
    res["max_vram_allocated"] = torch.cuda.max_memory_allocated()
    json.dump(res, open(a.result_json, "w"), indent=2)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
