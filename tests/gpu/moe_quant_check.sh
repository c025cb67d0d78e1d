#!/usr/bin/env bash
# The MoE-quantized build (branch wip-quant-moe) on the GPU machine, in one short call: its kernel
# cases, the MoE fixtures under both quantized profiles on CUDA against the CPU (quant.sh's
# comparison), the expert cache, a stored --quant archive, and the dense path on the same binary.
set -u
C=.carry
[ -x $C/bin/thintensor ] || xz -dc $C/payload.tar.xz | tar -C $C -xf -
carry=$C; source tests/gpu/libs.sh
TT=$C/bin/thintensor; S=$C/shared; w=$(mktemp -d)
date -u
$C/bin/gpu_tests --gtest_brief=1 --gtest_filter='*gemv_int*:*gemv_gated_int*:*dequantize*:*moe_ffn*' >$OUT/kt.log 2>&1; echo "kernel cases rc=$?"; tail -2 $OUT/kt.log
cmp_reports() { python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
dc, dk = abs(a["min_cosine"] - b["min_cosine"]), abs(a["mean_kl"] - b["mean_kl"])
ok = dc <= 1e-4 and dk <= max(0.02 * a["mean_kl"], 1e-9)
print(f"{'ok  ' if ok else 'FAIL'} cpu min_cos {a['min_cosine']:.6f} kl {a['mean_kl']:.3e} | cuda min_cos {b['min_cosine']:.6f} kl {b['mean_kl']:.3e}")
PY
}
for m in qwen3_moe mixtral qwen3_5_moe_text llama; do
  src=$S/fixtures/hf-tiny/$m; $TT -q convert $src -o $w/$m.thin --dtype f32 2>/dev/null
  for p in max-performance max-max-perf; do
    $TT -q validate $w/$m.thin --reference $src/reference.safetensors --device cpu --profile $p --report $w/c.json >/dev/null 2>&1
    $TT -q validate $w/$m.thin --reference $src/reference.safetensors --device cuda --profile $p --report $w/g.json >$w/g.log 2>&1; rc=$?
    echo "$m $p cuda validate rc=$rc $(grep -h '^PASS\|^FAIL' $w/g.log | cut -c1-80) | $(cmp_reports $w/c.json $w/g.json)"
    [ $rc = 0 ] || tail -5 $w/g.log
    if [ $m = qwen3_moe ]; then
      $TT -q validate $w/$m.thin --reference $src/reference.safetensors --device cuda --profile $p --expert-slots 4 --report $w/s.json >$w/s.log 2>&1
      echo "$m $p --expert-slots 4 rc=$? $(cmp_reports $w/g.json $w/s.json)"
    fi
  done
done
$TT -q convert $S/fixtures/hf-tiny/qwen3_moe -o $w/qm4.thin --dtype bf16 --quant int4 2>/dev/null
$TT -q validate $w/qm4.thin --reference $S/fixtures/hf-tiny/qwen3_moe/reference.safetensors --device cpu --report $w/c.json >/dev/null 2>&1
$TT -q validate $w/qm4.thin --reference $S/fixtures/hf-tiny/qwen3_moe/reference.safetensors --device cuda --report $w/g.json >$w/g.log 2>&1
echo "qwen3_moe stored int4 (bf16) cuda rc=$? $(cmp_reports $w/c.json $w/g.json)"
$TT -q convert $S/models/tinystories-656k -o $w/ts.thin --dtype f32 2>/dev/null
for p in max-performance max-max-perf; do
  $TT -q run $w/ts.thin --temperature 0 --max-tokens 120 --device cpu --profile $p >$w/a.txt 2>/dev/null
  $TT -q run $w/ts.thin --temperature 0 --max-tokens 120 --device cuda --profile $p >$w/b.txt 2>/dev/null
  cmp -s $w/a.txt $w/b.txt && [ -s $w/a.txt ] && echo "ok   tinystories $p greedy text cuda == cpu" || echo "FAIL tinystories $p greedy text"
done
date -u
