#!/usr/bin/env python3
"""A stand-in for transformers in CI (no torch there): tools/thintensor_hf.py's own protocol code
(request checks, safetensors writing, exit codes) with its engine replaced by a float64 NumPy
forward pass of Llama-architecture checkpoints (tests/e2e/llama_f64_reference.py), for the
fallback test of Mixtral (Llama with a top-2 mixture of experts), and of Qwen3.5's text model
(Qwen3_5ForCausalLM and the image-text Qwen3_5ForConditionalGeneration, whose vision tower and
mtp.* layer it leaves unread: tests/e2e/qwen3_5_f64_reference.py). Point $THINTENSOR_HF_HELPER
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
import qwen3_5_f64_reference as qwen3_5  # noqa: E402
from llama_f64_reference import forward as llama_forward, load  # noqa: E402

LLAMA_ARCHS = ("LlamaForCausalLM", "MixtralForCausalLM", "TestOnlyMixtralForCausalLM")


def llama_forward_tail(cfg, W, ids, n_logits=None):
    logits = llama_forward(cfg, W, ids)
    return logits if n_logits is None else logits[-int(n_logits):]


class NumpyEngine:
    def versions(self):
        return {"engine": "mock_hf_helper (float64 NumPy)", "numpy": np.__version__}

    def _model(self, req):
        if log := os.environ.get("MOCK_HF_LOG"):
            with open(log, "a") as f:
                f.write(f"{sys.argv[1]} {req['model_dir']}\n")
        cfg = json.load(open(os.path.join(req["model_dir"], "config.json")))
        arch = cfg["architectures"][0]
        # TestOnlyMixtralForCausalLM: validate_hf.sh's stand-in for an architecture ThinTensor
        # lacks (the Mixtral fixture renamed); it is computed as Mixtral.
        if arch in qwen3_5.ARCHITECTURES:
            forward = qwen3_5.forward
        elif arch in LLAMA_ARCHS:
            forward = llama_forward_tail
        else:
            raise hf.HelperError(hf.EXIT_LOAD, f"{req['model_dir']}: the mock helper runs Llama, Mixtral and Qwen3.5 only, not {arch}")
        return cfg, load(os.path.join(req["model_dir"], "model.safetensors")), forward

    def reference(self, req):
        cfg, W, forward = self._model(req)
        out = []
        for p in req["prompts"]:
            ids = list(p["input_ids"])
            kept = forward(cfg, W, np.array(ids), int(p["logits_positions"]))
            greedy, margins, last = [], [], kept[-1]
            for i in range(int(p["greedy_tokens"])):
                order = np.argsort(-last)
                greedy.append(int(order[0]))
                margins.append(float(last[order[0]] - last[order[1]]))
                ids.append(int(order[0]))
                if i + 1 < int(p["greedy_tokens"]):
                    last = forward(cfg, W, np.array(ids), 1)[-1]
            kept = kept.astype(np.float32)
            if os.environ.get("MOCK_HF_NAN") and not out:  # a NaN at position 1, token 3 of the first prompt
                kept[1 - (len(p["input_ids"]) - len(kept)), 3] = np.nan
            out.append({"logits": kept, "greedy_ids": greedy, "greedy_margins": margins})
        return out

    def generate(self, req):
        cfg, W, forward = self._model(req)
        s = req.get("sampling", {})
        if s.get("temperature") != 0:
            raise hf.HelperError(hf.EXIT_USAGE, "the mock helper generates greedily only (--temperature 0)")
        ids = hf.parse_ids(req["prompt"])
        new = []
        for _ in range(int(req["max_tokens"])):
            nxt = int(np.argmax(forward(cfg, W, np.array(ids + new), 1)[-1]))
            new.append(nxt)
        print(" ".join(str(i) for i in new), flush=True)


if __name__ == "__main__":
    sys.exit(hf.main(sys.argv[1:], engine_factory=NumpyEngine))
