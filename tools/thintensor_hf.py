#!/usr/bin/env python3
"""ThinTensor's bridge to Hugging Face transformers (docs/VALIDATION.md, "The helper protocol").

`thintensor validate --hf-model` and `thintensor run`'s transformers fallback run this file as a
subprocess:  python3 thintensor_hf.py MODE REQUEST.json
  MODE reference: runs the checkpoint on the request's token ids and writes, for prompt i,
                  p{i}.input_ids int64 [T], p{i}.logits_f32 or p{i}.logits_bf16 float32 [L, V]
                  (the logits of the last L positions; the key names the dtype transformers ran
                  in, as in ../shared), p{i}.greedy_ids int64 [G] (greedy continuation of the
                  whole prompt, raw argmax, KV cache) and p{i}.greedy_margins float32 [G] (top-1
                  minus top-2 logit at each greedy step), to the request's "output" path.
  MODE generate:  generates from a prompt with transformers, text streamed to stdout.
  MODE check:     prints the torch / transformers versions as JSON.
Exit status: 0 done, 2 bad request, 3 torch is not installed, 4 transformers is not installed,
5 transformers cannot load the model, 6 failed while running it. The C++ side turns these into
its error messages, so this file imports nothing beyond the standard library (and numpy) before
it has said which module is missing.

The engine that computes is a class with reference() and generate(); tests/e2e/mock_hf_helper.py
swaps in a NumPy engine so that CI (no torch) exercises this protocol code.
"""
import json
import os
import struct
import sys

PROTOCOL = 1
EXIT_USAGE, EXIT_NO_TORCH, EXIT_NO_TRANSFORMERS, EXIT_LOAD, EXIT_RUN = 2, 3, 4, 5, 6


class HelperError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


QUIET = False  # the request's "quiet" (thintensor -q): progress notes are left out, errors are not


def log(msg, error=False):
    if error or not QUIET:
        print(f"thintensor_hf: {msg}", file=sys.stderr, flush=True)


# ---- safetensors, written by hand: the mock engine has no torch and no safetensors package ----

def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> numpy array (float32 or int64). Written to `path` (the C++ side gives a
    temporary name and renames it once the file is complete)."""
    import numpy as np
    names = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for k, a in tensors.items():
        a = np.ascontiguousarray(a)
        raw = a.tobytes()
        header[k] = {"dtype": names[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def parse_ids(text):
    """A prompt given as token ids, as `thintensor run` reads one for a model without tokenizer."""
    ids = []
    for tok in text.replace(",", " ").split():
        try:
            ids.append(int(tok))
        except ValueError:
            raise HelperError(EXIT_USAGE, f"the model has no tokenizer, so the prompt must be token ids; '{tok}' is not one")
    return ids


# ---- the transformers engine ----

class TransformersEngine:
    def __init__(self):
        try:
            import torch  # noqa: F401
        except ImportError as e:
            raise HelperError(EXIT_NO_TORCH, f"torch is not installed for {sys.executable} ({e})")
        try:
            import transformers  # noqa: F401
        except ImportError as e:
            raise HelperError(EXIT_NO_TRANSFORMERS, f"transformers is not installed for {sys.executable} ({e})")
        import numpy  # noqa: F401  (a dependency of transformers)

    def versions(self):
        import torch, transformers
        v = {"torch": torch.__version__, "transformers": transformers.__version__,
             "cuda_available": bool(torch.cuda.is_available())}
        if torch.cuda.is_available():
            v["gpu"] = torch.cuda.get_device_name(0)
        return v

    def _load(self, req):
        import torch
        from transformers import AutoModelForCausalLM
        # Exact f32 arithmetic: TF32 would make the float32 reference a 10-bit-mantissa one.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[req["dtype"]]
        device = req.get("device", "cpu")
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise HelperError(EXIT_LOAD, f"--hf-device {device}: torch {torch.__version__} sees no CUDA device")
        try:
            # Eager attention in float32 (as ../shared's f32 references were made), sdpa in bfloat16.
            attn = "eager" if dtype == torch.float32 else "sdpa"
            model = AutoModelForCausalLM.from_pretrained(req["model_dir"], dtype=dtype, attn_implementation=attn).to(device)
        except Exception as e:
            raise HelperError(EXIT_LOAD, f"{req['model_dir']}: transformers cannot load it: {type(e).__name__}: {e}")
        model.eval()
        return model, device

    def reference(self, req):
        import torch
        model, device = self._load(req)
        out = []
        with torch.no_grad():
            for p in req["prompts"]:
                ids = torch.tensor([p["input_ids"]], dtype=torch.long, device=device)
                keep = int(p["logits_positions"])
                r = model(ids, use_cache=True, logits_to_keep=keep)
                logits = r.logits[0].float()
                past = r.past_key_values
                greedy, margins = [], []
                last = logits[-1]
                for _ in range(int(p["greedy_tokens"])):
                    top2 = torch.topk(last, 2)
                    nxt = int(top2.indices[0])
                    greedy.append(nxt)
                    margins.append(float(top2.values[0] - top2.values[1]))
                    r = model(torch.tensor([[nxt]], device=device), past_key_values=past, use_cache=True)
                    past = r.past_key_values
                    last = r.logits[0, -1].float()
                out.append({"logits": logits.cpu().numpy(), "greedy_ids": greedy, "greedy_margins": margins})
                del r, past
            if req["dtype"] == "bfloat16" and req.get("f32_baseline", False):
                # The same bf16 weights computed in float32: the yardstick for how far transformers'
                # own bf16 run strays (docs/VALIDATION.md, "bf16 references").
                try:
                    model = model.float()
                    for o, p in zip(out, req["prompts"]):
                        ids = torch.tensor([p["input_ids"]], dtype=torch.long, device=device)
                        r = model(ids, use_cache=False, logits_to_keep=int(p["logits_positions"]))
                        o["baseline_f32"] = r.logits[0].float().cpu().numpy()
                        del r
                except torch.OutOfMemoryError:
                    log("no float32 baseline: the model does not fit in float32 on this device")
                    for o in out:
                        o.pop("baseline_f32", None)
        return out

    def generate(self, req):
        import torch
        from transformers import AutoTokenizer, TextStreamer
        model, device = self._load(req)
        d = req["model_dir"]
        has_tok = any(os.path.exists(os.path.join(d, f)) for f in ("tokenizer.json", "tokenizer.model"))
        tok = AutoTokenizer.from_pretrained(d) if has_tok else None
        if req.get("chat"):
            if tok is None or not getattr(tok, "chat_template", None):
                raise HelperError(EXIT_USAGE, f"{d}: --chat needs a tokenizer with a chat template")
            msgs = ([{"role": "system", "content": req["system"]}] if req.get("system") else []) + \
                   [{"role": "user", "content": req["prompt"]}]
            ids = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)["input_ids"]
        elif tok is not None:
            ids = tok(req["prompt"], return_tensors="pt", add_special_tokens=not req.get("no_bos"))["input_ids"]
            if ids.shape[1] == 0 and model.config.bos_token_id is not None:
                ids = torch.tensor([[model.config.bos_token_id]])
        else:
            pid = parse_ids(req["prompt"])
            if not pid and model.config.bos_token_id is not None and not req.get("no_bos"):
                pid = [model.config.bos_token_id]
            if not pid:
                raise HelperError(EXIT_USAGE, "empty prompt and the model has no BOS token")
            ids = torch.tensor([pid])
        ids = ids.to(device)
        s = req.get("sampling", {})
        kw = {"max_new_tokens": int(req["max_tokens"]), "pad_token_id": model.config.eos_token_id or 0}
        temp = s.get("temperature")
        if temp is not None and temp == 0:
            kw["do_sample"] = False
        elif temp is not None:
            kw.update(do_sample=True, temperature=temp)
        for k_req, k_hf in (("top_k", "top_k"), ("top_p", "top_p"), ("min_p", "min_p"), ("repeat_penalty", "repetition_penalty")):
            if s.get(k_req) is not None:
                kw[k_hf] = s[k_req]
        if s.get("seed") is not None:
            torch.manual_seed(int(s["seed"]))
        if req.get("stop") and tok is not None:
            kw["stop_strings"], kw["tokenizer"] = req["stop"], tok
        streamer = TextStreamer(tok, skip_prompt=True) if tok is not None else None
        with torch.no_grad():
            out = model.generate(ids, streamer=streamer, **kw)
        new = out[0, ids.shape[1]:].tolist()
        if tok is None:
            print(" ".join(str(i) for i in new), flush=True)
        log(f"generated {len(new)} tokens with transformers")


# ---- the protocol ----

def check_request(req, mode):
    if not isinstance(req, dict) or req.get("protocol") != PROTOCOL:
        raise HelperError(EXIT_USAGE, f"request protocol {req.get('protocol') if isinstance(req, dict) else '?'} "
                                      f"is not {PROTOCOL}: the helper and the thintensor binary come from different versions")
    if req.get("dtype", "float32") not in ("float32", "bfloat16"):
        raise HelperError(EXIT_USAGE, f"dtype '{req.get('dtype')}' is not float32 or bfloat16")
    if not os.path.isdir(req.get("model_dir", "")):
        raise HelperError(EXIT_USAGE, f"model_dir '{req.get('model_dir')}' is not a directory")
    if mode == "reference":
        if not req.get("output") or not isinstance(req.get("prompts"), list) or not req["prompts"]:
            raise HelperError(EXIT_USAGE, "a reference request needs 'output' and a non-empty 'prompts' list")
        for p in req["prompts"]:
            n = len(p.get("input_ids", []))
            if n == 0 or not 1 <= int(p.get("logits_positions", 0)) <= n or int(p.get("greedy_tokens", -1)) < 0:
                raise HelperError(EXIT_USAGE, f"prompt '{p.get('name')}': needs input_ids, 1 <= logits_positions <= {n}, greedy_tokens >= 0")


def run_reference(engine, req):
    import numpy as np
    results = engine.reference(req)
    key = "logits_bf16" if req["dtype"] == "bfloat16" else "logits_f32"
    tensors = {}
    for i, (p, r) in enumerate(zip(req["prompts"], results)):
        logits = np.asarray(r["logits"], dtype=np.float32)
        if logits.ndim != 2 or logits.shape[0] != int(p["logits_positions"]):
            raise HelperError(EXIT_RUN, f"prompt '{p['name']}': the engine returned logits of shape {logits.shape}")
        tensors[f"p{i}.input_ids"] = np.asarray(p["input_ids"], dtype=np.int64)
        tensors[f"p{i}.{key}"] = logits
        tensors[f"p{i}.greedy_ids"] = np.asarray(r["greedy_ids"], dtype=np.int64)
        tensors[f"p{i}.greedy_margins"] = np.asarray(r["greedy_margins"], dtype=np.float32)
        if "baseline_f32" in r and key == "logits_bf16":
            tensors[f"p{i}.logits_f32"] = np.asarray(r["baseline_f32"], dtype=np.float32)
    meta = {"prompts": json.dumps([p["name"] for p in req["prompts"]]), "dtype": req["dtype"],
            "device": req.get("device", "cpu"), "engine": json.dumps(engine.versions())}
    write_safetensors(req["output"], tensors, meta)
    log(f"wrote {len(results)} prompts to {req['output']}")


def main(argv, engine_factory=TransformersEngine):
    if len(argv) < 1 or argv[0] not in ("reference", "generate", "check") or (argv[0] != "check" and len(argv) != 2):
        log(error=True, msg="usage: thintensor_hf.py reference|generate REQUEST.json | check")
        return EXIT_USAGE
    mode = argv[0]
    try:
        engine = engine_factory()
        if mode == "check":
            print(json.dumps(engine.versions()), flush=True)
            return 0
        try:
            with open(argv[1]) as f:
                req = json.load(f)
        except (OSError, ValueError) as e:
            raise HelperError(EXIT_USAGE, f"{argv[1]}: cannot read the request: {e}")
        global QUIET
        QUIET = bool(req.get("quiet")) if isinstance(req, dict) else False
        check_request(req, mode)
        if mode == "reference":
            run_reference(engine, req)
        else:
            engine.generate(req)
        return 0
    except HelperError as e:
        log(str(e), error=True)
        return e.code
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a failure inside torch/transformers: name it, exit distinctly
        import traceback
        traceback.print_exc(file=sys.stderr)
        log(f"failed: {type(e).__name__}: {e}", error=True)
        return EXIT_RUN


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
