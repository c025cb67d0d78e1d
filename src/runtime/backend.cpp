#include "runtime/backend.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/host/host_backend.h"
#include "core/error.h"
#include "core/log.h"
#include "format/archive.h"
#include "model/model_spec.h"
#include "model/weight_quant.h"
#include "runtime/sampler.h"

#include <fmt/format.h>

#include <vector>

namespace tt {

int32_t Backend::forward_sample(std::span<const int32_t> tokens, Sampler& sampler, std::span<const int32_t> history) {
    return sampler.sample(forward(tokens, false), history);
}

void Backend::select_sequence(int seq) {
    if (seq != 0) fail("{}: holds one sequence, so sequence {} does not exist", describe(), seq);
}

std::span<const float> Backend::decode_batch(std::span<const int> seqs, std::span<const int32_t> tokens) {
    TT_ASSERT(seqs.size() == tokens.size() && !seqs.empty());
    batch_logits_.clear();
    for (size_t i = 0; i < seqs.size(); ++i) {
        select_sequence(seqs[i]);
        const auto row = forward(tokens.subspan(i, 1), false);
        batch_logits_.insert(batch_logits_.end(), row.begin(), row.end());
    }
    return batch_logits_;
}

void Backend::decode_batch_greedy(std::span<const int> seqs, std::span<const int32_t> tokens, std::span<int32_t> ids) {
    TT_ASSERT(ids.size() == seqs.size());
    const auto rows = decode_batch(seqs, tokens);
    const size_t vocab = rows.size() / seqs.size();
    for (size_t i = 0; i < seqs.size(); ++i) ids[i] = Sampler::argmax(rows.subspan(i * vocab, vocab));
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

std::string cuda_unsupported_reason(const ModelSpec& s) {
    // A shared expert runs (Qwen2-MoE / Qwen3.5-MoE); the MoE kernels take no post-norm and no
    // expert biases.
    if (s.has_moe() && (s.sandwich_norm || s.mlp_bias))
        return fmt::format("the CUDA backend does not run mixture-of-experts layers with {} yet",
                           s.sandwich_norm ? "sandwich norms" : "MLP biases");
    return {};
}

std::string host_unsupported_reason(const ModelSpec& s) {
    if (s.arch == Arch::gemma4)
        return fmt::format("{} has per-layer inputs, KV sharing and per-layer head sizes, which the host decode path does not "
                           "compute yet", s.hf_architecture);
    if (s.has_delta_net() || s.attn_output_gate)
        return fmt::format("{} has Gated DeltaNet linear-attention layers and gated attention, which the host decode path "
                           "does not compute yet", s.hf_architecture);
    return {};
}

std::string default_device(const ModelSpec& spec, std::string* why) {
    std::string d = default_device();
    if (d != "cpu") {
        if (std::string r = cuda_unsupported_reason(spec); !r.empty()) {
            if (why) *why = std::move(r);
            d = "cpu";
        }
    }
    return d;
}

std::unique_ptr<Backend> make_backend(const Archive& archive, const BackendOptions& opt) {
    if (opt.device == "cpu") return make_cpu_backend(archive, opt);
    if (opt.device == "host")
        if (const std::string why = host_unsupported_reason(spec_from_json(archive.metadata()["spec"])); !why.empty())
            fail("--device host: {}: {}; use --device {}", archive.path(), why,
                 cuda_unsupported_reason(spec_from_json(archive.metadata()["spec"])).empty() ? "cpu or cuda" : "cpu");
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
