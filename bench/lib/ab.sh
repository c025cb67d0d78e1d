# Shared by the device calls that A/B thintensor builds (bench/pending/*/call.sh). Before 2026-12-08
# every such call repeated these lines (the archived call.sh files in bench/results/ still do, as
# they ran). Source it from the repository root with OUT set, after tests/gpu/stage.sh of the build
# under test (it is "new": .carry/bin). Older builds travel as .carry/NAME.tar.xz (bin/thintensor
# [, bin/gpu_tests]). It provides:
#   el                   seconds since the call began
#   ab_unpack NAME...    unpack .carry/NAME.tar.xz into .carry/NAME
#   ab_bin NAME          that build's thintensor ("new": the staged one)
#   ab_checkpoints SPEC...  in the background, one after another: each SPEC "SHAPE[:CONVERT ARGS]"
#                        (bench/hf_random_model.py's shapes, e.g. "llama3-8b:--quant int4") becomes
#                        $ab_work/SHAPE.thin (bf16 unless the args say otherwise), then a ready mark
#   ab_wait SHAPE SECONDS   wait until SHAPE's archive is ready or el reaches SECONDS; false if not ready
#   ab_tg NAME VERSION ARCHIVE [BENCH ARGS...]  one `bench --device cuda $AB_TG_ARGS ARGS --json`
#                        (AB_TG_ARGS: default --prompt-lengths 16 --gen-tokens 128 --reps 2; bench
#                        refuses a flag given twice, so ARGS add others: --profile, --depths, ...)
#                        into $OUT/tg-NAME-VERSION.json, printed with tg_summary.py; none starts
#                        after AB_CAP_S (default 480) seconds
#   ab_pack              everything in $OUT into one tarball (a call brings back at most 8 files)
# The GPU's line goes to $OUT/gpu.txt.
mkdir -p "$OUT"
ab_t0=$(date +%s)
el() { echo $(( $(date +%s) - ab_t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
ab_work=${AB_WORK:-/dev/shm/ttd}
mkdir -p "$ab_work"

ab_unpack() {
  local v
  for v in "$@"; do mkdir -p ".carry/$v" && xz -dc ".carry/$v.tar.xz" | tar -C ".carry/$v" -xf - || echo "ab_unpack: .carry/$v.tar.xz failed"; done
}
ab_bin() { if [ "$1" = new ]; then echo "$PWD/.carry/bin/thintensor"; else echo "$PWD/.carry/$1/bin/thintensor"; fi; }

ab_checkpoints() {
  (
    local spec shape args
    for spec in "$@"; do
      shape=${spec%%:*}; args=; [ "$spec" != "$shape" ] && args=${spec#*:}
      # (no A/B reads the reference logits: only the bf16 ones, which the script always makes)
      python3 bench/hf_random_model.py "$shape" "$ab_work/$shape.ckpt" "$ab_work/$shape.json" --no-speed --no-f32 >"$ab_work/ckpt-$shape.log" 2>&1
      # (args unquoted on purpose: "--quant int4" is two arguments)
      nice .carry/bin/thintensor -q convert "$ab_work/$shape.ckpt" -o "$ab_work/$shape.thin" --dtype bf16 $args >>"$ab_work/ckpt-$shape.log" 2>&1 &&
        rm -rf "$ab_work/$shape.ckpt" && echo ok >"$ab_work/ready-$shape"
    done
  ) &
}
ab_wait() {
  while [ ! -f "$ab_work/ready-$1" ] && [ "$(el)" -lt "$2" ]; do sleep 2; done
  [ -f "$ab_work/ready-$1" ] || { echo "ab_wait: no $1 archive after $(el) s ($(tail -2 "$ab_work/ckpt-$1.log" 2>/dev/null | tr '\n' ' '))"; return 1; }
}

ab_tg() {
  local n=$1 v=$2 m=$3; shift 3
  [ "$(el)" -le "${AB_CAP_S:-480}" ] || { echo "$n $v: skipped, $(el) s past AB_CAP_S"; return 0; }
  # (AB_TG_ARGS unquoted on purpose: several arguments)
  timeout 90 "$(ab_bin "$v")" bench "$m" --device cuda ${AB_TG_ARGS:---prompt-lengths 16 --gen-tokens 128 --reps 2} "$@" --json \
    >"$OUT/tg-$n-$v.json" 2>"$OUT/tg-$n-$v.err"
  echo "$n $v: $(python3 bench/tg_summary.py "$OUT/tg-$n-$v.json" 2>/dev/null || tail -2 "$OUT/tg-$n-$v.err" | tr '\n' ' ') [$(el) s]"
}

ab_pack() { (cd "$OUT" && tar czf /tmp/ab-pack.tgz . && find . -mindepth 1 -delete && mv /tmp/ab-pack.tgz .); }
