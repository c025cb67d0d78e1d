#!/usr/bin/env bash
# Stop 60, second call: call.sh's sweep once per count was noisy (±12 tok/s at 7 CPU layers). This
# one takes the patched build alone (64 MiB slack, 19 resident at context 545) through --cpu-layers
# 6..12 and the planner's own choice, three rounds interleaved, with the host's rates (doctor
# --host-only) before and after, to see whether 9-10 CPU layers beat the planner's pick on a
# second host.
export OUT=${OUT:-$PWD/w-out}
source bench/lib/ab.sh
ab_checkpoints "llama3-8b:--quant int4"
ab_wait llama3-8b 300 || { ab_pack; exit 1; }
timeout 60 "$(ab_bin new)" doctor --host-only --no-record --json >"$OUT/doctor-before.json" 2>/dev/null
export AB_TG_ARGS="--prompt-lengths 512 --gen-tokens 32 --reps 2" AB_CAP_S=500
for r in 1 2 3; do
  for c in 6 7 8 9 10 11 12; do ab_tg "c$c-r$r" new "$ab_work/llama3-8b.thin" --profile max-max-perf --vram-budget 4GiB --cpu-layers $c; done
  ab_tg "auto-r$r" new "$ab_work/llama3-8b.thin" --profile max-max-perf --vram-budget 4GiB
done
timeout 60 "$(ab_bin new)" doctor --host-only --no-record --json >"$OUT/doctor-after.json" 2>/dev/null
ab_pack
