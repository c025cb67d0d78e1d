#!/usr/bin/env bash
# `thintensor plan` (issue #6) on a real archive for a GPU that is not here (--device-memory): all
# resident when it fits; at the minimum working set the last layers stream and the embedding moves
# to host memory, with the bytes over PCIe equal to the streamed blocks' sizes; one byte less is a
# clear error naming the minimum; a budget above the GPU is clamped with a warning; a RAM budget
# too small to register the streamed blocks reads them from disk and says so. The CPU's figures
# come from doctor.json's host part, or are measured on the spot; a quantized profile's CPU layers
# are priced at its rows' rate. The CPU backend warns that --vram-budget does not apply.
set -uo pipefail
source "$TT_SOURCE_DIR/tests/e2e/lib/common.sh"
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['plan']; print($2)" "$1"; }
TT="$THINTENSOR"
"$TT" -q convert "$S/fixtures/hf-tiny/llama" -o "$tmp/ts.thin" --dtype f32  # untied: the embedding can leave VRAM
P=(plan "$tmp/ts.thin" --device-memory 8GiB --context 64)

# The CPU's figures for the planner (layers on the CPU): measured on the spot without a record,
# then read back from the record `doctor` writes (so the runs below do not measure again).
"$TT" "${P[@]}" --threads 1 --json >"$tmp/cpu.json"
check "no record: CPU measured now" [ "$(json "$tmp/cpu.json" "j['bandwidths']['source'].endswith('; CPU measured now')")" = True ]
"$TT" -q doctor --host-only --host-test-mib 16 >/dev/null
"$TT" "${P[@]}" --json >"$tmp/cpu.json"
check "record: CPU from doctor.json" [ "$(json "$tmp/cpu.json" "'; CPU from doctor.json of ' in j['bandwidths']['source'] and j['bandwidths']['source'].startswith('assumed defaults')")" = True ]

"$TT" "${P[@]}" --ram-budget 1GiB --json >"$tmp/all.json"
check "fits: every layer resident" [ "$(json "$tmp/all.json" "j['n_resident_layers'] == j['n_layers'] and not j['stream_order'] and j['pcie_bytes_per_token'] == 0")" = True ]
min=$(json "$tmp/all.json" "j['min_vram']")
check "minimum below the full working set" [ "$(json "$tmp/all.json" "j['min_vram'] < j['vram_used']")" = True ]

"$TT" "${P[@]}" --ram-budget 1GiB --vram-budget "$min" --cpu-layers 0 --json >"$tmp/min.json"
check "at the minimum: layers stream" [ "$(json "$tmp/min.json" "j['n_resident_layers'] < j['n_layers'] and j['ring_slots'] >= 1")" = True ]
check "at the minimum: PCIe bytes = streamed blocks" [ "$(json "$tmp/min.json" "j['pcie_bytes_per_token'] == sum(b['bytes'] for b in j['blocks'] if b['placement'] == 'registered')")" = True ]
check "at the minimum: VRAM used <= budget" [ "$(json "$tmp/min.json" "j['vram_used'] <= $min")" = True ]
check "at the minimum: embedding in host memory" [ "$(json "$tmp/min.json" "j['embed_host_mapped'] and j['blocks'][0]['placement'] == 'host-mapped'")" = True ]
check "streamed layers are the last ones" [ "$(json "$tmp/min.json" "all(int(n.split('.')[1]) >= j['n_resident_layers'] for n in j['stream_order'] if n.startswith('layer.'))")" = True ]

"$TT" "${P[@]}" --ram-budget 1GiB --vram-budget "$min" --cpu-layers 0 >"$tmp/min.txt"
check "table: placement and summary" grep -q "^plan: .* layers resident .*blocks streamed .*over PCIe.*predicted" "$tmp/min.txt"
check "table: ring line" grep -q "ring: [12] slots\? x" "$tmp/min.txt"
# The ring: one slot where it keeps a layer more resident (at the minimum everything streams
# through it); --ring-slots 2 asks for two, which the smallest budget does not hold.
check "at the minimum: a ring of one slot" [ "$(json "$tmp/min.json" "j['ring_slots'] == 1")" = True ]
"$TT" "${P[@]}" --ram-budget 1GiB --vram-budget "$min" --cpu-layers 0 --ring-slots 2 >/dev/null 2>"$tmp/ring2.err"; rc=$?
check "--ring-slots 2 below its minimum: refused (exit 1), naming the minimum" sh -c "[ $rc -eq 1 ] && grep -q 'below the minimum working set of .*ring 2 x' '$tmp/ring2.err'"
"$TT" "${P[@]}" --ring-slots 3 >/dev/null 2>"$tmp/ring3.err"; rc=$?
check "--ring-slots 3: refused, naming the flag" sh -c "[ $rc -ne 0 ] && grep -q -e '--ring-slots' '$tmp/ring3.err'"
check "table: VRAM lines" grep -q "KV cache (64 positions)" "$tmp/min.txt"

# The CPU as a third place (issue #16): a layer moved to the CPU leaves the decode copies, stays in
# the prefill order, and the report shows both paths; more layers than stream is an error naming the flag.
"$TT" "${P[@]}" --ram-budget 1GiB --vram-budget "$min" --cpu-layers 1 --json >"$tmp/cpu1.json"
check "--cpu-layers 1: one layer on the CPU" [ "$(json "$tmp/cpu1.json" "j['n_cpu_layers'] == 1 and sum(b['placement'] == 'cpu' for b in j['blocks']) == 1")" = True ]
check "--cpu-layers 1: prefill streams it, decode does not" [ "$(json "$tmp/cpu1.json" "len(j['stream_order']) == len(j['decode_stream_order']) + 1")" = True ]
check "--cpu-layers 1: its tensors read by the CPU (the block less its padding), not over PCIe" [ "$(json "$tmp/cpu1.json" "0.9 * sum(b['bytes'] for b in j['blocks'] if b['placement'] == 'cpu') <= j['cpu_bytes_per_token'] <= sum(b['bytes'] for b in j['blocks'] if b['placement'] == 'cpu') and j['pcie_bytes_per_token'] == sum(b['bytes'] for b in j['blocks'] if b['placement'] == 'registered')")" = True ]
maxc=$(json "$tmp/cpu1.json" "j['max_cpu_layers']")
check "--json: max_cpu_layers ($maxc) is the most --cpu-layers takes" sh -c "[ $maxc -ge 1 ] && '$TT' ${P[*]} --ram-budget 1GiB --vram-budget $min --cpu-layers $maxc >/dev/null && ! '$TT' ${P[*]} --ram-budget 1GiB --vram-budget $min --cpu-layers $((maxc + 1)) >/dev/null 2>&1"
"$TT" "${P[@]}" --ram-budget 1GiB --vram-budget "$min" --cpu-layers 1 >"$tmp/cpu1.txt"
check "--cpu-layers 1: table shows the CPU path" grep -q "read by the CPU" "$tmp/cpu1.txt"
check "--cpu-layers 1: summary names both paths" grep -q "streamed over PCIe, 1 computed on the CPU" "$tmp/cpu1.txt"
"$TT" "${P[@]}" --vram-budget "$min" --cpu-layers 99 >/dev/null 2>"$tmp/cpu99.err"; rc=$?
check "--cpu-layers 99: refused (exit 1)" [ "$rc" -eq 1 ]
check "--cpu-layers 99: names the flag and the most" grep -q -e "--cpu-layers 99: at most [0-9]* layers can run on the CPU" "$tmp/cpu99.err"

# A quantized profile's layers on the CPU (quantized at load, as the CUDA backend does): priced at
# the INT4 rows' rate doctor recorded, their bytes the quantized ones.
Q=(plan "$tmp/ts.thin" --device-memory 8GiB --context 64 --profile max-max-perf --ram-budget 1GiB)
"$TT" "${Q[@]}" --json >"$tmp/q.json"
qmin=$(json "$tmp/q.json" "j['min_vram']")
"$TT" "${Q[@]}" --vram-budget "$qmin" --cpu-layers 1 --json >"$tmp/q1.json" 2>"$tmp/q1.err"
check "INT4 --cpu-layers 1: one layer on the CPU" [ "$(json "$tmp/q1.json" "j['n_cpu_layers'] == 1")" = True ]
f32_cpu=$(json "$tmp/cpu1.json" "j['cpu_bytes_per_token']")
check "INT4 --cpu-layers 1: its quantized bytes read by the CPU (f32 / 6.4 and the f32 norms)" [ "$(json "$tmp/q1.json" "0 < j['cpu_bytes_per_token'] <= sum(b['bytes'] for b in j['blocks'] if b['placement'] == 'cpu') and j['cpu_bytes_per_token'] * 5 < $f32_cpu")" = True ]
check "INT4 --cpu-layers 1: the INT4 rate from doctor.json" [ "$(json "$tmp/q1.json" "j['bandwidths']['cpu_gemv_weights'] == 'INT4' and '; CPU from doctor.json of ' in j['bandwidths']['source']")" = True ]
check "INT4 --cpu-layers 1: no warning" [ ! -s "$tmp/q1.err" ]
"$TT" "${Q[@]}" --vram-budget "$qmin" --cpu-layers 1 >"$tmp/q1.txt"
check "INT4 --cpu-layers 1: the table names the rows" grep -q "CPU GEMV [0-9.]* GB/s of INT4 weights" "$tmp/q1.txt"

# Several GPUs (issue #22): the layer split and tensor parallelism predicted for GPUs that are not here.
"$TT" "${P[@]}" --gpus 0,1 --json >"$tmp/split.json"
split() { python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['split']; print($2)" "$1"; }
check "--gpus 0,1: two GPUs, every layer placed" [ "$(split "$tmp/split.json" "j['n_gpus'] == 2 and j['fits'] and [g['end_layer'] for g in j['gpus']][-1] == j['n_layers']")" = True ]
check "--gpus 0,1: consecutive layers, embed first, head last" [ "$(split "$tmp/split.json" "j['gpus'][0]['first_layer'] == 0 and j['gpus'][0]['end_layer'] == j['gpus'][1]['first_layer'] and j['gpus'][0]['embed'] and j['gpus'][1]['head']")" = True ]
check "--gpus 0,1: predictions and the link's source" [ "$(split "$tmp/split.json" "j['predicted_layer_split_tokens_per_s'] > 0 and j['predicted_one_gpu_tokens_per_s'] > 0 and j['link']['source'].startswith('assumed')")" = True ]
"$TT" plan "$tmp/ts.thin" --context 64 --gpus 1,0 --device-memory 8GiB,2GiB >"$tmp/split.txt"
check "--device-memory per GPU: the table" grep -q "a GPU with 2.00 GiB +head" "$tmp/split.txt"
check "--gpus: says running across GPUs is not built" grep -q "running across several GPUs is not built yet" "$tmp/split.txt"
fails_with "--gpus 0,0" "--gpus 0,0: device 0 is listed twice" "$TT" "${P[@]}" --gpus 0,0
fails_with "sizes without as many GPUs" "--device-memory 8GiB,4GiB: 2 sizes for 1 GPUs" "$TT" plan "$tmp/ts.thin" --device-memory 8GiB,4GiB
fails_with "run --gpus 0,1" "--gpus 0,1: running across several GPUs is not built yet" \
  "$TT" run "$tmp/ts.thin" --gpus 0,1 --max-tokens 1 -p x
fails_with "run --gpus 0 --device cpu" "--gpus 0 with --device cpu: --gpus picks CUDA devices" \
  "$TT" run "$tmp/ts.thin" --gpus 0 --device cpu --max-tokens 1 -p x

fails_with "one byte below the minimum" "below the minimum working set of .* at a context of 64 tokens" "$TT" "${P[@]}" --vram-budget $((min - 1))
"$TT" "${P[@]}" --vram-budget 100GiB >/dev/null 2>"$tmp/clamp.err"
check "budget above the GPU: warning" grep -q -e "warning: --vram-budget 100.00 GiB is more than the GPU's 8.00 GiB" "$tmp/clamp.err"

# RAM: enough for the embedding and the bounce buffer only, so the streamed layers come from disk.
need=$(json "$tmp/min.json" "[b['bytes'] for b in j['blocks'] if b['name'] == 'embed'][0] + j['slot_bytes']")
"$TT" "${P[@]}" --vram-budget "$min" --ram-budget "$need" --json >"$tmp/disk.json" 2>"$tmp/disk.err"
check "short RAM: streamed blocks from disk" [ "$(json "$tmp/disk.json" "j['disk_bytes_per_token'] == j['pcie_bytes_per_token'] > 0 and j['bounce_bytes'] == j['slot_bytes']")" = True ]
check "short RAM: says so" grep -q -e "read from the file (O_DIRECT)" "$tmp/disk.err"
fails_with "RAM below the bounce buffer" "--ram-budget: .* below the minimum" "$TT" "${P[@]}" --vram-budget "$min" --ram-budget $((need - 1))

fails_with "bad size" "--vram-budget" "$TT" "${P[@]}" --vram-budget 8XB
"$TT" -q run "$tmp/ts.thin" --device cpu --vram-budget 1GiB --prompt "" --temperature 0 --max-tokens 2 >/dev/null 2>"$tmp/cpu.err"
check "cpu: --vram-budget does not apply" grep -q -e "warning: --vram-budget does not apply to the CPU backend" "$tmp/cpu.err"
# --tune-split (runtime/split_tuner.h) moves the count --cpu-layers would pin: the two are refused
# together; the plan says what the flag would do with its count; the CPU backend has nothing to tune.
fails_with "--tune-split with --cpu-layers" "--tune-split moves the count of CPU layers that --cpu-layers 1 pins" \
  "$TT" run "$tmp/ts.thin" --device cpu --tune-split --cpu-layers 1 --prompt "" --max-tokens 1
"$TT" "${P[@]}" --ram-budget 1GiB --vram-budget "$min" >"$tmp/tune.txt"
check "plan: --tune-split's note names the count and the range" \
  grep -Eq "with --tune-split, decode starts at [0-9]+ CPU layers and moves the count \(0\.\.[1-9][0-9]*\)" "$tmp/tune.txt"
"$TT" -q run "$tmp/ts.thin" --device cpu --tune-split --prompt "" --temperature 0 --max-tokens 2 >/dev/null 2>"$tmp/tune-cpu.err"
check "cpu: --tune-split does not apply" grep -q -e "warning: --tune-split does not apply to the CPU backend" "$tmp/tune-cpu.err"

finish
