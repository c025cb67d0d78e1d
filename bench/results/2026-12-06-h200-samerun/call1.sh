#!/usr/bin/env bash
# Stop 57's first device call (after tests/gpu/stage.sh of main, with .carry/x2.tar.xz,
# .carry/tokenizers/llama3 and .carry/anchors): on an H200, bench/h200_session.sh CALL=1 and, once
# its 0.6B profile and tg128 are done (the rest of that call waits for quant_bench's setup), the
# INT4 x2 patch's GPU check without its A/B; on any other GPU, the x2 check with its 8B A/B.
cd "$(dirname "$0")/../../.." || exit 2
export OUT=${OUT:-$PWD/c1-out}; mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "gpu: $gpu"
source tests/gpu/libs.sh
x2=bench/pending/2026-12-06-int4-x2/call.sh  # (as it ran; now x2-call.sh beside this file)
if [[ $gpu == *H200* ]]; then
  (OUT=$OUT/s1 CALL=1 bash bench/h200_session.sh >"$OUT/s1.out" 2>&1) &
  for _ in $(seq 60); do grep -q 'qwen3-0.6b tg128' "$OUT/s1/session.log" 2>/dev/null && break; sleep 5; done
  OUT=$OUT/x2 X2_AB=0 timeout 300 bash $x2 >"$OUT/x2.out" 2>&1; echo "x2 check rc=$?"
  wait
  cat "$OUT/s1.out" | tail -30
else
  OUT=$OUT/x2 X2_AB=1 timeout 560 bash $x2 >"$OUT/x2.out" 2>&1; echo "x2 check rc=$?"
fi
grep -E 'kernel cases|PASSED|FAILED|quant.sh:|FAIL |8B INT4' "$OUT/x2.out" | head -40
# A call brings back at most 8 files: everything in one tarball.
(cd "$OUT" && tar czf /tmp/c1.tgz . && find . -mindepth 1 -delete && mv /tmp/c1.tgz .)
