#include "backends/cuda/cuda_plan.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/measure.h"
#include "backends/cuda/nvml.h"
#include "backends/host/host_plan.h"
#include "core/error.h"
#include "format/archive.h"
#include "runtime/doctor.h"
#include "runtime/kv_cache_choice.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

namespace tt::cuda {

Bandwidths device_bandwidths(int device, bool measure, int n_threads, QuantScheme cpu_weights) {
    Bandwidths bw;
    const auto devices = list_devices();
    TT_ASSERT(device >= 0 && device < int(devices.size()));
    const auto record = load_doctor_record();
    const GpuCeilings* g = record ? record->gpu(device) : nullptr;
    const host::HostRatesSource cpu = host::fill_host_bandwidths(bw, record ? &*record : nullptr, n_threads, measure, cpu_weights);
    if (g && g->name == devices[size_t(device)].name && g->h2d_pinned_gbs > 0 && g->d2d_gbs > 0 && g->gemm_bf16_tflops > 0) {
        bw.h2d_pinned_gbs = g->h2d_pinned_gbs;
        bw.device_gbs = g->d2d_gbs;
        bw.gemm_tflops = g->gemm_bf16_tflops;
        // One date when the GPU and the CPU figures were measured in the same doctor run.
        const bool same_run = cpu.from == host::RatesFrom::record && record->host->date == record->date;
        bw.source = same_run ? fmt::format("doctor.json of {} (GPU and CPU); disk and host copy assumed", record->date)
                             : fmt::format("doctor.json of {}; {}; disk and host copy assumed", record->date, cpu.text);
    } else if (measure) {
        // A quick measurement beats a guess: about a second, and the prediction depends on it.
        bw.h2d_pinned_gbs = measure_h2d_gbs(device, true, size_t(256) << 20);
        bw.device_gbs = measure_d2d_gbs(device, size_t(512) << 20);
        bw.gemm_tflops = measure_gemm_tflops(device, 4096);
        bw.source = fmt::format("measured now (no doctor.json record of this GPU: `thintensor doctor` stores one); {}; "
                                "disk and host copy assumed",
                                cpu.text);
    } else {
        bw.source = fmt::format("assumed defaults (no doctor.json record of this GPU: `thintensor doctor` stores one); {}",
                                cpu.text);
    }
    return bw;
}

bool bandwidths_assumed(const Bandwidths& bw) {
    // The CPU figures count too: a streaming plan may put layers on the CPU.
    return bw.source.rfind("assumed", 0) == 0 || bw.source.find("CPU assumed") != std::string::npos;
}

bool can_register_read_only(int device) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrHostRegisterReadOnlySupported, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return v != 0;
}

// The assumed 768 MiB was 241 MiB over an H100's reading (2026-12-06): nearly two INT4 8B layers
// at 4 GiB. Kernel images loaded after the reading are the allocator slack's (plan.h).
uint64_t process_context_bytes(int device) {
    static std::mutex mu;
    static std::map<int, uint64_t> seen;
    std::lock_guard<std::mutex> lock(mu);
    if (const auto it = seen.find(device); it != seen.end()) return it->second;
    TT_CUDA_CHECK(cudaSetDevice(device));
    TT_CUDA_CHECK(cudaFree(nullptr));  // the context exists: NVML lists the process from then on
    const int64_t used = nvml_process_memory(device);
    return seen[device] = used > 0 ? uint64_t(used) : 0;
}

PlanInput device_plan_input(const Archive& archive, const ModelSpec& spec, const BackendOptions& opt, int device, int context,
                            bool can_register, bool measure) {
    PlanInput in = plan_input_from_archive(archive, spec);
    in.context = context;
    in.n_sequences = opt.n_sequences;
    // The cache the backend stores; its fallback warning is printed by the backend and by `plan`, not here.
    in.kv_cache = cuda_kv_cache(spec, opt.kv_cache, opt.profile, archive.path()).type;
    in.vram_budget = opt.vram_budget;
    in.expert_slots = opt.expert_slots;
    in.cpu_layers = opt.cpu_layers;
    in.ring_slots = opt.ring_slots;
    in.ram_budget = opt.ram_budget;
    TT_CUDA_CHECK(cudaSetDevice(device));
    size_t free_b = 0, total_b = 0;
    TT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    in.device_free = free_b;
    in.device_total = total_b;
    in.context_bytes = process_context_bytes(device);
    in.ram_available = host_available_ram();
    in.can_register = can_register && can_register_read_only(device);
    apply_profile_quant(in, archive, opt.profile);
    in.bw = device_bandwidths(device, measure, opt.n_threads, in.weights_quant);  // layers on the CPU read these weights
    return in;
}

void fill_split_gpus(SplitInput& in, const std::vector<int>& devices) {
    const auto listed = list_devices();
    const auto record = load_doctor_record();
    int current = 0;  // process_context_bytes makes each device current: the caller's is restored below
    TT_CUDA_CHECK(cudaGetDevice(&current));
    in.gpus.clear();
    for (int d : devices) {
        if (d < 0 || d >= int(listed.size())) fail("--gpus: no GPU {} ({} visible)", d, listed.size());
        SplitGpu g;
        g.device = d;
        g.name = fmt::format("cuda:{} {}", d, listed[size_t(d)].name);
        g.device_free = listed[size_t(d)].free_memory;  // list_devices read both just now
        g.device_total = listed[size_t(d)].total_memory;
        const GpuCeilings* c = record ? record->gpu(d) : nullptr;
        if (c && c->name == listed[size_t(d)].name && c->d2d_gbs > 0) g.device_gbs = c->d2d_gbs;
        g.context_bytes = process_context_bytes(d);  // the context each GPU of a split run would hold
        in.gpus.push_back(g);
    }
    TT_CUDA_CHECK(cudaSetDevice(current));
    // The layer split's hops and the all-reduce ring cross consecutive devices (and the last to the first).
    double gbs = 0, latency_us = 0;
    bool all = record.has_value();
    for (size_t i = 0; all && i < devices.size(); ++i) {
        const PeerLink* l = record->link(devices[i], devices[(i + 1) % devices.size()]);
        if (!l) {
            all = false;
            break;
        }
        gbs = gbs == 0 ? l->gbs : std::min(gbs, l->gbs);
        latency_us = std::max(latency_us, l->latency_us);
    }
    if (all && gbs > 0) {
        in.peer_gbs = gbs;
        in.peer_latency_s = latency_us * 1e-6;
        in.link_source = fmt::format("doctor.json of {}", record->date);
    } else {
        in.link_source = "assumed (no doctor.json record of these GPUs' links: `thintensor doctor` measures them)";
    }
}

}  // namespace tt::cuda
