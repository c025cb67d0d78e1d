# Sourced by tests/gpu/quant.sh and tests/gpu/kv_cache_int8.sh: two validate reports (--report
# JSON) of one archive, the CPU's and CUDA's, agree as two sums in different orders do: min cosine
# within 1e-4, mean KL within 2% (or 1e-9).
cmp_reports() {  # cpu.json cuda.json
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
dc, dk = abs(a["min_cosine"] - b["min_cosine"]), abs(a["mean_kl"] - b["mean_kl"])
print(f"cpu min_cos {a['min_cosine']:.6f} kl {a['mean_kl']:.3e} | cuda min_cos {b['min_cosine']:.6f} kl {b['mean_kl']:.3e}")
sys.exit(0 if dc <= 1e-4 and dk <= max(0.02 * a["mean_kl"], 1e-9) else 1)
PY
}
