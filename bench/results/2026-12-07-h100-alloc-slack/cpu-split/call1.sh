#!/usr/bin/env bash
# Stop 60: the CPU/PCIe split at --vram-budget 4GiB measured by hand. The alloc-slack call showed
# the old build (18 resident, 14 host layers) choosing 7 CPU + 7 streamed and decoding 49 tok/s,
# the new one (19 resident, 13 host layers) 9 CPU + 4 streamed at 72: far more than one layer's 8%.
# Each plan measured the host's read rate itself (old 123-128 GB/s, new 187-198). This call:
# (1) doctor --host-only for both builds, alternated, to see whether that gap is the build or the hour;
# (2) every --cpu-layers count for both builds (pp512 + tg32, the same setting), so each predicted
#     figure stands beside its measurement.
export OUT=${OUT:-$PWD/w-out}
source bench/lib/ab.sh
ab_unpack old
ab_checkpoints "llama3-8b:--quant int4"
ab_wait llama3-8b 300 || { ab_pack; exit 1; }
for r in 1 2; do for v in old new; do
  timeout 60 "$(ab_bin $v)" doctor --host-only --no-record --json >"$OUT/doctor-$v-r$r.json" 2>"$OUT/doctor-$v-r$r.err"
  echo "doctor $v r$r rc=$? [$(el) s]"
done; done
export AB_TG_ARGS="--prompt-lengths 512 --gen-tokens 32 --reps 2" AB_CAP_S=540
for c in 9 7 0 4 6 8 10 11 12 13; do for v in old new; do
  ab_tg "c$c" $v "$ab_work/llama3-8b.thin" --profile max-max-perf --vram-budget 4GiB --cpu-layers $c
done; done
for v in old new; do ab_tg auto $v "$ab_work/llama3-8b.thin" --profile max-max-perf --vram-budget 4GiB; done
ab_pack
