// Device entry points of the VRAM expert cache (kernels/expert_cache.cu; the host side is
// backends/cuda/expert_cache.h). Plain pointers only, so callers need no device code.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tt::cuda {

inline constexpr int k_max_cache_top_k = 32;

// The cache's device state. A key is layer * n_experts + expert.
struct ExpertCacheState {
    void* slots;                    // n_slots x slot_bytes of VRAM
    size_t slot_bytes;              // an expert block rounded up to 4 KiB
    size_t copy_bytes;              // bytes copied per fetch (the block, 16-byte rounded)
    int n_slots, n_experts;
    int32_t* slot_of;               // [n_layers * n_experts]: the slot holding a key, or -1
    int32_t* owner;                 // [n_slots]: the key a slot holds, or -1
    unsigned long long* stamp;      // [n_slots]: the lookup clock when last used (0 = never)
    unsigned long long* clock;      // [1]
    unsigned long long* stats;      // [2]: hits, misses since load
    const void* const* host_src;    // [n_layers * n_experts]: device pointers of the registered host copies
    int32_t* fetch_slot;            // [k_max_cache_top_k]: this lookup's misses
    int32_t* fetch_key;
    int32_t* n_fetch;               // [1]
};

// ptrs[j] = the VRAM slot holding expert ids[j] of `layer`, for j < top_k; misses take the least
// recently used slots and are listed for expert_cache_fetch.
void expert_cache_lookup(const ExpertCacheState& c, int layer, const int32_t* ids, int top_k, const void** ptrs, cudaStream_t s);
// Copies the listed misses from host memory into their slots (a no-op launch when none).
void expert_cache_fetch(const ExpertCacheState& c, int blocks, cudaStream_t s);

}  // namespace tt::cuda
