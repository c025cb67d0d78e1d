#!/usr/bin/env bash
# The short form of call.sh for a call of about 4 minutes (what was left of the session's device
# time): the random Llama-3-8B made and converted with --quant int4 in the background while
# Streaming.* (streamed logits byte-identical to resident: one slot at the minimum and halfway,
# two slots halfway) runs on every fixture, f32 and bf16; then --ring-slots 2 against the default
# at --vram-budget 4GiB (pp512 + tg32), alternated while time allows, with nvidia-smi's peaks.
export OUT=${OUT:-$PWD/w-out}
source bench/lib/ab.sh
ab_checkpoints "llama3-8b:--quant int4"
D=${DEADLINE:-300}
res=$OUT; log=$OUT/vram.log; t_start=$ab_t0; deadline=$D
source bench/lib/steps.sh
source bench/lib/vram.sh
source tests/gpu/fixtures.sh
w=/dev/shm/fx; mkdir -p $w
for m in $GPU_FIXTURES; do
  for d in f32 bf16; do .carry/bin/thintensor -q convert .carry/shared/fixtures/hf-tiny/$m -o $w/$m.$d.thin --dtype $d; done
done
.carry/bin/thintensor -q convert .carry/shared/models/tinystories-656k -o $w/ts.thin --dtype f32
TT_STREAM_ARCHIVES="$(ls $w/*.thin | tr '\n' ' ')" timeout $(( D - 120 )) .carry/bin/gpu_tests --gtest_filter='Streaming.*' >"$OUT/streaming.log" 2>&1
echo "Streaming.* rc=$? [$(el) s]"; grep -E "^\[  (PASSED|FAILED)|Failure" "$OUT/streaming.log" | head
grep -E "^identical: .*(ring|halfway|minimum)" "$OUT/streaming.log" | cut -c1-200 | head -12
ab_wait llama3-8b $(( D - 60 )) || { ab_pack; exit 1; }
m=$ab_work/llama3-8b.thin
for r in 1 2; do timeout 20 .carry/bin/thintensor plan "$m" --profile max-max-perf --vram-budget 4GiB --context 545 --ring-slots $r >"$OUT/plan-ring$r.txt" 2>&1; tail -1 "$OUT/plan-ring$r.txt"; done
vram_idle=$(smi_used)
export AB_TG_ARGS="--prompt-lengths 512 --gen-tokens 32 --reps 2" AB_CAP_S=$(( D - 20 ))
for r in 1 2 3; do for v in ring2 ring1; do
  a=; [ $v = ring2 ] && a="--ring-slots 2"
  vram_start "4g-$v-r$r"; ab_tg 4g-r$r-$v new "$m" --profile max-max-perf --vram-budget 4GiB $a; vram_stop
done; done
cat "$OUT/vram.tsv"
ab_pack
