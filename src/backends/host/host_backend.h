// The host backend (--device host): a whole model on the host decode path (host_layers.h), one
// token at a time: the embedding, every decoder layer through HostLayers, the final norm and the
// head through host::gemv. A prompt is the decode step run token after token. It is the host path
// end to end, held to the CPU reference (tests/unit/test_host_layers.cpp) and to transformers
// (tests/e2e/validate_fixtures.sh), and what the CUDA backend's CPU layers are measured by.
#pragma once

#include "runtime/backend.h"

#include <cstdint>
#include <memory>

namespace tt {

std::unique_ptr<Backend> make_host_backend(const Archive& archive, const BackendOptions& opt);
// The same with the layers' products and attention split over the pool from min_parallel
// multiply-adds on (HostLayers::set_min_parallel): tests pass 0 so that tiny models, which would
// otherwise run on the calling thread alone, go through the pool's split.
std::unique_ptr<Backend> make_host_backend(const Archive& archive, const BackendOptions& opt, int64_t min_parallel);

}  // namespace tt
