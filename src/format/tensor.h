// A tensor as the format readers hand it out: a typed, shaped view into mapped file bytes.
#pragma once

#include "core/dtype.h"

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
