// The host decode path (src/backends/host/host_layers.h) and the host backend (host_backend.h)
// against the CPU reference (backends/cpu/) on the hf-tiny fixtures, converted to f32 and bf16: the
// same prompt with every position's logits, f32 to ~1e-3 and bf16 within the bf16 bound the CUDA
// backend is held to (its KV cache holds bf16, the reference's f32). The layers' pool split is
// exercised with the parallel threshold at 0 (tiny models would otherwise run on one thread) and
// must give the same bits as the single-thread run. Also: the k/v rows a layer writes, decode
// bytes, rewind and n_past.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/ops.h"
#include "backends/host/host_backend.h"
#include "backends/host/host_layers.h"
#include "convert/convert.h"
#include "convert/quantize_archive.h"
#include "core/error.h"
#include "format/archive.h"
#include "format/safetensors.h"
#include "model/archive_spec.h"
#include "model/weights.h"
#include "runtime/compare.h"
#include "runtime/device_buffers.h"
#include "runtime/reference.h"
#include "runtime/rope.h"
#include "test_convert_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <tuple>
#include <unistd.h>

using namespace tt;
namespace fs = std::filesystem;

namespace {

const std::string k_shared = TT_SHARED_DIR;
constexpr int k_prompt = 20;

// One folder for this binary's archives, removed at exit; each (checkpoint, dtype) converted once.
const fs::path& temp_dir() {
    static const test::TempDir dir;
    return dir.path();
}

std::string convert_cached(const std::string& src, const std::string& name, DType dt) {
    static std::map<std::string, std::string> done;
    const std::string key = name + "." + std::string(dtype_name(dt));
    if (auto it = done.find(key); it != done.end()) return it->second;
    const std::string out = (temp_dir() / (key + ".thin")).string();
    ConvertOptions opt;
    opt.dtype = dt;
    convert_hf(src, out, opt);
    return done[key] = out;
}

std::string fixture_archive(const std::string& fixture, DType dt) {
    return convert_cached(k_shared + "/fixtures/hf-tiny/" + fixture, fixture, dt);
}

// qwen3_moe with a gated shared expert (Qwen2-MoE style) and layer 0 dense (mlp_only_layers):
// no fixture has either, so the shared expert's tensors are added here from a fixed seed.
std::string shared_expert_archive(DType dt) {
    const fs::path dir = temp_dir() / "qwen3_moe_shexp";
    if (!fs::exists(dir / "config.json")) {
        test::copy_checkpoint(k_shared + "/fixtures/hf-tiny/qwen3_moe", dir);
        nlohmann::json c = test::read_json(dir / "config.json");
        c["shared_expert_intermediate_size"] = 48;
        c["mlp_only_layers"] = {0};
        std::ofstream(dir / "config.json") << c.dump(2);
        std::vector<test::StTensor> ts = test::read_safetensors(dir / "model.safetensors");
        std::mt19937 rng(5);
        std::normal_distribution<float> d(0.0f, 0.15f);
        auto random_tensor = [&](const std::string& name, int64_t rows, int64_t cols) {
            std::vector<float> f(static_cast<size_t>(rows * cols));
            for (auto& v : f) v = d(rng);
            ts.push_back({name, DType::f32, {rows, cols}, std::string(reinterpret_cast<const char*>(f.data()), f.size() * 4)});
        };
        // layer 0 becomes a dense MLP of intermediate_size 128; layer 1 keeps its experts
        std::erase_if(ts, [](const test::StTensor& t) { return t.name.rfind("model.layers.0.mlp.", 0) == 0; });
        random_tensor("model.layers.0.mlp.gate_proj.weight", 128, 64);
        random_tensor("model.layers.0.mlp.up_proj.weight", 128, 64);
        random_tensor("model.layers.0.mlp.down_proj.weight", 64, 128);
        random_tensor("model.layers.1.mlp.shared_expert.gate_proj.weight", 48, 64);
        random_tensor("model.layers.1.mlp.shared_expert.up_proj.weight", 48, 64);
        random_tensor("model.layers.1.mlp.shared_expert.down_proj.weight", 64, 48);
        random_tensor("model.layers.1.mlp.shared_expert_gate.weight", 1, 64);
        test::write_safetensors(dir / "model.safetensors", ts);
    }
    return convert_cached(dir.string(), "qwen3_moe_shexp", dt);
}

std::vector<int32_t> fixture_prompt(const std::string& fixture) {
    std::vector<int32_t> ids =
        read_ids(SafetensorsFile(k_shared + "/fixtures/hf-tiny/" + fixture + "/reference.safetensors"), "input_ids");
    ids.resize(k_prompt);
    return ids;
}

std::vector<float> all_logits(Backend& b, const std::vector<int32_t>& ids) {
    const auto l = b.forward(ids, true);
    return {l.begin(), l.end()};
}

struct Case {
    std::string fixture;
    DType dt;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
    return info.param.fixture + "_" + std::string(dtype_name(info.param.dt));
}

class HostVsReference : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(HostVsReference, AllLogitsMatchTheCpuReference) {
    const Case& c = GetParam();
    const bool synthetic = c.fixture == "qwen3_moe_shexp";
    const Archive a = Archive::open(synthetic ? shared_expert_archive(c.dt) : fixture_archive(c.fixture, c.dt));
    const std::vector<int32_t> ids = fixture_prompt(synthetic ? "qwen3_moe" : c.fixture);
    const ModelSpec spec = spec_from_archive(a);
    if (synthetic) {
        ASSERT_EQ(spec.moe.shared_ffn_dim, 48);
        ASSERT_FALSE(spec.is_moe(0));
        ASSERT_TRUE(spec.is_moe(1));
    }
    BackendOptions opt;
    opt.context = 64;
    opt.n_threads = 2;
    auto ref = make_cpu_backend(a, opt);
    const std::vector<float> want = all_logits(*ref, ids);

    auto host = make_host_backend(a, opt);
    EXPECT_EQ(host->describe().rfind("host (2 threads, ", 0), 0u) << host->describe();
    const std::vector<float> got = all_logits(*host, ids);
    ASSERT_EQ(got.size(), want.size());
    const LogitComparison cmp = compare_logits(want.data(), got.data(), k_prompt, spec.vocab_size);
    ASSERT_TRUE(cmp.finite());
    if (c.dt == DType::f32) {
        EXPECT_LE(cmp.max_abs_diff, 1e-3) << "position " << cmp.max_abs_diff_pos;
        EXPECT_GE(cmp.min_cosine, 0.99999) << "position " << cmp.min_cosine_pos;
        EXPECT_EQ(cmp.top1_agreement, 1.0);
    } else {
        // note: the host's KV cache holds bf16 (as transformers' bf16 model and the CUDA backend
        // do), the reference's f32: the bound the CUDA backend's bf16 runs are held to.
        EXPECT_GE(cmp.min_cosine, 0.999) << "position " << cmp.min_cosine_pos;
        EXPECT_GE(cmp.top1_agreement, 0.85);
    }
    std::printf("%s %s: max |delta| %.2e, min cosine %.7f, top-1 %.2f\n", c.fixture.c_str(),
                std::string(dtype_name(c.dt)).c_str(), cmp.max_abs_diff, cmp.min_cosine, cmp.top1_agreement);

    // Every product and the attention split over a pool of 3 (the rows in blocks over the
    // threads, the heads over slots): the same bits as the calling thread alone.
    BackendOptions three = opt;
    three.n_threads = 3;
    auto split = make_host_backend(a, three, 0);
    EXPECT_EQ(all_logits(*split, ids), got);

    // The 8-bit KV cache (runtime/kv_cache_type.h): the host stores INT8 rows and scales and
    // scales after each product, the reference keeps the rounded rows in f32: the same numbers
    // summed in another order. Held to the f32 bound, split or not.
    if (c.dt != DType::f32) return;
    opt.kv_cache = three.kv_cache = KvCacheRequest::int8;
    const std::vector<float> want8 = all_logits(*make_cpu_backend(a, opt), ids);
    auto host8 = make_host_backend(a, opt);
    EXPECT_NE(host8->describe().find("8-bit KV cache"), std::string::npos) << host8->describe();
    const std::vector<float> got8 = all_logits(*host8, ids);
    const LogitComparison cmp8 = compare_logits(want8.data(), got8.data(), k_prompt, spec.vocab_size);
    EXPECT_LE(cmp8.max_abs_diff, 1e-3) << "8-bit KV cache, position " << cmp8.max_abs_diff_pos;
    EXPECT_EQ(cmp8.top1_agreement, 1.0);
    EXPECT_GT(compare_logits(want.data(), got8.data(), k_prompt, spec.vocab_size).max_abs_diff, 1e-6);  // it is 8-bit
    EXPECT_EQ(all_logits(*make_host_backend(a, three, 0), ids), got8);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HostVsReference,
                         ::testing::Values(Case{"llama", DType::f32}, Case{"llama", DType::bf16},
                                           Case{"mistral", DType::f32}, Case{"qwen2", DType::f32},
                                           Case{"qwen2", DType::bf16}, Case{"qwen3", DType::f32},
                                           Case{"qwen3", DType::bf16}, Case{"phi3", DType::f32},
                                           Case{"gemma3_text", DType::f32}, Case{"gemma3_text", DType::bf16},
                                           Case{"qwen3_moe", DType::f32}, Case{"qwen3_moe", DType::bf16},
                                           Case{"mixtral", DType::f32}, Case{"mixtral", DType::bf16},
                                           Case{"qwen3_moe_shexp", DType::f32},
                                           Case{"qwen3_moe_shexp", DType::bf16}),
                         case_name);

namespace {

// The reference's k and v rows of layer il for the token whose residual input is x at pos
// (cpu_backend.cpp's steps: input_layernorm, k_proj/v_proj with biases, k_norm, RoPE), in f32.
void reference_kv(const ModelSpec& s, const LayerWeights& L, const RopeTable& rope, const float* x, int pos,
                  std::vector<float>& k, std::vector<float>& v) {
    ThreadPool one(1);
    std::vector<float> h(static_cast<size_t>(s.hidden_dim));
    cpu::rmsnorm(x, *L.attn_norm, s.norm_weight_offset, s.norm_eps, h.data(), s.hidden_dim);
    k.resize(size_t(s.kv_dim()));
    v.resize(size_t(s.kv_dim()));
    cpu::linear(one, h.data(), 1, *L.wk, L.bk, k.data());
    cpu::linear(one, h.data(), 1, *L.wv, L.bv, v.data());
    for (int g = 0; g < s.n_kv_heads; ++g) {
        float* kh = k.data() + size_t(g * s.head_dim);
        if (s.qk_norm) cpu::rmsnorm(kh, *L.k_norm, s.norm_weight_offset, s.norm_eps, kh, s.head_dim);
        apply_rope(kh, pos, rope);
    }
}

}  // namespace

TEST(HostLayers, KvRowsAreTheReferencesRoundedToTheCacheDtype) {
    // qwen2: k/v biases; qwen3: k_norm; gemma3: (1 + w) norms and the local RoPE of sliding layers.
    for (const std::string fixture : {"qwen2", "qwen3", "gemma3_text"})
        for (DType kv_dt : {DType::bf16, DType::f16, DType::f32}) {
            SCOPED_TRACE(fixture + " kv " + std::string(dtype_name(kv_dt)));
            const Archive a = Archive::open(fixture_archive(fixture, DType::f32));
            const ModelSpec s = spec_from_archive(a);
            const ModelWeights w = bind_weights(a, s);
            ThreadPool pool(2);
            const int il = s.n_layers - 1;  // gemma3: layer 2 is sliding
            host::HostLayers layers(s, w, {il}, 16, kv_dt, pool);
            layers.set_min_parallel(0);
            EXPECT_TRUE(layers.has(il));
            EXPECT_FALSE(layers.has(0));
            EXPECT_EQ(layers.kv_row_bytes(), size_t(s.kv_dim()) * dtype_size(kv_dt));
            const RopeTable rope = make_rope_table(s.rope_for_layer(il));
            std::mt19937 rng(3);
            std::normal_distribution<float> d(0.0f, 1.0f);
            std::vector<float> x(static_cast<size_t>(s.hidden_dim)), k, v, row(static_cast<size_t>(s.kv_dim()));
            // One ulp of kv_dt, relative: a reference value next to a rounding boundary may round the
            // other way after the products' f32 sums in another order.
            const float ulp = kv_dt == DType::bf16 ? 0x1p-7f : kv_dt == DType::f16 ? 0x1p-10f : 0x1p-20f;
            int n = 0, exact = 0;
            for (int pos = 0; pos < 12; ++pos) {
                for (auto& e : x) e = d(rng);
                reference_kv(s, w.layers[size_t(il)], rope, x.data(), pos, k, v);
                std::vector<float> y = x;
                layers.forward(il, y.data(), pos);
                for (const auto& [cache, want, what] :
                     {std::tuple{layers.k_cache(il), &k, "k"}, std::tuple{layers.v_cache(il), &v, "v"}}) {
                    const auto* at = static_cast<const uint8_t*>(cache) + size_t(pos) * layers.kv_row_bytes();
                    to_f32(at, kv_dt, row.data(), row.size());
                    std::vector<float> rounded = *want;
                    for (float& e : rounded)
                        e = kv_dt == DType::bf16 ? bf16_to_f32(f32_to_bf16(e)) : kv_dt == DType::f16 ? f16_to_f32(f32_to_f16(e)) : e;
                    for (size_t i = 0; i < row.size(); ++i) {
                        ASSERT_NEAR(row[i], (*want)[i], ulp * std::fabs((*want)[i]) + 1e-6f)
                            << what << " pos " << pos << " [" << i << "]";
                        ++n;
                        exact += row[i] == rounded[i];
                    }
                }
            }
            // bf16/f16 rows are the reference's rounded, all but the rare near-boundary value (f32
            // rows differ from it in the last bits: the sums' order).
            if (kv_dt != DType::f32) {
                EXPECT_GE(exact, n * 98 / 100) << exact << " of " << n;
            }
            std::printf("%s kv %s: %d of %d cached values equal the reference's rounded\n", fixture.c_str(),
                        std::string(dtype_name(kv_dt)).c_str(), exact, n);
        }
}

TEST(HostLayers, DecodeBytesAreTheLayersBlocks) {
    // A quantized archive's blocks hold each matrix's values and its scales tensor: both are read.
    const std::string int4 = (temp_dir() / "qwen2.int4.thin").string();
    {
        ThreadPool pool(2);
        quantize_archive(Archive::open(fixture_archive("qwen2", DType::bf16)), QuantScheme::int4, k_int4_default_group, int4, pool);
    }
    for (const std::string fixture : {"qwen2", "qwen2 int4", "qwen3_moe", "qwen3_moe_shexp"}) {
        SCOPED_TRACE(fixture);
        const Archive a = Archive::open(fixture == "qwen3_moe_shexp" ? shared_expert_archive(DType::bf16)
                                        : fixture == "qwen2 int4"    ? int4
                                                                     : fixture_archive(fixture, DType::bf16));
        const ModelSpec s = spec_from_archive(a);
        const ModelWeights w = bind_weights(a, s);
        ThreadPool pool(1);
        host::HostLayers layers(s, w, {}, 4, DType::bf16, pool);
        for (int il = 0; il < s.n_layers; ++il) {
            uint64_t want = 0;
            for (const ArchiveTensor& t : a.tensors()) {
                if (t.block == fmt::format("layer.{}", il)) want += t.view.nbytes;
                if (t.block == fmt::format("layer.{}.expert.0", il)) want += uint64_t(s.moe.top_k) * t.view.nbytes;
            }
            EXPECT_EQ(layers.decode_bytes(il), want) << "layer " << il;
        }
    }
}

TEST(HostBackend, DecodeRewindAndNPast) {
    const Archive a = Archive::open(fixture_archive("gemma3_text", DType::bf16));  // sliding window 8 < 20
    const std::vector<int32_t> ids = fixture_prompt("gemma3_text");
    BackendOptions opt;
    opt.context = 24;
    opt.n_threads = 2;
    auto b = make_host_backend(a, opt);
    EXPECT_EQ(b->context_size(), 24);
    EXPECT_EQ(b->n_past(), 0);
    const std::vector<float> all = all_logits(*b, ids);
    EXPECT_EQ(b->n_past(), k_prompt);
    const size_t V = all.size() / size_t(k_prompt);

    // Prefill is the decode step token after token: feeding one at a time gives the same bits.
    b->rewind(0);
    EXPECT_EQ(b->n_past(), 0);
    for (int t = 0; t < k_prompt; ++t) {
        const auto l = b->forward(std::span<const int32_t>(&ids[size_t(t)], 1), false);
        ASSERT_EQ(l.size(), V);
        ASSERT_TRUE(std::equal(l.begin(), l.end(), all.begin() + std::ptrdiff_t(size_t(t) * V))) << "position " << t;
    }
    // Rewinding keeps the prefix: the last 8 positions again, from position 12.
    b->rewind(12);
    EXPECT_EQ(b->n_past(), 12);
    const auto tail = b->forward(std::span<const int32_t>(ids.data() + 12, 8), true);
    EXPECT_TRUE(std::equal(tail.begin(), tail.end(), all.begin() + std::ptrdiff_t(12 * V)));
    EXPECT_EQ(b->n_past(), k_prompt);
    // Without all_logits: the last position's only.
    b->rewind(12);
    const auto last = b->forward(std::span<const int32_t>(ids.data() + 12, 8), false);
    ASSERT_EQ(last.size(), V);
    EXPECT_TRUE(std::equal(last.begin(), last.end(), all.begin() + std::ptrdiff_t(19 * V)));

    // The context is the cache's size: 20 + 5 > 24 is refused and leaves n_past as it was.
    EXPECT_THROW(b->forward(std::vector<int32_t>(5, 1), false), Error);
    EXPECT_EQ(b->n_past(), k_prompt);
    EXPECT_THROW(b->forward(std::vector<int32_t>{}, false), Error);
    EXPECT_THROW(b->forward(std::vector<int32_t>{1, 100000}, false), Error);
    EXPECT_EQ(b->n_past(), k_prompt);
    b->forward(std::vector<int32_t>(4, 1), false);
    EXPECT_EQ(b->n_past(), 24);
}

TEST(HostBackend, MakeBackendKnowsHost) {
    const Archive a = Archive::open(fixture_archive("llama", DType::f32));
    BackendOptions opt;
    opt.device = "host";
    opt.context = 8;
    opt.n_threads = 1;
    auto b = make_backend(a, opt);
    EXPECT_EQ(b->describe().rfind("host (1 threads, ", 0), 0u) << b->describe();
    opt.device = "hots";
    try {
        make_backend(a, opt);
        FAIL() << "an unknown device was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("use cpu, host, cuda or cuda:N"), std::string::npos) << e.what();
    }
}
