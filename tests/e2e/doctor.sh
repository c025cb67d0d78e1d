#!/usr/bin/env bash
# `thintensor doctor` end to end. Without a GPU (CI): it says "no CUDA GPU: <reason>", still runs
# the CPU-side items, exits 0, and exits 1 under --strict; the record holds the host's figures only.
# With a GPU: every bandwidth and kernel item is ok and doctor.json holds the figures the report
# printed. In both cases the JSON is checked against independent readings: df for the free disk,
# `ulimit -l` for the pinned-memory limit, nproc for the GEMV's thread counts, and a scripted
# python3 for the torch / transformers probe. --host-only measures the host alone and keeps an
# older record's GPU ceilings.
set -euo pipefail
TT="$THINTENSOR"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export THINTENSOR_HOME="$work/home"
pass=0
ok() { pass=$((pass + 1)); }
die() { echo "FAIL: $*"; exit 1; }

cat >"$work/python3" <<'EOF'
#!/bin/sh
echo 'THINTENSOR_DOCTOR {"python": "3.11.9", "torch": "2.5.1", "torch_cuda": null, "cuda_available": false, "transformers": "4.46.3"}'
EOF
chmod +x "$work/python3"

# ---- JSON report
set +e
"$TT" -q doctor --json --cache-test-mib 16 --host-test-mib 16 --python "$work/python3" >"$work/report.json" 2>"$work/err"
rc=$?
set -e
gpu=$("$PY" -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["gpu_available"]))' "$work/report.json")
avail=$(df -B1 --output=avail "$THINTENSOR_HOME" | tail -n 1 | tr -d ' ')
size=$(df -B1 --output=size "$THINTENSOR_HOME" | tail -n 1 | tr -d ' ')
memlock=$(ulimit -l)

"$PY" - "$work/report.json" "$avail" "$size" "$memlock" "$THINTENSOR_HOME" "$gpu" "$(nproc)" <<'EOF' || die "JSON report"
import json, sys
rep = json.load(open(sys.argv[1]))
avail, size, memlock, home, gpu = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6] == "1"
nproc = int(sys.argv[7])
items = {(i["group"], i["name"]): i for i in rep["items"]}
def item(group, name):
    assert (group, name) in items, f"no item {group}/{name}: {sorted(items)}"
    return items[(group, name)]
for i in rep["items"]:
    assert i["status"] in ("ok", "warn", "FAIL", "missing"), i
# Free disk as df sees it (others may write in between: 2% of the disk of slack).
disk = item("cache", "free disk")
assert disk["data"]["dir"] == home, disk
assert abs(disk["data"]["free_bytes"] - avail) <= 0.02 * size + (64 << 20), (disk, avail)
assert disk["data"]["total_bytes"] == size, (disk, size)
speed = item("cache", "read speed")
assert speed["status"] in ("ok", "warn"), speed
assert speed["data"]["test_bytes"] == 16 << 20 and speed["data"]["read_gbs"] > 0, speed
# RLIMIT_MEMLOCK as the shell's ulimit -l (KiB) reports it.
ml = item("host", "pinned-memory limit")["data"]
if memlock == "unlimited":
    assert ml["unlimited"] is True, ml
else:
    assert ml["soft_bytes"] == int(memlock) * 1024, (ml, memlock)
# The host's ceilings: read with every thread, the GEMV at 1, 2, 4, ... up to every thread.
counts = [1]
while counts[-1] * 2 < nproc: counts.append(counts[-1] * 2)
if counts[-1] != nproc: counts.append(nproc)
read, gemv, host = item("host", "host read"), item("host", "cpu gemv"), rep["host"]
assert read["status"] == "ok" and read["data"]["gbs"] > 0 and read["data"]["threads"] == nproc, read
assert read["data"]["bytes"] <= 16 << 20 and gemv["data"]["bytes"] == read["data"]["bytes"], (read, gemv)
assert gemv["status"] in ("ok", "warn") and [r["threads"] for r in gemv["data"]["rates"]] == counts, (gemv, counts)
assert all(r["gemv_gbs"] > 0 for r in gemv["data"]["rates"]), gemv
assert host["threads"] == nproc and host["read_gbs"] == read["data"]["gbs"], host
assert [{"threads": r["threads"], "gemv_gbs": r["gemv_gbs"]} for r in host["gemv"]] == gemv["data"]["rates"], host
# The quantized profiles' rows: INT8 and INT4 rates at the same thread counts, recorded beside bf16's.
for q in ("int8", "int4"):
    it = item("host", "cpu gemv " + q)
    assert it["status"] in ("ok", "warn") and it["data"]["dtype"] == q, it
    assert [r["threads"] for r in it["data"]["rates"]] == counts and all(r["gemv_gbs"] > 0 for r in it["data"]["rates"]), it
    assert [r[q + "_gbs"] for r in host["gemv"]] == [r["gemv_gbs"] for r in it["data"]["rates"]], (host, it)
assert host["cpu"] == item("host", "cpu + memory")["data"]["cpu"] and host["gemv_dtype"] == "bf16", host
assert rep["host_only"] is False
# The scripted interpreter's answer.
py = item("python", "torch + transformers")
assert py["status"] == "ok", py
assert py["value"] == "python 3.11.9: torch 2.5.1, transformers 4.46.3; torch does not see a CUDA GPU", py["value"]
s = rep["summary"]
assert s["ok"] + s["warn"] + s["fail"] + s["missing"] == len(rep["items"]), s
if not gpu:
    dev = item("gpu", "device")
    assert dev["status"] == "missing" and dev["value"].startswith("no CUDA GPU: "), dev
    assert rep["no_gpu_reason"] and dev["value"] == "no CUDA GPU: " + rep["no_gpu_reason"], rep["no_gpu_reason"]
    backend = item("gpu", "cuda backend")
    if not backend["data"]["built"]:
        assert backend["value"].startswith("this build has no CUDA backend"), backend
        assert rep["no_gpu_reason"] == "this build has no CUDA backend", rep["no_gpu_reason"]
    assert rep["gpus"] == [] and rep["record_written"] is True, rep
    rec = json.load(open(rep["record_path"]))  # the host's figures alone
    assert rec["version"] == 1 and rec["gpus"] == [] and rec["host"] == host, rec
    assert rec["date"] == host["date"], rec  # one date per run
    assert s["strict_ok"] is False
    assert not [i for i in rep["items"] if i["group"] in ("bandwidth", "kernels")], "GPU items without a GPU"
else:
    # Every measured figure is positive, every kernel passed, and the record holds the same numbers.
    assert rep["gpus"], rep
    for i in rep["items"]:
        if i["group"] in ("bandwidth", "kernels"):
            assert i["status"] in ("ok", "warn"), i
    rec = json.load(open(rep["record_path"]))
    assert rec["version"] == 1 and rec["gpus"] == rep["gpus"] and rec["host"] == host, (rec, rep["gpus"])
    assert rec["date"] == host["date"], rec  # one date per run: the planner's "(GPU and CPU)"
    for g in rec["gpus"]:
        for k in ("d2d_gbs", "h2d_pinned_gbs", "h2d_pageable_gbs", "d2h_gbs", "gemm_bf16_tflops"):
            assert g[k] > 0, (k, g)
EOF
ok
if [ "$gpu" = 0 ]; then
  [ "$rc" -eq 0 ] || die "doctor without --strict exited $rc on a machine without a GPU: $(cat "$work/err")"
  ok
fi
[ -z "$(find "$THINTENSOR_HOME" -name '.doctor-read-test-*')" ] || die "read-test file left in the cache"
ok

# ---- the table and --strict
set +e
"$TT" -q doctor --strict --cache-test-mib 1 --host-test-mib 16 --python "$work/python3" >"$work/table.txt" 2>"$work/err"
rc=$?
set -e
grep -q '^GROUP ' "$work/table.txt" || die "no table header"
grep -Eq '^cache +read speed +(ok|warn) ' "$work/table.txt" || die "no read speed row: $(cat "$work/table.txt")"
grep -Eq '^host +host read +ok +[0-9.]+ GB/s memory read' "$work/table.txt" || die "no host read row: $(cat "$work/table.txt")"
grep -Eq '^host +cpu gemv +(ok|warn) +GB/s of bf16 weights by threads: 1: [0-9.]+' "$work/table.txt" || die "no cpu gemv row"
grep -Eq '^host +cpu gemv int4 +(ok|warn) +GB/s of INT4 weights and scales by threads: 1: [0-9.]+' "$work/table.txt" || die "no cpu gemv int4 row"
if [ "$gpu" = 0 ]; then
  [ "$rc" -eq 1 ] || die "doctor --strict exited $rc without a GPU"
  grep -q '^no CUDA GPU: ' "$work/table.txt" || die "the table does not say there is no GPU"
  grep -q -- '--strict' "$work/err" || die "no --strict message on stderr: $(cat "$work/err")"
else
  [ "$rc" -eq 0 ] || die "doctor --strict failed on the GPU machine: $(cat "$work/table.txt")"
  grep -Eq '^bandwidth +h2d pinned +(ok|warn) +[0-9.]+ GB/s' "$work/table.txt" || die "no h2d bandwidth row"
fi
ok

# ---- a missing interpreter is reported, not fatal
set +e
"$TT" -q doctor --json --cache-test-mib 0 --host-test-mib 0 --python "$work/no-such-python" >"$work/nopy.json" 2>/dev/null
set -e
"$PY" - "$work/nopy.json" <<'EOF' || die "missing interpreter"
import json, sys
rep = json.load(open(sys.argv[1]))
py = [i for i in rep["items"] if i["group"] == "python"][0]
assert py["status"] == "missing" and "not found" in py["value"], py
speed = [i for i in rep["items"] if i["name"] == "read speed"][0]
assert speed["status"] == "warn" and "skipped" in speed["value"], speed
for name in ("host read", "cpu gemv", "cpu gemv int8", "cpu gemv int4"):  # --host-test-mib 0
    it = [i for i in rep["items"] if i["name"] == name][0]
    assert it["status"] == "warn" and it["value"] == "skipped (--host-test-mib 0)", it
assert rep["host"] is None, rep["host"]
EOF
ok

# ---- --host-only: the host alone; an older record of this machine keeps its GPU ceilings and date
"$PY" - "$THINTENSOR_HOME/doctor.json" <<'EOF'
import json, socket, sys
json.dump({"version": 1, "date": "2025-01-31T12:00:00Z", "hostname": socket.gethostname(), "thintensor_version": "0.0.1",
           "gpus": [{"device": 0, "name": "NVIDIA H200", "pci_bus_id": "", "d2d_gbs": 4300.0, "h2d_pinned_gbs": 53.0,
                     "h2d_pageable_gbs": 20.0, "d2h_gbs": 54.0, "gemm_bf16_tflops": 780.0}]}, open(sys.argv[1], "w"))
EOF
cp "$THINTENSOR_HOME/doctor.json" "$work/old.json"
"$TT" -q doctor --host-only --no-record --host-test-mib 8 >/dev/null || die "doctor --host-only --no-record"
cmp -s "$THINTENSOR_HOME/doctor.json" "$work/old.json" || die "--no-record changed the record"
"$TT" -q doctor --host-only --json --host-test-mib 8 --python "$work/no-such-python" >"$work/host.json" || die "doctor --host-only"
"$PY" - "$work/host.json" "$work/old.json" <<'EOF' || die "--host-only"
import json, sys
rep, old = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
groups = {i["group"] for i in rep["items"]}
assert groups == {"host", "record"}, groups  # no gpu, cache or python items
assert rep["host_only"] is True and rep["gpus"] == [] and rep["record_written"] is True, rep
rec = json.load(open(rep["record_path"]))
assert rec["gpus"] == old["gpus"] and rec["date"] == old["date"], rec  # the GPU part and its date kept
assert rec["host"] == rep["host"] and rec["host"]["date"] != old["date"], rec
row = [i for i in rep["items"] if i["group"] == "record"][0]
assert row["value"].endswith("(GPU ceilings of 2025-01-31T12:00:00Z kept)"), row
assert rep["summary"]["strict_ok"] is True, rep["summary"]
EOF
ok

# ---- bad flags are usage errors
for bad in "--cache-test-mib lots" "--host-test-mib -1" "--host-test-mib 100000" "--python-timeout 0" "--device -1" "--no-such-flag"; do
  set +e
  # shellcheck disable=SC2086
  "$TT" doctor $bad >/dev/null 2>"$work/err"
  rc=$?
  set -e
  [ "$rc" -ne 0 ] || die "doctor $bad exited 0"
done
ok
echo "$pass passed, 0 failed"
