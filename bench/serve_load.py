#!/usr/bin/env python3
"""Streaming load on `thintensor serve` (issue #20's benchmark): N clients at once, each one
streamed /v1/completions request (greedy, max_tokens tokens, a prompt of its own so no two share a
prefix), Python's standard library only (the GPU machine has no Node). Per request: time to first
token (request sent -> first text chunk), the gaps between chunks divided by the tokens they carry
(per-token latency), the tokens (usage.completion_tokens). Aggregate decode tok/s = all tokens /
(last end - first start). Prints one JSON object.

usage: serve_load.py URL --clients N [--max-tokens T] [--prompt-words W] [--api-key KEY]
"""
import argparse, http.client, json, statistics, sys, threading, time
from urllib.parse import urlparse

WORDS = ("the quick brown fox jumps over a lazy dog while seven bright stars rise above quiet "
         "hills and rivers carry old stories toward distant cities under silver clouds").split()


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


def one_request(url, i, args, out):
    u = urlparse(url)
    words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(args.prompt_words)]
    body = json.dumps({"model": "m", "prompt": f"Request {i}: " + " ".join(words), "max_tokens": args.max_tokens,
                       "temperature": 0, "stream": True, "stream_options": {"include_usage": True}})
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = "Bearer " + args.api_key
    rec = {"client": i, "ok": False}
    try:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
        t0 = time.perf_counter()
        conn.request("POST", "/v1/completions", body, headers)
        resp = conn.getresponse()
        rec["status"] = resp.status
        if resp.status != 200:
            rec["error"] = resp.read().decode(errors="replace")[:300]
            out[i] = rec
            return
        chunks = []  # (time, characters of text)
        tokens = None
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            data = line[6:]
            if data == b"[DONE]":
                break
            ev = json.loads(data)
            now = time.perf_counter()
            if ev.get("usage"):
                tokens = ev["usage"].get("completion_tokens")
            for c in ev.get("choices", []):
                if c.get("text"):
                    chunks.append((now, len(c["text"])))
        t_end = time.perf_counter()
        conn.close()
        rec.update(ok=True, t0=t0, t_end=t_end, tokens=tokens, n_chunks=len(chunks))
        if chunks:
            rec["ttft"] = chunks[0][0] - t0
            rec["t_first"] = chunks[0][0]
            rec["t_last"] = chunks[-1][0]
            # per-token latency: each gap between chunks spread over the tokens of the later chunk
            # (chunks carry one token's text each unless the server batched pieces; the token count
            # per chunk is then estimated from the characters)
            total_chars = sum(c for _, c in chunks) or 1
            per_char_tokens = (tokens or len(chunks)) / total_chars
            gaps = []
            for (ta, _), (tb, cb) in zip(chunks, chunks[1:]):
                n = max(1.0, cb * per_char_tokens)
                gaps.extend([(tb - ta) / n] * int(round(n)))
            rec["gaps"] = gaps
    except Exception as e:  # a failed request is reported, never hidden
        rec["error"] = repr(e)
    out[i] = rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--clients", type=int, required=True)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--prompt-words", type=int, default=24)
    ap.add_argument("--api-key", default="")
    args = ap.parse_args()
    out = [None] * args.clients
    threads = [threading.Thread(target=one_request, args=(args.url, i, args, out)) for i in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [r for r in out if r and r.get("ok") and r.get("tokens")]
    res = {"clients": args.clients, "max_tokens": args.max_tokens, "ok": len(ok), "failed": args.clients - len(ok),
           "errors": [r.get("error") for r in out if r and not r.get("ok")][:5]}
    if ok:
        t0 = min(r["t0"] for r in ok)
        t1 = max(r["t_end"] for r in ok)
        tokens = sum(r["tokens"] for r in ok)
        ttft = [r["ttft"] for r in ok if "ttft" in r]
        gaps = [g for r in ok for g in r.get("gaps", [])]
        # decode phase: from the last first-token to the first last-token every stream is decoding
        per_stream = [(r["tokens"] - 1) / (r["t_last"] - r["t_first"]) for r in ok if r["tokens"] > 1 and r["t_last"] > r["t_first"]]
        res.update(tokens=tokens, wall_s=t1 - t0, aggregate_tok_s=tokens / (t1 - t0),
                   decode_tok_s_sum=sum(per_stream), per_stream_decode_tok_s_mean=statistics.mean(per_stream) if per_stream else None,
                   ttft_p50_ms=1e3 * pct(ttft, 50), ttft_p99_ms=1e3 * pct(ttft, 99),
                   token_latency_p50_ms=1e3 * pct(gaps, 50) if gaps else None,
                   token_latency_p99_ms=1e3 * pct(gaps, 99) if gaps else None,
                   chunks_per_token=sum(r["n_chunks"] for r in ok) / tokens)
    print(json.dumps(res))
    return 0 if res["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
