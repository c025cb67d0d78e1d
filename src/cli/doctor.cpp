// thintensor doctor [--strict] [--json] [--all-kernels] [--host-only]: what this machine offers
// for inference. GPU items (device, driver, PCIe link through NVML, measured copy bandwidths and
// GEMM rate, cuBLAS check, a self-test of every kernel against the CPU) when the CUDA backend is
// built and a GPU is present; CPU-side items always (the host's memory read bandwidth and GEMV
// rate, pinned-memory limit, model cache disk and read speed, python3 with torch + transformers).
// The measured ceilings, GPU and host, are stored in $THINTENSOR_HOME/doctor.json for the planner.
// Without a GPU it says so, records the host's figures and exits 0; --strict exits 1 when any item
// failed or is missing. --host-only measures the host alone (no GPU, disk or python checks).
#include "backends/host/gemv.h"
#include "backends/host/measure.h"
#include "cli/command.h"
#include "cli/flag_checks.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/thread_pool.h"
#include "runtime/doctor.h"
#include "runtime/model_source.h"

#ifdef THINTENSOR_HAVE_CUDA
#include "backends/cuda/device_info.h"
#include "backends/cuda/measure.h"
#include "backends/cuda/nvml.h"
#include "backends/cuda/self_test.h"
#endif

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <thread>

namespace {

using tt::CheckStatus;
using json = nlohmann::json;

struct Opts {
    bool strict = false;
    bool json = false;
    int device = -1;  // -1: every device
    uint64_t cache_test_mib = 256;
    double python_timeout_s = 120;
    std::string python;
    bool no_record = false;
    bool all_kernels = false;  // every case of the kernel table, not only the quick ones
    bool host_only = false;    // the host's items alone: no GPU, cache or python checks
    uint64_t host_test_mib = tt::host::dram_test_bytes(tt::host::k_measure_bytes) >> 20;
};

#ifdef THINTENSOR_HAVE_CUDA

std::string fmt_err(double e) { return std::isfinite(e) ? fmt::format("{:.1e}", e) : "non-finite"; }

// One row per kernel family: "f32 3.1e-07, bf16 2.2e-03" (per dtype, the case farthest over or
// nearest to its tolerance); FAIL when any case failed. The JSON lists every case with its shape.
void add_kernel_rows(tt::DoctorReport& rep, const std::vector<tt::cuda::KernelCheck>& checks, const std::string& prefix) {
    std::vector<std::string> order;
    std::map<std::string, std::vector<const tt::cuda::KernelCheck*>> by_kernel;
    for (const auto& c : checks) {
        if (!by_kernel.count(c.kernel)) order.push_back(c.kernel);
        by_kernel[c.kernel].push_back(&c);
    }
    auto ratio = [](const tt::cuda::KernelCheck& c) -> double {
        if (!c.error.empty() || !std::isfinite(c.rel_err)) return INFINITY;
        if (!c.passed) return 1e300;  // over tolerance (an index answer has tolerance 0)
        return c.tolerance > 0 ? c.rel_err / c.tolerance : 0.0;
    };
    for (const auto& k : order) {
        std::vector<std::string> dtypes;
        std::map<std::string, const tt::cuda::KernelCheck*> worst;
        bool passed = true;
        json data = json::array();
        for (const auto* c : by_kernel[k]) {
            passed = passed && c->passed;
            if (!worst.count(c->dtype)) dtypes.push_back(c->dtype);
            if (!worst.count(c->dtype) || ratio(*c) > ratio(*worst[c->dtype])) worst[c->dtype] = c;
            json outputs = json::array();
            for (const auto& m : c->outputs)
                outputs.push_back({{"what", m.what}, {"rel_err", std::isfinite(m.err) ? json(m.err) : json(nullptr)}, {"tolerance", m.tol}});
            data.push_back({{"dtype", c->dtype},
                            {"shape", c->shape},
                            {"rel_err", std::isfinite(c->rel_err) ? json(c->rel_err) : json(nullptr)},
                            {"tolerance", c->tolerance},
                            {"passed", c->passed},
                            {"outputs", outputs},
                            {"error", c->error}});
        }
        std::string value;
        for (const auto& dt : dtypes) {
            const auto* c = worst[dt];
            if (!value.empty()) value += ", ";
            value += fmt::format("{} {}", c->dtype, c->error.empty() ? fmt_err(c->rel_err) : "error");
            if (!c->passed && c->error.empty()) value += fmt::format(" > tol {:.0e} ({})", c->tolerance, c->shape);
            if (!c->error.empty()) value += fmt::format(" ({}: {})", c->shape, c->error);
        }
        rep.add("kernels", prefix + k, "rel err " + value, passed ? CheckStatus::ok : CheckStatus::fail, {{"cases", data}});
    }
}

// Runs one measurement; a thrown error (out of memory, a CUDA failure) becomes a FAIL row.
template <typename F>
double measured(tt::DoctorReport& rep, const std::string& group, const std::string& name, F&& fn) {
    try {
        return fn();
    } catch (const tt::Error& e) {
        rep.add(group, name, e.what(), CheckStatus::fail);
        return -1;
    }
}

// The GPU items of one device; returns its ceilings when every measurement succeeded.
std::optional<tt::GpuCeilings> check_gpu(tt::DoctorReport& rep, const tt::cuda::DeviceInfo& d, int n_devices,
                                         bool all_kernels) {
    const std::string tag = n_devices > 1 ? fmt::format("[{}] ", d.index) : "";
    rep.add("gpu", tag + "device",
            fmt::format("{} (cuda:{}): compute capability {}.{}, {} SMs, {} ({} free)", d.name, d.index, d.cc_major,
                        d.cc_minor, d.multiprocessors, tt::format_bytes(double(d.total_memory)),
                        tt::format_bytes(double(d.free_memory))),
            CheckStatus::ok,
            {{"index", d.index}, {"name", d.name}, {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
             {"multiprocessors", d.multiprocessors}, {"total_bytes", d.total_memory}, {"free_bytes", d.free_memory}});

    const tt::cuda::NvmlDevice nv = tt::cuda::nvml_device(d.index);
    double link_gbs = 0;
    if (!nv.found) {
        rep.add("gpu", tag + "pcie link", nv.why, CheckStatus::missing, {{"pci_bus_id", nv.pci_bus_id}});
    } else {
        link_gbs = tt::pcie_link_gbs(nv.pcie_gen_max, nv.pcie_width_max);
        // note: an idle GPU drops its link to a lower generation to save power; only a narrower
        // link than the slot allows is a fault.
        const bool narrow = nv.pcie_width > 0 && nv.pcie_width_max > 0 && nv.pcie_width < nv.pcie_width_max;
        rep.add("gpu", tag + "pcie link",
                fmt::format("{}: gen {} x{} now, up to gen {} x{} ({:.1f} GB/s per direction){}", nv.pci_bus_id,
                            nv.pcie_gen, nv.pcie_width, nv.pcie_gen_max, nv.pcie_width_max, link_gbs,
                            narrow ? "; link narrower than the slot allows" : ""),
                narrow ? CheckStatus::warn : (nv.pcie_gen_max > 0 ? CheckStatus::ok : CheckStatus::missing),
                {{"pci_bus_id", nv.pci_bus_id}, {"gen", nv.pcie_gen}, {"width", nv.pcie_width},
                 {"gen_max", nv.pcie_gen_max}, {"width_max", nv.pcie_width_max}, {"link_gbs", link_gbs}});
        std::string state = fmt::format("max SM clock {} MHz, memory clock {} MHz", nv.sm_clock_max_mhz,
                                        nv.mem_clock_max_mhz);
        if (nv.power_w >= 0) state += fmt::format(", {:.0f} W of {:.0f} W", nv.power_w, nv.power_limit_w);
        if (nv.temperature_c >= 0) state += fmt::format(", {} C", nv.temperature_c);
        if (nv.ecc_enabled >= 0) state += nv.ecc_enabled ? ", ECC on" : ", ECC off";
        rep.add("gpu", tag + "state", state, CheckStatus::ok,
                {{"uuid", nv.uuid}, {"sm_clock_max_mhz", nv.sm_clock_max_mhz},
                 {"mem_clock_max_mhz", nv.mem_clock_max_mhz}, {"power_w", nv.power_w},
                 {"power_limit_w", nv.power_limit_w}, {"temperature_c", nv.temperature_c},
                 {"ecc_enabled", nv.ecc_enabled}});
    }

    tt::GpuCeilings g;
    g.device = d.index;
    g.name = d.name;
    g.pci_bus_id = nv.pci_bus_id;
    tt::log::info("doctor: measuring copy bandwidths and the GEMM rate of cuda:{}", d.index);
    g.h2d_pinned_gbs = measured(rep, "bandwidth", tag + "h2d pinned", [&] { return tt::cuda::measure_h2d_gbs(d.index, true); });
    g.h2d_pageable_gbs = measured(rep, "bandwidth", tag + "h2d pageable", [&] { return tt::cuda::measure_h2d_gbs(d.index, false); });
    g.d2h_gbs = measured(rep, "bandwidth", tag + "d2h pinned", [&] { return tt::cuda::measure_d2h_gbs(d.index); });
    g.d2d_gbs = measured(rep, "bandwidth", tag + "d2d", [&] { return tt::cuda::measure_d2d_gbs(d.index); });
    g.gemm_bf16_tflops = measured(rep, "bandwidth", tag + "gemm bf16", [&] { return tt::cuda::measure_gemm_tflops(d.index); });

    // Host<->device copies from pinned memory should reach most of the link; under half of it means
    // a throttled, shared or mis-slotted link (or a virtualized one).
    auto link_row = [&](const std::string& name, double gbs, const char* what) {
        if (gbs < 0) return;
        const double frac = link_gbs > 0 ? gbs / link_gbs : 0;
        const bool slow = link_gbs > 0 && frac < 0.5;
        rep.add("bandwidth", tag + name,
                link_gbs > 0 ? fmt::format("{:.1f} GB/s {} ({:.0f}% of the PCIe link){}", gbs, what, 100 * frac,
                                           slow ? "; under half the link" : "")
                             : fmt::format("{:.1f} GB/s {}", gbs, what),
                slow ? CheckStatus::warn : CheckStatus::ok, {{"gbs", gbs}, {"link_fraction", frac}});
    };
    link_row("h2d pinned", g.h2d_pinned_gbs, "host to device, page-locked");
    if (g.h2d_pageable_gbs >= 0)
        rep.add("bandwidth", tag + "h2d pageable",
                fmt::format("{:.1f} GB/s host to device, pageable{}", g.h2d_pageable_gbs,
                            g.h2d_pinned_gbs > 0 ? fmt::format(" ({:.0f}% of pinned)", 100 * g.h2d_pageable_gbs / g.h2d_pinned_gbs) : ""),
                CheckStatus::ok, {{"gbs", g.h2d_pageable_gbs}});
    link_row("d2h pinned", g.d2h_gbs, "device to host, page-locked");
    if (g.d2d_gbs >= 0)
        rep.add("bandwidth", tag + "d2d", fmt::format("{:.0f} GB/s device to device (bytes read + written)", g.d2d_gbs),
                CheckStatus::ok, {{"gbs", g.d2d_gbs}});
    if (g.gemm_bf16_tflops >= 0)
        rep.add("bandwidth", tag + "gemm bf16",
                fmt::format("{:.0f} TFLOP/s cuBLAS bf16 GEMM 8192^3, f32 accumulate", g.gemm_bf16_tflops), CheckStatus::ok,
                {{"tflops", g.gemm_bf16_tflops}});

    tt::log::info("doctor: self-test of cuBLAS and every kernel on cuda:{} ({} cases of the kernel table)", d.index,
                  all_kernels ? "all" : "the quick");
    const auto t0 = std::chrono::steady_clock::now();
    add_kernel_rows(rep, tt::cuda::self_test_kernels(d.index, all_kernels), tag);
    tt::log::info("doctor: self-test took {:.0f} ms",
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());

    if (g.h2d_pinned_gbs < 0 || g.h2d_pageable_gbs < 0 || g.d2h_gbs < 0 || g.d2d_gbs < 0 || g.gemm_bf16_tflops < 0)
        return std::nullopt;
    return g;
}

#endif  // THINTENSOR_HAVE_CUDA

// The host's ceilings for decode layers on the CPU (issue #16): memory read with every hardware
// thread, and the host GEMV (bf16, INT8 and INT4 rows, the kernels best_isa() picks) at 1, 2,
// 4, ... threads, over buffers of `bytes` (past the last-level cache: DRAM), dated `date`.
// Returns them when the read and bf16 figures were measured.
std::optional<tt::HostCeilings> check_host_rates(tt::DoctorReport& rep, uint64_t bytes, const std::string& date) {
    if (bytes == 0) {
        for (const char* name : {"host read", "cpu gemv", "cpu gemv int8", "cpu gemv int4"})
            rep.add("host", name, "skipped (--host-test-mib 0)", CheckStatus::warn);
        return std::nullopt;
    }
    tt::HostCeilings h;
    h.date = date;
    h.cpu = tt::cpu_model_name();
    h.threads = int(std::max(1u, std::thread::hardware_concurrency()));
    h.isa = tt::host::isa_name(tt::host::best_isa());
    h.gemv_dtype = "bf16";
    tt::log::info("doctor: measuring the host's memory read and GEMV rates ({} buffer, up to {} threads)",
                  tt::format_bytes(double(bytes)), h.threads);
    tt::ThreadPool all(h.threads);
    // One matrix for both figures: the read bandwidth of the very bytes the GEMV reads.
    std::unique_ptr<tt::host::GemvBench> bench;
    try {
        bench = std::make_unique<tt::host::GemvBench>(all, tt::DType::bf16, size_t(bytes));
        h.read_gbs = tt::host::measure_read_gbs(all, bench->matrix());
    } catch (const tt::Error& e) {
        rep.add("host", "host read", e.what(), CheckStatus::fail);
        return std::nullopt;
    }
    const std::string size = tt::format_bytes(double(bench->bytes()));
    rep.add("host", "host read", fmt::format("{:.1f} GB/s memory read, {} threads ({} buffer)", h.read_gbs, h.threads, size),
            CheckStatus::ok, {{"gbs", h.read_gbs}, {"threads", h.threads}, {"bytes", bench->bytes()}});
    const std::vector<int> counts = tt::host::gemv_thread_counts(h.threads);
    std::vector<std::unique_ptr<tt::ThreadPool>> pools;  // one per count below every thread
    for (int n : counts) pools.push_back(n == h.threads ? nullptr : std::make_unique<tt::ThreadPool>(n));
    auto pool_at = [&](size_t i) -> tt::ThreadPool& { return pools[i] ? *pools[i] : all; };
    for (size_t i = 0; i < counts.size(); ++i) h.gemv.push_back({counts[i], bench->gbs(pool_at(i))});
    const size_t bench_bytes = bench->bytes();
    bench.reset();
    // The quantized profiles' rows (values and scales): a layer on the CPU beside the GPU reads
    // these at a rate of their own, which the planner takes for INT8 / INT4 weights.
    for (tt::QuantScheme q : {tt::QuantScheme::int8, tt::QuantScheme::int4}) {
        try {
            tt::host::GemvBench qb(all, q, size_t(bytes));
            for (size_t i = 0; i < counts.size(); ++i) {
                const double g = qb.gbs(pool_at(i));
                (q == tt::QuantScheme::int8 ? h.gemv[i].int8_gbs : h.gemv[i].int4_gbs) = g;
            }
        } catch (const tt::Error& e) {
            rep.add("host", fmt::format("cpu gemv {}", tt::quant_scheme_name(q)), e.what(), CheckStatus::fail);
        }
    }
    // The roofline: with every thread the GEMV should read its weights near the host's read bandwidth.
    const bool scalar = tt::host::best_isa() == tt::host::Isa::scalar;
    for (tt::QuantScheme q : {tt::QuantScheme::none, tt::QuantScheme::int8, tt::QuantScheme::int4}) {
        if (!(h.gemv.back().gbs(q) > 0)) continue;  // failed above
        std::string rates;
        json data = json::array();
        for (const auto& g : h.gemv) {
            rates += fmt::format("{}{}: {:.1f}", rates.empty() ? "" : ", ", g.threads, g.gbs(q));
            data.push_back({{"threads", g.threads}, {"gemv_gbs", g.gbs(q)}});
        }
        const double frac = h.read_gbs > 0 ? h.gemv.back().gbs(q) / h.read_gbs : 0;
        const bool f = q == tt::QuantScheme::none;
        rep.add("host", f ? std::string("cpu gemv") : fmt::format("cpu gemv {}", tt::quant_scheme_name(q)),
                fmt::format("GB/s of {} by threads: {} ({} kernels; all threads reach {:.0f}% of host read){}",
                            f ? std::string("bf16 weights") : fmt::format("{} weights and scales", tt::quant_scheme_label(q)), rates,
                            h.isa, 100 * frac, scalar ? "; no AVX2 or AVX-512: scalar kernels, far below the memory" : ""),
                scalar ? CheckStatus::warn : CheckStatus::ok,
                {{"dtype", f ? std::string(h.gemv_dtype) : std::string(tt::quant_scheme_name(q))},
                 {"isa", h.isa},
                 {"bytes", bench_bytes},
                 {"rates", data},
                 {"read_fraction", frac}});
    }
    return h;
}

// The GPU items; returns the ceilings measured. `no_gpu` is set to the reason there is none. With
// two or more GPUs checked, `links` gets the copy between every ordered pair (issue #22).
std::vector<tt::GpuCeilings> check_gpus(tt::DoctorReport& rep, const Opts& o, std::string& no_gpu, std::vector<tt::PeerLink>& links) {
    std::vector<tt::GpuCeilings> out;
#ifdef THINTENSOR_HAVE_CUDA
    const std::string drv = tt::cuda::driver_version();
    rep.add("gpu", "cuda backend",
            fmt::format("built in: CUDA runtime {}, {}", tt::cuda::runtime_version(),
                        drv == "none" ? "no CUDA driver" : "the driver supports CUDA " + drv),
            CheckStatus::ok, {{"built", true}, {"runtime", tt::cuda::runtime_version()}, {"driver", tt::cuda::driver_version()}});
    std::string why;
    const auto devices = tt::cuda::list_devices(&why);
    const tt::cuda::NvmlSystem ns = tt::cuda::nvml_system();
    rep.add("gpu", "driver",
            ns.available ? fmt::format("NVIDIA driver {} (NVML {})", ns.driver_version, ns.nvml_version) : ns.why,
            ns.available ? CheckStatus::ok : CheckStatus::missing,
            {{"nvml", ns.available}, {"driver_version", ns.driver_version}, {"nvml_version", ns.nvml_version}});
    if (devices.empty()) {
        no_gpu = why.empty() ? "no CUDA device found" : why;
        // The runtime's words for "no libcuda.so.1" are about versions; say what is actually absent.
        if (drv == "none" && !ns.available) no_gpu = "no NVIDIA driver found (CUDA runtime: " + no_gpu + ")";
        rep.add("gpu", "device", "no CUDA GPU: " + no_gpu, CheckStatus::missing);
        return out;
    }
    if (o.device >= int(devices.size()))
        tt::fail("--device {}: there are {} CUDA device(s) (0..{})", o.device, devices.size(), devices.size() - 1);
    for (const auto& d : devices) {
        if (o.device >= 0 && d.index != o.device) continue;
        if (auto g = check_gpu(rep, d, int(devices.size()), o.all_kernels)) out.push_back(*g);
    }
    for (const auto& a : out)
        for (const auto& b : out) {
            if (a.device == b.device) continue;
            const std::string name = fmt::format("peer {}->{}", a.device, b.device);
            try {
                const tt::cuda::PeerCopy c = tt::cuda::measure_peer(a.device, b.device);
                links.push_back({a.device, b.device, c.p2p, c.gbs, c.latency_us});
                rep.add("bandwidth", name,
                        fmt::format("{:.1f} GB/s, {:.1f} us for 16 KB ({})", c.gbs, c.latency_us,
                                    c.p2p ? "peer to peer" : "no peer access: staged through the host"),
                        c.p2p ? CheckStatus::ok : CheckStatus::warn, {{"gbs", c.gbs}, {"latency_us", c.latency_us}, {"p2p", c.p2p}});
            } catch (const tt::Error& e) {
                rep.add("bandwidth", name, e.what(), CheckStatus::fail);
            }
        }
#else
    (void)o;
    (void)links;
    no_gpu = "this build has no CUDA backend";
    rep.add("gpu", "cuda backend", "this build has no CUDA backend (nvcc was not found when it was configured)",
            CheckStatus::missing, {{"built", false}});
    rep.add("gpu", "device", "no CUDA GPU: " + no_gpu, CheckStatus::missing);
#endif
    return out;
}

// The record to write: what this run measured, plus, from an older record of this machine, the
// part this run did not measure (a GPU-less run keeps the GPU ceilings, and their date; a run that
// skipped the host keeps the host's). `kept` says what was kept, for the report.
tt::DoctorRecord merged_record(const std::vector<tt::GpuCeilings>& gpus, const std::vector<tt::PeerLink>& links,
                               const std::optional<tt::HostCeilings>& host, const std::string& date, const std::string& record_path,
                               std::string& kept) {
    tt::DoctorRecord r;
    r.date = date;
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) == 0) r.hostname = name;
    r.thintensor_version = THINTENSOR_VERSION;
    r.gpus = gpus;
    r.links = links;
    r.host = host;
    const auto old = tt::load_doctor_record(record_path);
    if (!old || old->hostname != r.hostname) return r;
    if (gpus.empty() && !old->gpus.empty()) {
        r.gpus = old->gpus;
        r.links = old->links;
        r.date = old->date;
        kept = fmt::format("GPU ceilings of {} kept", old->date);
    }
    if (!host && old->host) {
        r.host = old->host;
        kept += fmt::format("{}host figures of {} kept", kept.empty() ? "" : ", ", old->host->date);
    }
    return r;
}

int run(const Opts& o) {
    // One date for everything this run measures: a record whose GPU and host parts carry the same
    // date was measured in one run (the planner's source line says so).
    const std::string date = tt::format_utc_iso8601();
    tt::DoctorReport rep;
    std::string no_gpu;
    std::vector<tt::GpuCeilings> gpus;
    std::vector<tt::PeerLink> links;
    if (o.host_only) no_gpu = "not checked (--host-only)";
    else gpus = check_gpus(rep, o, no_gpu, links);

    rep.items.push_back(tt::check_host());
    const std::optional<tt::HostCeilings> host = check_host_rates(rep, o.host_test_mib << 20, date);
    rep.items.push_back(tt::check_memlock());
    const std::string home = tt::thintensor_home();
    if (!o.host_only) {
        tt::log::info("doctor: disk read test in {}", home);
        for (auto& it : tt::check_model_cache(home, o.cache_test_mib << 20)) {
            if (o.cache_test_mib == 0 && it.name == "read speed") {
                it.status = CheckStatus::warn;  // skipped on request: not a fault
                it.value = "skipped (--cache-test-mib 0)";
            }
            rep.items.push_back(std::move(it));
        }
        const std::string python = o.python.empty() ? tt::default_python() : o.python;
        tt::log::info("doctor: asking {} for torch and transformers", python);
        rep.items.push_back(tt::check_python(python, o.python_timeout_s));
    }

    // The record: only measured ceilings are stored, so an older record's GPU part survives a GPU-less run.
    const std::string record_path = tt::doctor_record_path();
    bool written = false;
    if (gpus.empty() && !host) {
        rep.add("record", "doctor.json", fmt::format("not written: nothing was measured ({} kept as it is)", record_path),
                CheckStatus::warn, {{"path", record_path}, {"written", false}});
    } else if (o.no_record) {
        rep.add("record", "doctor.json", "not written (--no-record)", CheckStatus::ok,
                {{"path", record_path}, {"written", false}});
    } else {
        std::string kept;
        const tt::DoctorRecord r = merged_record(gpus, links, host, date, record_path, kept);
        const char* what = gpus.empty() ? "host figures" : host ? "GPU and host ceilings" : "GPU ceilings";
        try {
            tt::save_doctor_record(r, record_path);
            written = true;
            rep.add("record", "doctor.json",
                    fmt::format("measured {} written to {}{}", what, record_path, kept.empty() ? "" : " (" + kept + ")"),
                    CheckStatus::ok, {{"path", record_path}, {"written", true}, {"kept", kept}});
        } catch (const tt::Error& e) {
            rep.add("record", "doctor.json", e.what(), CheckStatus::fail, {{"path", record_path}, {"written", false}});
        }
    }

    if (o.json) {
        json j = rep.to_json();
        j["strict"] = o.strict;
        j["gpu_available"] = no_gpu.empty();
        j["no_gpu_reason"] = no_gpu;
        tt::DoctorRecord measured_now;  // the same per-GPU objects as doctor.json
        measured_now.gpus = gpus;
        j["gpus"] = tt::doctor_record_to_json(measured_now)["gpus"];
        j["host"] = host ? tt::host_ceilings_to_json(*host) : json(nullptr);
        j["host_only"] = o.host_only;
        j["record_path"] = record_path;
        j["record_written"] = written;
        fmt::print("{}\n", j.dump(2));
    } else {
        fmt::print("{}", rep.table());
        if (!no_gpu.empty() && !o.host_only) fmt::print("no CUDA GPU: {}\n", no_gpu);
    }
    if (o.strict && !rep.strict_ok()) {
        std::fflush(stdout);
        fmt::print(stderr, "thintensor: doctor --strict: {} item(s) failed, {} missing\n", rep.count(CheckStatus::fail),
                   rep.count(CheckStatus::missing));
        return 1;
    }
    return 0;
}

}  // namespace

static tt::cli::Registration reg(
    "doctor", "Check the GPU, driver, bandwidths, kernels, host memory and GEMV, disk and python; record the measured ceilings", 90,
    [](CLI::App& sub) -> tt::cli::RunFn {
        auto o = std::make_shared<Opts>();
        sub.add_flag("--strict", o->strict, "Exit 1 when any item failed or is missing (no GPU included)");
        sub.add_flag("--json", o->json, "Print the report as JSON on stdout");
        sub.add_option("--device", o->device, "Check only this CUDA device (default: all)")->check(tt::cli::int_at_least(0));
        sub.add_option("--cache-test-mib", o->cache_test_mib, "Size of the model-cache read test in MiB (0 skips it)")
            ->capture_default_str()
            ->check(CLI::Range(uint64_t(0), uint64_t(1) << 20));
        sub.add_option("--python", o->python, "Python interpreter to probe (default: $THINTENSOR_PYTHON or python3)");
        sub.add_option("--python-timeout", o->python_timeout_s, "Seconds to wait for the python probe")
            ->capture_default_str()
            ->check(tt::cli::positive_number());
        sub.add_flag("--all-kernels", o->all_kernels,
                     "Run every case of the kernel table (the sweep tests/gpu runs, a few seconds) instead of the quick ones");
        sub.add_option("--host-test-mib", o->host_test_mib,
                       "Size of the host memory-read and GEMV buffer in MiB, 0 skips them "
                       "(default: 512, or twice the last-level cache up to 1024)")
            ->capture_default_str()
            ->check(CLI::Range(uint64_t(0), uint64_t(16) << 10));
        sub.add_flag("--host-only", o->host_only,
                     "Measure the host alone (memory read, CPU GEMV by threads): no GPU, model-cache or python checks");
        sub.add_flag("--no-record", o->no_record, "Do not write the measured ceilings to $THINTENSOR_HOME/doctor.json");
        return [o]() -> int { return run(*o); };
    });
