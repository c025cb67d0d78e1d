// The host decode path (issue #16): decoder layers computed on the CPU one token at a time, from
// weights in host memory (the archive's mapping) and a KV cache in host memory, built to run at
// the host's memory bandwidth (host/gemv.h, all cores of the pool). The CUDA backend runs the
// layers the planner puts on the CPU (Placement::cpu) through it, beside the weights it streams
// over PCIe; the host backend (--device host, host_backend.h) runs a whole model through it. The
// readable reference (src/backends/cpu/) stays the oracle it is tested against
// (tests/unit/test_host_layers.cpp).
#pragma once

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "model/model_spec.h"
#include "model/weights.h"
#include "runtime/rope.h"

#include <cstdint>
#include <vector>

namespace tt::host {

class HostLayers {
public:
    // Layers `layers` (indices into spec.layers; the others are never touched) with a KV cache of
    // n_ctx positions each in kv_dt (f32/f16/bf16), laid out [position][kv_dim] like the CUDA
    // backend's cache so rows copy across unchanged. `pool` is used for every parallel loop.
    HostLayers(const ModelSpec& spec, const ModelWeights& w, std::vector<int> layers, int n_ctx, DType kv_dt, ThreadPool& pool);

    // x[hidden] (f32) += decoder layer il at position pos for one token: its k/v row is written
    // to the cache at pos and attention reads positions [first, pos] (the sliding window).
    void forward(int il, float* x, int pos);

    bool has(int il) const;
    // Layer il's cache rows (for copies to and from the GPU's cache: CUDA prefill computes these layers).
    void* k_cache(int il);
    void* v_cache(int il);
    size_t kv_row_bytes() const;  // kv_dim x sizeof(kv_dt)
    // Weight bytes one decode token reads from layer il (its dense block, or router + top_k experts).
    uint64_t decode_bytes(int il) const;
};

}  // namespace tt::host
