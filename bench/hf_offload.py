#!/usr/bin/env python3
"""transformers + accelerate CPU offload on a checkpoint with a GPU memory budget, the way a user of
accelerate runs a model larger than VRAM: device_map="auto", max_memory={0: BUDGET, "cpu": ...}.
Measures greedy decode tok/s (batch 1, one prompt token, N new tokens) and prints one JSON line.
--prefill N also times one forward pass over N tokens; --max-time S stops the decode after S seconds
(generate's max_time) and reports the tokens it made in that time. The result file is written after
each stage, so a run killed by an outer timeout still leaves what it measured.

usage: hf_offload.py CHECKPOINT BUDGET RESULT_JSON [--gen N] [--prefill N] [--max-time S]
"""
import argparse, json, sys, time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("budget", help='GPU budget for accelerate, e.g. "8GiB"')
    ap.add_argument("result_json")
    ap.add_argument("--gen", type=int, default=8)
    ap.add_argument("--prefill", type=int, default=0, help="also time one forward pass over this many tokens")
    ap.add_argument("--max-time", type=float, default=0, help="stop the timed decode after this many seconds")
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
    json.dump(res, open(a.result_json, "w"), indent=2)
    prompt = torch.tensor([[1]], device="cuda")
    limit = {"max_time": a.max_time} if a.max_time > 0 else {}
    with torch.no_grad():
        model.generate(prompt, max_new_tokens=1, min_new_tokens=1, do_sample=False, pad_token_id=0)  # warm-up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model.generate(prompt, max_new_tokens=a.gen, min_new_tokens=a.gen, do_sample=False, pad_token_id=0, **limit)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        made = out.shape[1] - prompt.shape[1]
        res["decode_tok_s"] = made / dt
        if made != a.gen:
            res["decode_tokens_made"] = made
            res["decode_stopped_by_max_time_s"] = a.max_time
        json.dump(res, open(a.result_json, "w"), indent=2)
        if a.prefill > 0:
            ids = torch.randint(0, model.config.vocab_size, (1, a.prefill), generator=torch.Generator().manual_seed(1)).cuda()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            model(ids, logits_to_keep=1)
            torch.cuda.synchronize()
            res["prefill_len"] = a.prefill
            res["prefill_tok_s"] = a.prefill / (time.perf_counter() - t0)
    res["max_vram_allocated"] = torch.cuda.max_memory_allocated()
    json.dump(res, open(a.result_json, "w"), indent=2)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
