#include "runtime/backend.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/host/host_backend.h"
#include "core/error.h"
#include "core/log.h"
#include "format/archive.h"
#include "model/model_spec.h"
#include "runtime/sampler.h"

#include <fmt/format.h>

#include <vector>

namespace tt {

int32_t Backend::forward_sample(std::span<const int32_t> tokens, Sampler& sampler, std::span<const int32_t> history) {
    return sampler.sample(forward(tokens, false), history);
}

static std::vector<BackendFactory>& factories() {
    static std::vector<BackendFactory> f;
    return f;
}

void register_backend(BackendFactory f) { factories().push_back(std::move(f)); }

std::string default_device() {
    for (const auto& f : factories())
        if (f.name == "cuda" && f.available(nullptr)) return "cuda";
    return "cpu";
}

std::string cpu_only_reason(const ModelSpec& s) {
    // Qwen3.5's linear-attention layers and gated attention have no kernels outside the CPU
    // reference yet: say so rather than run something else.
    if (s.has_delta_net() || s.attn_output_gate)
        return fmt::format("{} has Gated DeltaNet linear-attention layers and gated attention, which this build runs on the "
                           "CPU reference backend only", s.hf_architecture);
    return {};
}

std::string default_device(const ModelSpec& spec, std::string* why) {
    std::string d = default_device();
    if (d != "cpu") {
        if (std::string r = cpu_only_reason(spec); !r.empty()) {
            if (why) *why = std::move(r);
            d = "cpu";
        }
    }
    return d;
}

std::unique_ptr<Backend> make_backend(const Archive& archive, const BackendOptions& opt) {
    if (opt.device == "cpu") return make_cpu_backend(archive, opt);
    if (const std::string why = cpu_only_reason(spec_from_json(archive.metadata()["spec"])); !why.empty())
        fail("--device {}: {}: {}; use --device cpu", opt.device, archive.path(), why);
    if (opt.device == "host") return make_host_backend(archive, opt);
    const std::string family = opt.device.substr(0, opt.device.find(':'));
    if (family != "cuda") fail("--device: unknown device '{}' (use cpu, host, cuda or cuda:N)", opt.device);
    for (const auto& f : factories()) {
        if (f.name != family) continue;
        std::string why;
        if (!f.available(&why)) fail("--device {}: no usable GPU: {}", opt.device, why);
        return f.create(archive, opt);
    }
    fail("--device {}: this build of thintensor has no CUDA backend (built without nvcc)", opt.device);
}

}  // namespace tt
