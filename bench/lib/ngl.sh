# llama.cpp's split by layers at a given peak VRAM: the search for the largest -ngl whose peak
# (nvidia-smi) stays within a limit, shared by bench/offload_bench.sh and bench/quant_bench.sh.
# Pure arithmetic on MiB; the callers run llama-bench and measure each try's peak.

# ngl_limits BUDGET_MIB TT_PEAK_MIB: "TARGET LIMIT": the peak llama.cpp is held to is the larger of
# the budget and ThinTensor's own measured peak there; 2% over it is allowed (nvidia-smi's samples
# and llama.cpp's compute buffers vary by that much between runs).
ngl_limits() {
  local target=$(( $2 > $1 ? $2 : $1 ))
  echo "$target $(( target * 102 / 100 ))"
}

# ngl_first_guess TARGET_MIB LAYER_MIB NMAX: N layers of LAYER_MIB over ~1.2 GiB of the rest (CUDA
# context, the output head's share, KV, compute buffers; offload_bench's 8 GiB gave -ngl 16 at
# 8.1 GiB), within 0..NMAX.
ngl_first_guess() {
  local g=$(( ($1 - 1229) / $2 ))
  echo $(( g < 0 ? 0 : g > $3 ? $3 : g ))
}

# ngl_next N PEAK_MIB LIMIT_MIB LAYER_MIB NMAX FIT OVER: the next -ngl after -ngl N peaked at PEAK:
# under the limit, as many more layers as the room left holds (below OVER, the smallest N seen over
# it); over, one layer fewer per LAYER_MIB over (above FIT, the largest N seen within it). Prints
# nothing when the search is done. FIT and OVER may be empty.
ngl_next() {
  local n=$1 p=$2 limit=$3 part=$4 nmax=$5 fit=$6 over=$7 next
  if [ "$p" -le "$limit" ]; then
    next=$(( n + (limit - p) / part ))
    [ $next -gt "$nmax" ] && next=$nmax
    [ -n "$over" ] && [ $next -ge "$over" ] && next=$(( over - 1 ))
    [ $next -gt "$n" ] && echo $next
  else
    next=$(( n - (p - limit + part - 1) / part ))
    if [ -n "$fit" ] && [ $next -le "$fit" ]; then return 0; fi
    [ $next -ge 0 ] && echo $next
  fi
  return 0
}
