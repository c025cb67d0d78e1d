// The VRAM expert cache's device side (backends/cuda/expert_cache.h): for a larger-than-VRAM
// mixture-of-experts model, every decode layer looks its chosen experts up in a pool of VRAM slots
// shared by all layers and fetches the misses straight from registered host memory, all inside
// the captured decode graph — no host round trip and no host synchronisation per layer.
//
// lookup: one block. Hits refresh their slot's stamp; each miss takes the least recently used
// slot not holding one of this layer's chosen experts (a block-wide argmin over the stamps), is
// recorded in the fetch list, and the maps are updated. fetch: a grid-stride copy of the listed
// experts' bytes host -> slot with 16-byte loads over PCIe (zero-copy reads of the registered
// mapping; many loads in flight per thread keep the link busy).
#include "backends/cuda/kernels/expert_cache.h"
#include "backends/cuda/kernels/launch.cuh"

#include <cuda_runtime.h>

namespace tt::cuda {

namespace {

constexpr int k_lookup_threads = 256;

__global__ void __launch_bounds__(k_lookup_threads) cache_lookup_kernel(ExpertCacheState c, int layer, const int32_t* ids,
                                                                        int top_k, const void** ptrs) {
    __shared__ int s_slot[k_max_cache_top_k];
    __shared__ unsigned long long s_best[k_lookup_threads];
    __shared__ unsigned long long s_now;
    pdl_wait();
    pdl_launch_dependents();
    const int tid = threadIdx.x;
    if (tid == 0) {
        s_now = ++*c.clock;
        *c.n_fetch = 0;
        for (int j = 0; j < top_k; ++j) {
            const int key = layer * c.n_experts + ids[j];
            s_slot[j] = c.slot_of[key];
        }
    }
    __syncthreads();
    const unsigned long long now = s_now;
    // Hits: refresh the stamps (pinning these slots against eviction below).
    if (tid < top_k && s_slot[tid] >= 0) c.stamp[s_slot[tid]] = now;
    __syncthreads();
    for (int j = 0; j < top_k; ++j) {
        if (s_slot[j] >= 0) continue;  // uniform: s_slot is shared
        // The least recently used slot; stamps equal to `now` belong to this layer's selection.
        unsigned long long best = ~0ull;
        for (int s = tid; s < c.n_slots; s += blockDim.x) {
            const unsigned long long st = c.stamp[s];
            if (st == now) continue;
            const unsigned long long v = (st << 20) | unsigned(s);  // ties: the lowest slot
            best = v < best ? v : best;
        }
        s_best[tid] = best;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w >>= 1) {
            if (tid < w && s_best[tid + w] < s_best[tid]) s_best[tid] = s_best[tid + w];
            __syncthreads();
        }
        if (tid == 0) {
            const int slot = int(s_best[0] & ((1u << 20) - 1));
            const int old = c.owner[slot];
            if (old >= 0) c.slot_of[old] = -1;
            const int key = layer * c.n_experts + ids[j];
            c.owner[slot] = key;
            c.slot_of[key] = slot;
            c.stamp[slot] = now;
            const int f = (*c.n_fetch)++;
            c.fetch_slot[f] = slot;
            c.fetch_key[f] = key;
            s_slot[j] = slot;
        }
        __syncthreads();
    }
    if (tid < top_k) ptrs[tid] = static_cast<const uint8_t*>(c.slots) + size_t(s_slot[tid]) * c.slot_bytes;
    if (tid == 0) {
        c.stats[0] += static_cast<unsigned long long>(top_k - *c.n_fetch);
        c.stats[1] += static_cast<unsigned long long>(*c.n_fetch);
    }
}

__global__ void cache_fetch_kernel(ExpertCacheState c) {
    pdl_wait();
    pdl_launch_dependents();
    const int n = *c.n_fetch;
    if (n == 0) return;
    const size_t per = c.copy_bytes / 16;  // int4 per expert
    const size_t total = per * size_t(n);
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    constexpr int unroll = 8;
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    // note: 8 independent 16-byte host reads in flight per thread before the first store.
    for (; i + (unroll - 1) * stride < total; i += unroll * stride) {
        int4 v[unroll];
#pragma unroll
        for (int u = 0; u < unroll; ++u) {
            const size_t k = i + u * stride, f = k / per, o = k % per;
            v[u] = reinterpret_cast<const int4*>(c.host_src[c.fetch_key[f]])[o];
        }
#pragma unroll
        for (int u = 0; u < unroll; ++u) {
            const size_t k = i + u * stride, f = k / per, o = k % per;
            reinterpret_cast<int4*>(static_cast<uint8_t*>(c.slots) + size_t(c.fetch_slot[f]) * c.slot_bytes)[o] = v[u];
        }
    }
    for (; i < total; i += stride) {
        const size_t f = i / per, o = i % per;
        reinterpret_cast<int4*>(static_cast<uint8_t*>(c.slots) + size_t(c.fetch_slot[f]) * c.slot_bytes)[o] =
            reinterpret_cast<const int4*>(c.host_src[c.fetch_key[f]])[o];
    }
}

}  // namespace

void expert_cache_lookup(const ExpertCacheState& c, int layer, const int32_t* ids, int top_k, const void** ptrs, cudaStream_t s) {
    TT_ASSERT(top_k <= k_max_cache_top_k && c.n_slots >= top_k && c.n_slots < (1 << 20));
    launch(cache_lookup_kernel, dim3(1), dim3(k_lookup_threads), 0, s, c, layer, ids, top_k, ptrs);
}

void expert_cache_fetch(const ExpertCacheState& c, int blocks, cudaStream_t s) {
    TT_ASSERT(c.copy_bytes % 16 == 0 && c.slot_bytes % 16 == 0);
    launch(cache_fetch_kernel, dim3(unsigned(blocks)), dim3(256), 0, s, c);
}

}  // namespace tt::cuda
