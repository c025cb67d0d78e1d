// The CPU backend: ThinTensor's readable reference forward pass (see cpu_backend.cpp).
#pragma once

#include "runtime/backend.h"

#include <memory>

namespace tt {

std::unique_ptr<Backend> make_cpu_backend(const Archive& archive, const BackendOptions& opt);

}  // namespace tt
