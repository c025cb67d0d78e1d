// The VRAM expert cache of a mixture-of-experts model larger than VRAM (docs/STREAMING.md): a pool
// of slots, each holding one expert block, shared by every MoE layer; the experts themselves stay
// in registered host memory (Placement::expert_cache in the plan).
//
// Decode: lookup() places, on the compute stream and inside the captured graph, a lookup kernel
// (hits, and LRU victims for misses) and a fetch kernel that copies the misses over PCIe, so the
// selection can change every replay with no host work. Prefill: the host knows every expert a
// chunk's tokens chose (it groups them), so stage() streams each one into the next slot of a ring
// over the copy engine, ordered by events against the GEMMs that read it; end_prefill() then
// records the staged experts in the cache's maps, so decode starts with them cached.
#pragma once

#include "backends/cuda/kernels/expert_cache.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace tt::cuda {

class ExpertCache {
public:
    // host_device[key] / host_ptr[key] (key = layer * n_experts + expert): the device pointer of an
    // expert's registered host copy and its host address; null for dense layers.
    ExpertCache(int n_layers, int n_experts, int n_slots, size_t slot_bytes, size_t block_bytes,
                std::vector<const void*> host_device, std::vector<const void*> host_ptr, int fetch_blocks);
    ~ExpertCache();
    ExpertCache(const ExpertCache&) = delete;
    ExpertCache& operator=(const ExpertCache&) = delete;

    // Decode: ptrs[j] = the slot holding expert ids[j] of `layer`, fetched first when missing.
    void lookup(int layer, const int32_t* ids, int top_k, const void** ptrs, cudaStream_t s);

    // Prefill: stage(layer, e) returns the slot that will hold the expert once the compute stream
    // reaches its next kernel; release() after the last kernel that reads the staged expert.
    void begin_prefill();
    const void* stage(int layer, int expert, cudaStream_t compute);
    void release(cudaStream_t compute);
    void end_prefill(cudaStream_t compute);

    int slots() const { return n_slots_; }
    // Decode lookups since load (read from the device: synchronizes).
    struct Counts {
        uint64_t hits = 0, misses = 0;
    };
    Counts counts() const;
    uint64_t staged_bytes() const { return staged_ * block_bytes_; }  // prefill copies since load
    size_t block_bytes() const { return block_bytes_; }

private:
    int n_layers_, n_experts_, n_slots_;
    size_t slot_bytes_, block_bytes_;
    std::vector<const void*> host_ptr_;
    int fetch_blocks_;
    ExpertCacheState st_{};
    void* dev_ = nullptr;  // one allocation: slots, then the maps and counters
    cudaStream_t copy_ = nullptr;
    std::vector<cudaEvent_t> loaded_, freed_;
    std::vector<bool> used_;      // a slot has a freed event to wait for
    std::vector<int32_t> owner_;  // prefill's host mirror: the key each slot holds
    int next_ = 0, current_ = -1;
    uint64_t staged_ = 0;
};

}  // namespace tt::cuda
