// Quantized weight formats (docs/QUANTIZATION.md): the schemes, their exact rounding, and their
// byte layout. Everything here is row-level arithmetic on f32 values, so the converter, the
// load-time quantizer, the CPU reference and (later) a CUDA kernel can share one definition and
// agree bit for bit.
//
//   int8: one f32 scale per output channel (row): scale = max|w| / 127 (an f32 division), then
//         q = round_half_even(w / scale) clamped to [-127, 127], stored as int8, a row of cols bytes.
//   int4: one f32 scale per group of `group_size` consecutive weights of a row (along the input
//         dimension): scale = m / -8 (an f32 division), m the group's weight of largest magnitude
//         (the first in column order on a tie), q = round_half_even(w / scale) clamped to [-8, 7],
//         stored as the nibble q + 8 (0..15), two per byte: byte j of a row holds column 2j in its
//         low nibble and column 2j + 1 in its high nibble (cols / 2 bytes a row). The scale's sign
//         follows -m; archives written before 2026-12-05 hold scale = max|w| / 7 and q in [-7, 7],
//         which read the same way.
//   Both: a scale of 0 (an all-zero row or group, or max|w| so small that the division underflows)
//         gives q = 0. w / scale is IEEE f32 division rounded to nearest (never w * (1 / scale)),
//         round_half_even is std::nearbyint in the default rounding mode (CUDA: __fdiv_rn then
//         __float2int_rn). Dequantization is float(q) * scale, one f32 multiplication.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tt {

enum class QuantScheme : uint8_t { none, int8, int4 };

// "none", "int8", "int4" (the names of docs/FORMAT.md and of `convert --quant`).
std::string_view quant_scheme_name(QuantScheme s);
std::optional<QuantScheme> quant_scheme_from_name(std::string_view name);
// "INT8", "INT4", for messages.
std::string_view quant_scheme_label(QuantScheme s);

// The INT4 group sizes the format allows, and the one the max-max-perf profile and
// `convert --quant int4` use by default: 32 (docs/QUANTIZATION.md gives the measurements; 32 is
// also the only one dividing every row of the hf-tiny fixtures).
bool int4_group_size_allowed(int64_t g);
inline constexpr int k_int4_default_group = 32;

// Why a [rows, cols] matrix cannot be stored in `scheme` with `group_size` (int4), or "" when it
// can ("group size 64 does not divide the row length 96").
std::string quant_layout_error(QuantScheme scheme, int64_t cols, int64_t group_size);
// Bytes of the quantized values of one row, and f32 scales per row.
uint64_t quant_row_bytes(QuantScheme scheme, int64_t cols);
int64_t quant_row_scales(QuantScheme scheme, int64_t cols, int64_t group_size);

// Quantizes one row of cols f32 weights (finite; the caller checks) into q (quant_row_bytes) and
// scales (quant_row_scales). The layout must be valid (quant_layout_error is empty).
void quantize_row(QuantScheme scheme, int64_t group_size, const float* w, int64_t cols, uint8_t* q, float* scales);
// The inverse: out[c] = float(q[c]) * scale of c's row or group.
void dequantize_row(QuantScheme scheme, int64_t group_size, const uint8_t* q, const float* scales, int64_t cols, float* out);

}  // namespace tt

namespace tt {

class ThreadPool;
enum class DType : uint8_t;

// A whole [rows, cols] matrix quantized: rows * quant_row_bytes values, rows * quant_row_scales scales.
struct QuantizedMatrix {
    std::vector<uint8_t> q;
    std::vector<float> scales;
};

// Quantizes a row-major [rows, cols] matrix of float dtype src_dtype (f32, f16, bf16), rows spread
// over the pool. Throws tt::Error naming `what` (the tensor) on a non-finite weight or an invalid
// layout (quant_layout_error).
QuantizedMatrix quantize_matrix(ThreadPool& pool, const void* src, DType src_dtype, int64_t rows, int64_t cols,
                                QuantScheme scheme, int64_t group_size, const std::string& what);

}  // namespace tt
