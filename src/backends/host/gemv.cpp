#include "backends/host/gemv.h"

#include "backends/host/gemv_kernels.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/quant.h"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tt::host {

const char* isa_name(Isa isa) {
    switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512vnni: return "avx512-vnni";
    }
    return "?";
}

namespace {
#if defined(__x86_64__)
// F16C from cpuid leaf 1 (ecx bit 29): clang's __builtin_cpu_supports does not know "f16c".
bool has_f16c() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}
#endif

bool detect(Isa isa) {
#if defined(__x86_64__)
    switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case Isa::avx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    case Isa::avx512vnni: return detect(Isa::avx512) && __builtin_cpu_supports("avx512vnni");
    }
    return false;
#else
    return isa == Isa::scalar;
#endif
}
}  // namespace

bool isa_supported(Isa isa) {
    // note: once per process: every kernel call asserts its ISA, and cpuid traps to the
    // hypervisor in a VM (microseconds).
    static const bool supported[4] = {detect(Isa::scalar), detect(Isa::avx2), detect(Isa::avx512), detect(Isa::avx512vnni)};
    return supported[int(isa)];
}

namespace {
// TT_HOST_ISA=scalar|avx2|avx512|avx512-vnni runs a narrower kernel set than the CPU's best: the
// A/B of a kernel in one binary (docs/BENCHMARKS.md). One this CPU lacks is an error.
Isa chosen_isa() {
    const Isa best = isa_supported(Isa::avx512vnni) ? Isa::avx512vnni
                     : isa_supported(Isa::avx512)   ? Isa::avx512
                     : isa_supported(Isa::avx2)     ? Isa::avx2
                                                    : Isa::scalar;
    const char* forced = std::getenv("TT_HOST_ISA");
    if (!forced || !*forced) return best;
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512vnni})
        if (std::strcmp(forced, isa_name(isa)) == 0) {
            if (!isa_supported(isa)) fail("TT_HOST_ISA={}: this CPU has no {} kernels (its best: {})", forced, forced, isa_name(best));
            return isa;
        }
    fail("TT_HOST_ISA={}: not one of scalar, avx2, avx512, avx512-vnni", forced);
}
}  // namespace

Isa best_isa() {
    static const Isa best = chosen_isa();
    return best;
}

namespace {
float element(const uint8_t* p, DType dt) {
    if (dt == DType::i8) return float(int8_t(*p));
    float v;
    to_f32(p, dt, &v, 1);
    return v;
}

void rows_scalar(const void* w, DType dt, int64_t cols, int64_t stride, const float* x, float* y, int64_t r0, int64_t r1,
                 bool accumulate) {
    const size_t es = dtype_size(dt);
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = static_cast<const uint8_t*>(w) + uint64_t(r * stride) * es;
        float acc = 0;
        for (int64_t c = 0; c < cols; ++c) acc += element(row + uint64_t(c) * es, dt) * x[c];
        y[r - r0] = (accumulate ? y[r - r0] : 0.0f) + acc;
    }
}

void weighted_sum_scalar(const void* w, DType dt, int64_t n_rows, int64_t cols, int64_t stride, const float* p, float* y) {
    const size_t es = dtype_size(dt);
    for (int64_t j = 0; j < n_rows; ++j) {
        const uint8_t* row = static_cast<const uint8_t*>(w) + uint64_t(j * stride) * es;
        for (int64_t c = 0; c < cols; ++c) y[c] += p[j] * element(row + uint64_t(c) * es, dt);
    }
}

void check_kernel_args(DType dt, Isa isa) {
    TT_ASSERT(dt == DType::f32 || dt == DType::f16 || dt == DType::bf16 || dt == DType::i8, "host kernels on {} data", dtype_name(dt));
    TT_ASSERT(isa_supported(isa), "{} kernels on a CPU without them", isa_name(isa));
}

// The rows [r0, r1) of W (rows `stride` apart) times x into y[0 : r1 - r0].
void rows_any(const void* w, DType dt, int64_t cols, int64_t stride, const float* x, float* y, int64_t r0, int64_t r1,
              bool accumulate, Isa isa) {
    check_kernel_args(dt, isa);
    switch (isa) {
    case Isa::scalar: rows_scalar(w, dt, cols, stride, x, y, r0, r1, accumulate); return;
    case Isa::avx2: detail::rows_avx2(w, dt, cols, stride, x, y, r0, r1, accumulate); return;
    case Isa::avx512:
    case Isa::avx512vnni: detail::rows_avx512(w, dt, cols, stride, x, y, r0, r1, accumulate); return;
    }
}

// Quantized rows, scalar: the sums of gemv_rows.h's qrows in column order.
void qrows_scalar(const uint8_t* q, const float* scales, bool int4, int64_t group, int64_t cols, const float* x, float* y,
                  int64_t r0, int64_t r1, bool accumulate) {
    const uint64_t row_bytes = int4 ? uint64_t(cols / 2) : uint64_t(cols);
    const int64_t row_scales = int4 ? cols / group : 1;
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* p = q + uint64_t(r) * row_bytes;
        const float* s = scales + r * row_scales;
        float v = 0;
        if (int4) {
            for (int64_t g = 0; g < row_scales; ++g) {
                float a = 0;
                for (int64_t c = g * group; c < (g + 1) * group; ++c) a += float(int((p[c / 2] >> (4 * (c & 1))) & 15) - 8) * x[c];
                v += a * s[g];
            }
        } else {
            for (int64_t c = 0; c < cols; ++c) v += float(int8_t(p[c])) * x[c];
            v *= s[0];
        }
        y[r - r0] = (accumulate ? y[r - r0] : 0.0f) + v;
    }
}
}  // namespace

void gemv_rows(const TensorView& w, const float* x, float* y, int64_t r0, int64_t r1, bool accumulate, Isa isa) {
    TT_ASSERT(w.shape.size() == 2);
    if (w.quant == QuantScheme::none) return rows_any(w.data, w.dtype, w.shape[1], w.shape[1], x, y + r0, r0, r1, accumulate, isa);
    TT_ASSERT(isa_supported(isa) && w.scales, "host kernels on {} rows", quant_scheme_label(w.quant));
    const auto* q = static_cast<const uint8_t*>(w.data);
    const bool int4 = w.quant == QuantScheme::int4;
    if (isa == Isa::avx512vnni && int4) return detail::qrows_int4_vnni(q, w.scales, w.group_size, w.shape[1], x, y + r0, r0, r1, accumulate);
    if (isa == Isa::avx512 || isa == Isa::avx512vnni) return detail::qrows_avx512(q, w.scales, int4, w.group_size, w.shape[1], x, y + r0, r0, r1, accumulate);
    if (isa == Isa::avx2) return detail::qrows_avx2(q, w.scales, int4, w.group_size, w.shape[1], x, y + r0, r0, r1, accumulate);
    qrows_scalar(q, w.scales, int4, w.group_size, w.shape[1], x, y + r0, r0, r1, accumulate);
}

void dot_rows(const void* w, DType dt, int64_t n_rows, int64_t cols, int64_t stride, const float* x, float* y, Isa isa) {
    rows_any(w, dt, cols, stride, x, y, 0, n_rows, false, isa);
}

void weighted_row_sum(const void* w, DType dt, int64_t n_rows, int64_t cols, int64_t stride, const float* p, float* y, Isa isa) {
    check_kernel_args(dt, isa);
    switch (isa) {
    case Isa::scalar: weighted_sum_scalar(w, dt, n_rows, cols, stride, p, y); return;
    case Isa::avx2: detail::weighted_sum_avx2(w, dt, n_rows, cols, stride, p, y); return;
    case Isa::avx512:
    case Isa::avx512vnni: detail::weighted_sum_avx512(w, dt, n_rows, cols, stride, p, y); return;
    }
}

void gemv(ThreadPool& pool, const TensorView& w, const float* x, float* y, bool accumulate, Isa isa) {
    const int64_t rows = w.shape[0];
    // note: below ~64k weights the pool's wake-up costs more than the work.
    if (rows * w.shape[1] < (int64_t(1) << 16)) return gemv_rows(w, x, y, 0, rows, accumulate, isa);
    // Blocks of 16 rows (a multiple of the kernels' 4) keep each worker's rows contiguous.
    const size_t blocks = size_t((rows + 15) / 16);
    pool.parallel_for(blocks, [&](size_t b0, size_t b1) {
        gemv_rows(w, x, y, int64_t(b0) * 16, std::min(rows, int64_t(b1) * 16), accumulate, isa);
    });
}

}  // namespace tt::host
