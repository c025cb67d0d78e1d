// Every case of the kernel-check table (src/backends/cuda/kernel_cases.h), the one the doctor's
// self-test runs a quick subset of, as one gtest case each: every CUDA kernel family against the
// CPU reference operators on random inputs, several shapes including odd ones, measured by
// relative error ||gpu - cpu|| / ||cpu||. Runs on the GPU machine (tests/gpu/run.sh); CI only
// builds it. Run one family with --gtest_filter='Table/KernelCase.MatchesCpu/gemv_*'.
#include "backends/cuda/kernel_cases.h"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/self_test.h"
#include "core/dtype.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace tt;

namespace {

class KernelCase : public ::testing::TestWithParam<size_t> {};

}  // namespace

TEST_P(KernelCase, MatchesCpu) {
    const cuda::KernelCase& c = cuda::kernel_cases()[GetParam()];
    const cuda::KernelCheck r = cuda::run_kernel_case(c, 0);
    ASSERT_TRUE(r.error.empty()) << c.op << " " << dtype_name(c.dtype) << " " << c.shape << ": " << r.error;
    ASSERT_FALSE(r.outputs.empty());
    for (const cuda::Measured& m : r.outputs)
        EXPECT_LE(m.err, m.tol) << c.op << " " << dtype_name(c.dtype) << " " << c.shape << ": " << m.what;
    EXPECT_TRUE(r.passed);
}

INSTANTIATE_TEST_SUITE_P(Table, KernelCase, ::testing::Range(size_t(0), cuda::kernel_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return cuda::kernel_case_id(info.param); });

// The doctor's subset reaches every op of the table, and the self-test runs exactly it.
TEST(KernelTable, DoctorRunsAQuickCaseOfEveryOp) {
    std::set<std::string> ops, quick_ops;
    size_t n_quick = 0;
    for (const auto& c : cuda::kernel_cases()) {
        ops.insert(c.op);
        if (c.quick) quick_ops.insert(c.op), ++n_quick;
    }
    std::set<std::string> ops_without_quick;
    for (const auto& op : ops)
        if (!quick_ops.count(op)) ops_without_quick.insert(op);
    // The fused RoPE decode path is a sweep-only family (the doctor checks decode_attention and rope_qkv).
    EXPECT_EQ(ops_without_quick, (std::set<std::string>{"decode_attention rope"}));
    const auto checks = cuda::self_test_kernels(0, false);
    EXPECT_EQ(checks.size(), n_quick);
    for (const auto& r : checks) EXPECT_TRUE(r.passed) << r.kernel << " " << r.dtype << " " << r.shape << " " << r.error;
    // (Every case, the doctor's --all-kernels, is Table/KernelCase.MatchesCpu above: not run twice.)
}

TEST(KernelTable, PrefillAttentionSupport) {
    EXPECT_TRUE(cuda::prefill_attention_supported(DType::bf16, 128));
    EXPECT_TRUE(cuda::prefill_attention_supported(DType::f16, 64));
    EXPECT_FALSE(cuda::prefill_attention_supported(DType::f32, 128));
    EXPECT_FALSE(cuda::prefill_attention_supported(DType::bf16, 96));
}
