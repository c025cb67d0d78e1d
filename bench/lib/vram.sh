# Peak VRAM of one process as the user sees it (bench/offload_bench.sh, moe_bench.sh,
# quant_bench.sh): nvidia-smi samples memory.used every 200 ms beside it; the peak is the largest
# sample minus the reading just before the process started, appended to $res/vram.tsv (MiB) and
# left in last_peak_mib. The driver frees an exited process's memory a moment later: when the
# caller set vram_idle (the reading with nothing running), vram_start first waits for it (up to
# 15 s), so that the previous run's tail is not this one's peak. Needs say (steps.sh) and $res;
# calls note_concurrency (steps.sh) when the caller tracks background jobs.
smi_used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 | tr -dc 0-9; }
vram_start() {
  vram_name=$1
  local u
  [ -f "$res/vram.tsv" ] || printf 'name\tbaseline_mib\tmax_mib\tpeak_mib\tsamples\n' >"$res/vram.tsv"
  [ -n "${vram_idle:-}" ] && for _ in $(seq 75); do u=$(smi_used); [ -n "$u" ] && [ "$u" -le $(( vram_idle + 64 )) ] && break; sleep 0.2; done
  vram_base=$(smi_used)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 200 >"$res/vram-$1.csv" 2>/dev/null &
  vram_pid=$!
  note_concurrency "$1"
}
vram_stop() {
  kill "$vram_pid" 2>/dev/null; wait "$vram_pid" 2>/dev/null
  vram_pid=
  local mx n
  mx=$(tr -dc '0-9\n' <"$res/vram-$vram_name.csv" | sort -n | tail -1)
  n=$(wc -l <"$res/vram-$vram_name.csv")
  last_peak_mib=
  [ -n "$mx" ] && [ -n "$vram_base" ] || { say "vram $vram_name: no nvidia-smi samples"; return 0; }
  last_peak_mib=$(( mx - vram_base ))
  printf '%s\t%s\t%s\t%s\t%s\n' "$vram_name" "$vram_base" "$mx" "$last_peak_mib" "$n" >>"$res/vram.tsv"
  say "vram $vram_name: peak $last_peak_mib MiB above the $vram_base MiB before it ($n samples)"
}
peak_of() { awk -F'\t' -v n="$1" '$1 == n {p = $4} END {print p}' "$res/vram.tsv" 2>/dev/null; }
