#!/usr/bin/env bash
# Stop 60 (ran 10:10-10:16 UTC, README.md): decode's CPU/PCIe split tuned from its own token times (runtime/split_tuner.h). One call,
# after tests/gpu/stage.sh of the tuner build, with main's (13a127d) thintensor in .carry/old.tar.xz:
# (1) tests/gpu/run.sh on the tuner build (cpu_layers.sh now also validates every dense fixture with
#     the split tuned during decode, and TinyStories' greedy text with it against the streamed run),
#     while the random Llama-3-8B is made and converted with --quant int4 in the background;
# (2) old (the plan's count) against new (tuned) at --vram-budget 4GiB, max-max-perf, pp512 + tg32,
#     three rounds alternated, with what the tuner tried and kept.
export OUT=${OUT:-$PWD/w-out}
source bench/lib/ab.sh
ab_unpack old
ab_checkpoints "llama3-8b:--quant int4"
OUT=$OUT/full timeout 330 bash tests/gpu/run.sh >"$OUT/full.out" 2>&1; echo "run.sh rc=$? [$(el) s]"; tail -2 "$OUT/full.out"
grep -E '^(ok|FAIL) .*(tuned|tuner)|decode split from token times' "$OUT/full.out" | head -30
grep -E '^FAIL' "$OUT/full.out" | head
ab_wait llama3-8b 420 || { ab_pack; exit 1; }
export AB_TG_ARGS="--prompt-lengths 512 --gen-tokens 32 --reps 3" AB_CAP_S=540
for r in 1 2 3; do for v in old new; do
  ab_tg 4g-r$r $v "$ab_work/llama3-8b.thin" --profile max-max-perf --vram-budget 4GiB
done; done
grep -h "decode split from token times\|warm-up:" "$OUT"/tg-4g-r*-new.err
ab_pack
