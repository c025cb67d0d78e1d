// A tensor as the format readers hand it out: a typed, shaped view into mapped file bytes.
#pragma once

#include "core/dtype.h"
#include "core/quant.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tt {

using Shape = std::vector<int64_t>;

struct TensorView {
    std::string name;
    DType dtype = DType::f32;
    Shape shape;
    const uint8_t* data = nullptr;  // points into a MappedFile; valid while its owner lives
    uint64_t nbytes = 0;
    // A quantized matrix (core/quant.h): `shape` is the logical [rows, cols], `dtype` the storage
    // (i8 for int8, u8 for int4's packed nibbles), `data`/`nbytes` the quantized values and
    // `scales` its f32 scales ([rows] or [rows, cols / group_size]), owned by the same owner.
    QuantScheme quant = QuantScheme::none;
    int32_t group_size = 0;         // int4 only
    const float* scales = nullptr;

    int64_t numel() const {
        int64_t n = 1;
        for (auto d : shape) n *= d;
        return n;
    }
};

// "[128, 64]"
std::string shape_str(const Shape& s);

// Multiplies shape dims with overflow checks: false if any dim < 0 or the product overflows.
bool checked_numel(const Shape& s, uint64_t& out);

}  // namespace tt
