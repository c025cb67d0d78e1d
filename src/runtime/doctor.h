// `thintensor doctor`: the report of what this machine can do for inference, and the record of the
// GPU's and the host's measured ceilings that the planner and the benchmarks read back. This layer holds the
// CPU-side checks (pinned-memory limit, model cache disk, python3 with torch + transformers) and the
// report itself; the GPU items are measured in src/backends/cuda and added by the CLI, so that this
// file compiles without the CUDA toolkit.
#pragma once

#include "core/quant.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tt {

// ok and warn pass `--strict`; fail (checked and wrong) and missing (could not be checked, or the
// thing is absent) do not.
enum class CheckStatus { ok, warn, fail, missing };
std::string_view check_status_name(CheckStatus s);  // "ok", "warn", "FAIL", "missing"

struct CheckItem {
    std::string group;   // section of the table: "gpu", "bandwidth", "kernels", "host", "cache", "python"
    std::string name;    // what was checked, e.g. "h2d pinned"
    std::string value;   // human-readable result or reason
    CheckStatus status = CheckStatus::ok;
    nlohmann::json data = nlohmann::json::object();  // the same result as numbers, for --json
};

struct DoctorReport {
    std::vector<CheckItem> items;

    CheckItem& add(std::string group, std::string name, std::string value, CheckStatus status,
                   nlohmann::json data = nlohmann::json::object());
    int count(CheckStatus s) const;
    // No item failed or is missing: what `--strict` requires.
    bool strict_ok() const { return count(CheckStatus::fail) == 0 && count(CheckStatus::missing) == 0; }
    // A fixed-width table: group, item, status, value.
    std::string table() const;
    nlohmann::json to_json() const;
};

// ---- CPU-side checks ----

// CPU model, cores and RAM (informational).
CheckItem check_host();
// The CPU's model name from /proc/cpuinfo ("Intel(R) Xeon(R) Platinum 8480+"); "unknown CPU" when
// it cannot be read. The record's host part is trusted only on a CPU of the same name.
std::string cpu_model_name();

// RLIMIT_MEMLOCK (how much memory this process may lock): ok when unlimited or at least half the
// machine's RAM, warn otherwise (mlock of streamed weights would be capped).
CheckItem check_memlock();

// The model cache directory `dir` (created when missing): free disk (statvfs) and the cold read
// speed of a `test_bytes` file written there, fsync'ed and dropped from the page cache, read back
// timed and deleted. Returns two items: "free disk" and "read speed".
std::vector<CheckItem> check_model_cache(const std::string& dir, uint64_t test_bytes = uint64_t(256) << 20);

// Runs `python -c ...` (python = $THINTENSOR_PYTHON or "python3" from PATH) with a timeout and
// reports the torch and transformers versions and whether torch sees CUDA; missing with the
// reason (not found, import error, timeout) otherwise. `validate --hf-model` needs this.
CheckItem check_python(const std::string& python, double timeout_s = 120.0);
std::string default_python();

// Theoretical bandwidth of a PCIe link in one direction, GB/s after line encoding (8b/10b up to
// gen 2, 128b/130b from gen 3, FLIT from gen 6): gen 5 x16 is 63.0. 0 when gen or width is unknown.
double pcie_link_gbs(int gen, int width);

// ---- the record of measured ceilings: $THINTENSOR_HOME/doctor.json ----

struct GpuCeilings {
    int device = 0;
    std::string name;              // "NVIDIA H200"
    std::string pci_bus_id;        // "0000:19:00.0"; empty when unknown
    double d2d_gbs = 0;            // device-to-device copy, bytes read + written per second / 1e9
    double h2d_pinned_gbs = 0;     // host-to-device from page-locked memory
    double h2d_pageable_gbs = 0;   // host-to-device from ordinary (pageable) memory
    double d2h_gbs = 0;            // device-to-host into page-locked memory
    double gemm_bf16_tflops = 0;   // cuBLAS bf16 GEMM 8192^3, f32 accumulate
};

// The host GEMV's rate with one thread count: over bf16 rows, and over the quantized profiles'
// INT8 and INT4 rows (values and scales; 0 in records written before these were measured).
struct HostGemvRate {
    int threads = 0;
    double gemv_gbs = 0;  // weight bytes per second / 1e9
    double int8_gbs = 0;
    double int4_gbs = 0;
    double gbs(QuantScheme s) const { return s == QuantScheme::int8 ? int8_gbs : s == QuantScheme::int4 ? int4_gbs : gemv_gbs; }
};

// The CPU side, for decode layers the planner computes on the CPU (issue #16), measured by
// src/backends/host/measure.h over buffers larger than the last-level cache (DRAM, not cache).
struct HostCeilings {
    std::string date;             // UTC, ISO 8601, when these were measured
    std::string cpu;              // cpu_model_name() of the machine measured
    int threads = 0;              // its hardware threads
    std::string isa;              // the GEMV kernels used: "avx512-vnni", "avx512", "avx2", "scalar" (host::isa_name)
    std::string gemv_dtype = "bf16";
    double read_gbs = 0;          // memory read bandwidth, every hardware thread summing its share
    std::vector<HostGemvRate> gemv;  // host::gemv by ascending thread counts (1, 2, 4, ..., threads)

    // The GEMV rate over `weights` (none: bf16) with n_threads threads (<= 0: all `threads`):
    // linear between the measured counts, proportional to the threads below the smallest, the
    // largest's above it (more threads than cores do not add bandwidth); 0 when any count lacks it.
    double gemv_gbs_at(int n_threads, QuantScheme weights = QuantScheme::none) const;
};

// A copy from one GPU to another (issue #22), measured by doctor when it sees two or more.
struct PeerLink {
    int from = 0, to = 0;     // CUDA device indices
    bool p2p = false;         // direct peer access (NVLink or PCIe P2P), else staged through the host
    double gbs = 0;           // copy bandwidth, GB/s
    double latency_us = 0;    // one 16 KB copy, microseconds
};

struct DoctorRecord {
    // note: the host part is optional within version 1, so records written before it still load
    // and older builds (which read fields by name) still read the GPU part of newer records.
    static constexpr int k_version = 1;
    std::string date;              // UTC, ISO 8601: "2025-01-31T12:00:00Z", when the GPU ceilings were measured
    std::string hostname;
    std::string thintensor_version;
    std::vector<GpuCeilings> gpus;  // one per CUDA device index measured
    std::optional<HostCeilings> host;  // absent in records written before it, or when not measured
    std::vector<PeerLink> links;       // every ordered pair of GPUs; empty with one GPU or in older records

    // The ceilings measured for CUDA device `device`, or null.
    const GpuCeilings* gpu(int device) const;
    // The link measured from `from` to `to`, or null.
    const PeerLink* link(int from, int to) const;
};

// $THINTENSOR_HOME/doctor.json (see tt::thintensor_home()).
std::string doctor_record_path();
nlohmann::json doctor_record_to_json(const DoctorRecord& r);
nlohmann::json host_ceilings_to_json(const HostCeilings& h);  // the record's "host" object
// Throws tt::Error naming `origin` and the field at fault on a malformed or other-version record.
DoctorRecord doctor_record_from_json(const nlohmann::json& j, const std::string& origin);
// Writes atomically (temp file + rename), creating the directory.
void save_doctor_record(const DoctorRecord& r, const std::string& path);
// For the planner and the benchmarks: nullopt when no record exists yet (or it is unreadable,
// with a warning naming the file: it is a cache, `thintensor doctor` rewrites it).
std::optional<DoctorRecord> load_doctor_record(const std::string& path);
std::optional<DoctorRecord> load_doctor_record();

}  // namespace tt
