// thintensor plan MODEL: where the fit planner puts each layer for a VRAM budget (resident,
// streamed over PCIe, or computed on the CPU with --threads threads), what VRAM and pinned RAM
// hold, the bytes per token over each link and the predicted speed, before loading anything. The
// CUDA backend runs the same planner on the same inputs (src/backends/cuda/cuda_plan.h) and
// prints the plan's summary line when it loads.
#include "backends/host/host_plan.h"
#include "cli/command.h"
#include "cli/model_args.h"
#include "core/byte_size.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "format/archive.h"
#include "model/archive_spec.h"
#include "model/weight_quant.h"
#include "runtime/doctor.h"
#include "runtime/gpu_split.h"
#include "runtime/kv_cache_choice.h"
#include "runtime/model_source.h"
#include "runtime/plan.h"

#ifdef THINTENSOR_HAVE_CUDA
#include "backends/cuda/cuda_plan.h"
#include "backends/cuda/device_info.h"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <memory>

namespace {

struct Opts {
    tt::cli::ModelArgs model;
    std::string device_memory;  // plan for a GPU of this size that is not here
    bool json = false;
};

constexpr int k_default_context = 4096;

// `plan --gpus A,B,...`: the layer split and tensor parallelism over those GPUs (`one`: the
// model's plan input for the first), from --device-memory sizes (GPUs that are not here) or the
// GPUs here.
int print_split(const Opts& o, const std::string& path, const tt::PlanInput& one, const std::vector<int>& gpus,
                const std::vector<uint64_t>& sizes, int context, tt::Profile profile) {
    using namespace tt;
    SplitInput in;
    in.one = one;
    if (!sizes.empty()) {
        for (size_t i = 0; i < gpus.size(); ++i) {
            SplitGpu g;
            g.device = gpus[i];
            g.device_total = g.device_free = sizes.size() == 1 ? sizes[0] : sizes[i];
            g.name = fmt::format("a GPU with {}", format_bytes(double(g.device_total)));
            in.gpus.push_back(g);
        }
        in.link_source = "assumed (--device-memory: GPUs that are not here)";
    } else {
#ifdef THINTENSOR_HAVE_CUDA
        cuda::fill_split_gpus(in, gpus);
#else
        fail("this build has no CUDA backend; pass --device-memory SIZE to plan for GPUs that are not here");
#endif
    }
    const SplitPlan p = make_split_plan(in);
    for (const auto& w : p.warnings) log::warn("{}", w);
    if (o.json) {
        nlohmann::json j = {{"model", path}, {"gpus", gpus}, {"context", context}, {"profile", profile_name(profile)}, {"split", p.to_json()}};
        fmt::print("{}\n", j.dump(2));
        return 0;
    }
    fmt::print("model   {}\ngpus    {}\ncontext {} tokens, profile {}\n\n", path, o.model.gpus, context, profile_name(profile));
    fmt::print("{}\n{}\n", p.table(), p.summary());
    return 0;
}

int run(const Opts& o) {
    using namespace tt;
    const std::string path = resolve_model(o.model.model);
    const Archive a = Archive::open(path);
    const ModelSpec spec = spec_from_archive(a);
    if (o.model.context > spec.max_context) fail("--context {} exceeds the model's maximum of {}", o.model.context, spec.max_context);
    const int context = o.model.context > 0 ? o.model.context : std::min(spec.max_context, k_default_context);
    BackendOptions bo;
    bo.context = context;
    bo.n_threads = o.model.threads;  // the CPU's GEMV rate for layers on the CPU depends on it
    bo.profile = parse_profile(o.model.profile);
    // Quantized weights: stored, or quantized at load (apply_profile_quant counts those bytes).
    bo.kv_cache = parse_kv_cache_request(o.model.kv_cache);
    if (!o.model.vram_budget.empty()) bo.vram_budget = parse_byte_size(o.model.vram_budget, "--vram-budget");
    if (!o.model.ram_budget.empty()) bo.ram_budget = parse_byte_size(o.model.ram_budget, "--ram-budget");
    bo.expert_slots = o.model.expert_slots;
    bo.cpu_layers = o.model.cpu_layers;
    bo.ring_slots = o.model.ring_slots;
    bo.n_threads = o.model.threads;
    if (bo.expert_slots > 0 && !spec.has_moe()) fail("--expert-slots: {} has no mixture-of-experts layers", o.model.model);
    if (o.model.device == "cpu" || o.model.device == "host")
        fail("--device {}: the planner places weights in GPU memory; the {} backend reads them from the mapping in place",
             o.model.device, o.model.device == "cpu" ? "CPU" : "host");

    // The KV cache the CUDA backend would store: an explicit int8 it cannot hold is refused, and the
    // profile's 8-bit cache falling back to the float one is said here as the backend says it.
    const KvCacheChoice kv = cuda_kv_cache(spec, bo.kv_cache, bo.profile, path);
    if (!kv.warning.empty()) log::warn("{}", kv.warning);

    // --gpus: the first is the one-GPU plan's device; two or more plan a split (runtime/gpu_split.h).
    const std::vector<int> gpus = o.model.gpus.empty() ? std::vector<int>{} : parse_gpu_list(o.model.gpus);
    // --device-memory: one size for every GPU, or one per --gpus entry.
    std::vector<uint64_t> sizes;
    if (!o.device_memory.empty()) {
        std::string rest = o.device_memory;
        for (size_t at; (at = rest.find(',')) != std::string::npos; rest.erase(0, at + 1))
            sizes.push_back(parse_byte_size(rest.substr(0, at), "--device-memory"));
        sizes.push_back(parse_byte_size(rest, "--device-memory"));
        if (sizes.size() > 1 && sizes.size() != std::max<size_t>(1, gpus.size()))
            fail("--device-memory {}: {} sizes for {} GPUs (give one size for every GPU, or one per --gpus entry)", o.device_memory,
                 sizes.size(), std::max<size_t>(1, gpus.size()));
    }

    PlanInput in;
    std::string gpu;
    if (!o.device_memory.empty()) {
        in = plan_input_from_archive(a, spec);
        in.context = context;
        in.vram_budget = bo.vram_budget;
        in.ram_budget = bo.ram_budget;
        in.expert_slots = bo.expert_slots;
        in.cpu_layers = bo.cpu_layers;
        in.ring_slots = bo.ring_slots;
        in.kv_cache = kv.type;
        in.device_total = in.device_free = sizes[0];
        apply_profile_quant(in, a, bo.profile);
        in.ram_available = host_available_ram();
        // The GPU is not here, but the CPU is: its figures come from doctor.json or are measured now.
        const auto record = load_doctor_record();
        const host::HostRatesSource cpu = host::fill_host_bandwidths(in.bw, record ? &*record : nullptr, bo.n_threads, true,
                                                                   in.weights_quant);
        in.bw.source = fmt::format("assumed defaults (--device-memory: a GPU that is not here); {}", cpu.text);
        gpu = fmt::format("a GPU with {} (--device-memory)", format_bytes(double(in.device_total)));
    } else {
#ifdef THINTENSOR_HAVE_CUDA
        int device = gpus.empty() ? 0 : gpus[0];
        if (gpus.empty() && o.model.device.size() > 5 && o.model.device.rfind("cuda:", 0) == 0) device = std::stoi(o.model.device.substr(5));
        std::string why;
        const auto devices = cuda::list_devices(&why);
        if (devices.empty()) fail("no GPU visible ({}); pass --device-memory SIZE to plan for a GPU that is not here", why);
        if (device < 0 || device >= int(devices.size())) fail("--device {}: no such GPU ({} visible)", o.model.device, devices.size());
        in = cuda::device_plan_input(a, spec, bo, device, context, true, true);
        gpu = fmt::format("cuda:{} {} ({} free of {})", device, devices[size_t(device)].name, format_bytes(double(in.device_free)),
                          format_bytes(double(in.device_total)));
#else
        fail("this build has no CUDA backend; pass --device-memory SIZE to plan for a GPU that is not here");
#endif
    }
    if (gpus.size() >= 2) return print_split(o, path, in, gpus, sizes, context, bo.profile);
    const Plan p = make_plan(in);
    for (const auto& w : p.warnings) log::warn("{}", w);
    if (o.json) {
        nlohmann::json j = {{"model", path}, {"gpu", gpu}, {"context", context}, {"profile", profile_name(bo.profile)}, {"plan", p.to_json()}};
        fmt::print("{}\n", j.dump(2));
        return 0;
    }
    fmt::print("model   {}\ngpu     {}\ncontext {} tokens, profile {}\n\n", path, gpu, context, profile_name(bo.profile));
    fmt::print("{}\n{}\n", p.table(), p.summary());
    return 0;
}

}  // namespace

static tt::cli::Registration reg("plan", "Show where the model's layers go for a VRAM budget and the predicted speed", 65,
                                 [](CLI::App& sub) -> tt::cli::RunFn {
                                     auto o = std::make_shared<Opts>();
                                     tt::cli::add_model_args(sub, o->model);
                                     sub.add_option("--device-memory", o->device_memory,
                                                    "Plan for a GPU of this much memory instead of the one here, e.g. 8GiB");
                                     sub.add_flag("--json", o->json, "Print JSON");
                                     return [o]() -> int { return run(*o); };
                                 });
