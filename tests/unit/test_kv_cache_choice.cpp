// Which KV cache a run stores (runtime/kv_cache_choice.h): --kv-cache auto takes the profile's
// (8 bits under max-max-perf only), float and int8 are taken as asked; on CUDA, whose 8-bit cache
// needs every cached layer's head_dim a multiple of 16, an explicit int8 is refused naming the
// layer, and the profile's 8-bit cache falls back to the float one with a warning. The rule is
// checked here without a GPU; the CPU and host backends resolve the same request.
#include "backends/cpu/cpu_backend.h"
#include "backends/host/host_backend.h"
#include "convert/convert.h"
#include "core/error.h"
#include "format/archive.h"
#include "runtime/backend.h"
#include "runtime/kv_cache_choice.h"
#include "test_convert_util.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

using namespace tt;

namespace {

constexpr Profile k_profiles[] = {Profile::safe, Profile::balanced, Profile::max_performance, Profile::max_max_perf};

// An attention-only spec of n layers, n_kv_heads heads of head_dim each.
ModelSpec spec_of(int n_layers, int head_dim, int n_kv_heads = 2) {
    ModelSpec s;
    s.n_layers = n_layers;
    s.hidden_dim = 64;
    s.n_heads = 4;
    s.n_kv_heads = n_kv_heads;
    s.head_dim = head_dim;
    s.layers.assign(size_t(n_layers), LayerSpec{});
    return s;
}

// The message of the tt::Error that f throws, or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST(KvCacheChoice, AutoIsTheProfiles) {
    EXPECT_EQ(profile_kv_cache(Profile::max_max_perf), KvCacheType::int8);
    for (Profile p : {Profile::safe, Profile::balanced, Profile::max_performance})
        EXPECT_EQ(profile_kv_cache(p), KvCacheType::floating) << profile_name(p);
    for (Profile p : k_profiles) {
        EXPECT_EQ(resolve_kv_cache(KvCacheRequest::automatic, p), profile_kv_cache(p)) << profile_name(p);
        // An explicit request wins over every profile, max-max-perf's default included.
        EXPECT_EQ(resolve_kv_cache(KvCacheRequest::floating, p), KvCacheType::floating) << profile_name(p);
        EXPECT_EQ(resolve_kv_cache(KvCacheRequest::int8, p), KvCacheType::int8) << profile_name(p);
    }
}

TEST(KvCacheChoice, CudaTakesTheRequestWhereHeadDimAllows) {
    for (int hd : {16, 64, 128, 256}) {
        const ModelSpec s = spec_of(3, hd);
        EXPECT_EQ(cuda_kv_int8_unsupported_reason(s), "") << hd;
        for (Profile p : k_profiles) {
            const KvCacheChoice a = cuda_kv_cache(s, KvCacheRequest::automatic, p, "m.thin");
            EXPECT_EQ(a.type, profile_kv_cache(p)) << hd << " " << profile_name(p);
            EXPECT_EQ(a.warning, "");
            EXPECT_EQ(cuda_kv_cache(s, KvCacheRequest::int8, p, "m.thin").type, KvCacheType::int8);
            EXPECT_EQ(cuda_kv_cache(s, KvCacheRequest::floating, p, "m.thin").type, KvCacheType::floating);
        }
    }
}

TEST(KvCacheChoice, CudaRefusesAnExplicitInt8ItCannotHold) {
    const ModelSpec s = spec_of(5, 8);  // stories260K's head_dim
    EXPECT_EQ(cuda_kv_int8_unsupported_reason(s), "layer 0 has head_dim 8, and CUDA's 8-bit KV cache needs a multiple of 16");
    for (Profile p : k_profiles) {
        const std::string e = error_of([&] { (void)cuda_kv_cache(s, KvCacheRequest::int8, p, "m.thin"); });
        EXPECT_NE(e.find("m.thin: --kv-cache int8 on CUDA: layer 0 has head_dim 8, and CUDA's 8-bit KV cache needs a multiple of 16; "
                         "use --kv-cache float, or --device cpu or host"),
                  std::string::npos)
            << e;
        // The float cache asked for, or a profile whose default is float: no error, no warning.
        const KvCacheChoice f = cuda_kv_cache(s, KvCacheRequest::floating, p, "m.thin");
        EXPECT_EQ(f.type, KvCacheType::floating);
        EXPECT_EQ(f.warning, "");
    }
    const KvCacheChoice b = cuda_kv_cache(s, KvCacheRequest::automatic, Profile::balanced, "m.thin");
    EXPECT_EQ(b.type, KvCacheType::floating);
    EXPECT_EQ(b.warning, "");
}

TEST(KvCacheChoice, CudaFallsBackFromTheProfilesCacheWithAWarning) {
    const ModelSpec s = spec_of(5, 8);
    const KvCacheChoice c = cuda_kv_cache(s, KvCacheRequest::automatic, Profile::max_max_perf, "m.thin");
    EXPECT_EQ(c.type, KvCacheType::floating);
    // Not silent: the warning names the model, the profile, the layer and the way to choose.
    EXPECT_NE(c.warning.find("m.thin: --profile max-max-perf stores the KV cache in 8 bits, but layer 0 has head_dim 8"),
              std::string::npos)
        << c.warning;
    EXPECT_NE(c.warning.find("the KV cache stays in the weights' float dtype on CUDA"), std::string::npos) << c.warning;
    EXPECT_NE(c.warning.find("--kv-cache float"), std::string::npos) << c.warning;
}

TEST(KvCacheChoice, CudaNamesTheFirstLayerThatBreaksTheRule) {
    // Per-layer head sizes (Gemma 4's layout): only the layer whose own head_dim breaks it counts.
    ModelSpec s = spec_of(4, 16);
    s.layers[2].head_dim = 24;
    EXPECT_EQ(cuda_kv_int8_unsupported_reason(s), "layer 2 has head_dim 24, and CUDA's 8-bit KV cache needs a multiple of 16");
    EXPECT_NE(error_of([&] { (void)cuda_kv_cache(s, KvCacheRequest::int8, Profile::balanced, "g.thin"); }).find("layer 2 has head_dim 24"),
              std::string::npos);
    // A layer with no cache of its own (KV sharing) or a linear-attention layer stores no rows.
    s.layers[2].kv_from = 0;
    EXPECT_EQ(cuda_kv_int8_unsupported_reason(s), "");
    s.layers[2].kv_from = -1;
    s.layers[2].mixer = MixerKind::delta_net;
    EXPECT_EQ(cuda_kv_int8_unsupported_reason(s), "");
    s.layers[3].head_dim = 48;  // a multiple of 16
    EXPECT_EQ(cuda_kv_int8_unsupported_reason(s), "");
}

// The CPU reference and the host path resolve the same request (any head_dim): the profile's cache
// for auto, the request otherwise; kv_cache() and describe() say which.
TEST(KvCacheChoice, CpuAndHostBackendsResolveTheRequest) {
    struct Case {
        Profile profile;
        KvCacheRequest request;
        KvCacheType want;
    };
    for (const Case& c : {Case{Profile::max_max_perf, KvCacheRequest::automatic, KvCacheType::int8},
                          Case{Profile::max_max_perf, KvCacheRequest::floating, KvCacheType::floating},
                          Case{Profile::balanced, KvCacheRequest::automatic, KvCacheType::floating},
                          Case{Profile::balanced, KvCacheRequest::int8, KvCacheType::int8}}) {
        BackendOptions opt;
        opt.context = 16;
        opt.n_threads = 2;
        opt.profile = c.profile;
        opt.kv_cache = c.request;
        const std::unique_ptr<Backend> both[] = {make_cpu_backend(test::tinystories_f32_archive(), opt), make_host_backend(test::tinystories_f32_archive(), opt)};
        for (const auto& b : both) {
            EXPECT_EQ(b->kv_cache(), c.want) << b->describe() << " " << profile_name(c.profile) << " " << kv_cache_request_name(c.request);
            EXPECT_EQ(b->describe().find("8-bit KV cache") != std::string::npos, c.want == KvCacheType::int8) << b->describe();
        }
    }
}
