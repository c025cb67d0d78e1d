#!/usr/bin/env bash
# Builds every libFuzzer target with clang + ASan/UBSan and runs each for FUZZ_SECONDS (default
# 20) from its seed corpus. Usage: tests/fuzz/run.sh [build-dir]. Exits non-zero on any crash.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build-fuzz}"
seconds="${FUZZ_SECONDS:-20}"
# UBSan only prints by default; a report must fail the run like an ASan one.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTHINTENSOR_FUZZ=ON -DTHINTENSOR_TESTS=OFF -DTHINTENSOR_CUDA=OFF >/dev/null
targets=$(cd "$root/tests/fuzz" && ls fuzz_*.cpp | sed 's/\.cpp$//')
cmake --build "$build" --target $targets
for t in $targets; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  seeds="$root/tests/fuzz/seeds/$t"
  [ -d "$seeds" ] && cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
  [ -x "$root/tests/fuzz/seed_$t.sh" ] && "$root/tests/fuzz/seed_$t.sh" "$corpus"
  echo "== $t for ${seconds}s ($(ls "$corpus" | wc -l) inputs in the corpus)"
  # The libFuzzer log goes to a file; its last lines are shown on a crash, its summary otherwise.
  log="$build/$t.log"
  if ! "$build/tests/fuzz/$t" -max_total_time="$seconds" -rss_limit_mb=2048 "$corpus" >"$log" 2>&1; then
    tail -n 80 "$log"
    echo "$t: FAILED (log above; the input that failed is named in it)"
    exit 1
  fi
  grep -E "^(#[0-9]+ +DONE|Done [0-9]+ runs)" "$log" | tail -n 2 || true
done
echo "all fuzz targets ran without a crash"
