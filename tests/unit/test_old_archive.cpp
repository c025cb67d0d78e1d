// Archives stay readable: one written by ThinTensor before the spec had a format version
// (tests/data/v1, spec version 1 with "layer_attn") loads, describes the same model as a fresh
// conversion, and computes the same logits, bit for bit, on the CPU reference.
#include "test_convert_util.h"

#include "backends/cpu/cpu_backend.h"
#include "convert/convert.h"
#include "format/archive.h"
#include "model/archive_spec.h"
#include "runtime/backend.h"

#include <gtest/gtest.h>

using namespace tt;
using namespace tt::test;

TEST(OldArchive, SpecVersion1LoadsAndMatchesAFreshConversion) {
    const fs::path old_path = fs::path(TT_SOURCE_DIR) / "tests/data/v1/tinystories-656k-bf16.thin";
    const Archive old_archive = Archive::open(old_path.string());
    // Written before format_version 2: no version, the layer kinds as "layer_attn".
    const nlohmann::json& old_spec = old_archive.metadata()["spec"];
    ASSERT_FALSE(old_spec.contains("format_version"));
    ASSERT_TRUE(old_spec.contains("layer_attn"));

    TempDir tmp;
    const fs::path fresh_path = tmp / "fresh.thin";
    ConvertOptions opt;
    opt.dtype = DType::bf16;
    convert_hf((fs::path(TT_SOURCE_DIR) / "models/tinystories-656k").string(), fresh_path.string(), opt);
    const Archive fresh = Archive::open(fresh_path.string());
    EXPECT_EQ(fresh.metadata()["spec"]["format_version"], k_spec_version);

    const ModelSpec a = spec_from_archive(old_archive), b = spec_from_archive(fresh);
    EXPECT_EQ(a, b);
    for (const auto& l : a.layers) {
        EXPECT_EQ(l.mixer, MixerKind::attention);
        EXPECT_EQ(l.ffn, FfnKind::dense);
    }
    BackendOptions cpu;
    cpu.n_threads = 2;
    const auto old_backend = make_cpu_backend(old_archive, cpu), fresh_backend = make_cpu_backend(fresh, cpu);
    const std::vector<int32_t> prompt = {1, 403, 407, 261, 378, 1189, 5, 71, 312, 270};
    const auto x = old_backend->forward(prompt, true);
    const std::vector<float> old_logits(x.begin(), x.end());
    const auto y = fresh_backend->forward(prompt, true);
    ASSERT_EQ(old_logits.size(), y.size());
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(old_logits[i], y[i]) << "logit " << i;
}
