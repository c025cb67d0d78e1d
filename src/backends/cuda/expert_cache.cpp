#include "backends/cuda/expert_cache.h"

#include "backends/cuda/cuda_check.h"
#include "core/error.h"

#include <algorithm>

namespace tt::cuda {

namespace {
size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
}  // namespace

ExpertCache::ExpertCache(int n_layers, int n_experts, int n_slots, size_t slot_bytes, size_t block_bytes,
                         std::vector<const void*> host_device, std::vector<const void*> host_ptr, int fetch_blocks)
    : n_layers_(n_layers), n_experts_(n_experts), n_slots_(n_slots), slot_bytes_(slot_bytes),
      block_bytes_(align_up(block_bytes, 16)), host_ptr_(std::move(host_ptr)), fetch_blocks_(fetch_blocks) {
    TT_ASSERT(n_slots_ > 0 && block_bytes_ <= slot_bytes_ && slot_bytes_ % 16 == 0);
    const size_t keys = size_t(n_layers) * size_t(n_experts);
    TT_ASSERT(host_device.size() == keys && host_ptr_.size() == keys);
    // Layout of the one allocation: slots | host_src | slot_of | owner | stamp | clock, stats | fetch lists.
    const size_t slots_b = size_t(n_slots_) * slot_bytes_;
    const size_t src_off = slots_b, slot_of_off = src_off + keys * sizeof(void*);
    const size_t owner_off = align_up(slot_of_off + keys * 4, 8), stamp_off = align_up(owner_off + size_t(n_slots_) * 4, 8);
    const size_t counters_off = stamp_off + size_t(n_slots_) * 8, fetch_off = counters_off + 3 * 8;
    const size_t total = fetch_off + (2 * k_max_cache_top_k + 1) * 4;
    TT_CUDA_CHECK(cudaMalloc(&dev_, total));
    uint8_t* d = static_cast<uint8_t*>(dev_);
    st_.slots = d;
    st_.slot_bytes = slot_bytes_;
    st_.copy_bytes = block_bytes_;
    st_.n_slots = n_slots_;
    st_.n_experts = n_experts_;
    st_.host_src = reinterpret_cast<const void* const*>(d + src_off);
    st_.slot_of = reinterpret_cast<int32_t*>(d + slot_of_off);
    st_.owner = reinterpret_cast<int32_t*>(d + owner_off);
    st_.stamp = reinterpret_cast<unsigned long long*>(d + stamp_off);
    st_.clock = reinterpret_cast<unsigned long long*>(d + counters_off);
    st_.stats = st_.clock + 1;
    st_.fetch_slot = reinterpret_cast<int32_t*>(d + fetch_off);
    st_.fetch_key = st_.fetch_slot + k_max_cache_top_k;
    st_.n_fetch = st_.fetch_key + k_max_cache_top_k;
    TT_CUDA_CHECK(cudaMemcpy(d + src_off, host_device.data(), keys * sizeof(void*), cudaMemcpyHostToDevice));
    TT_CUDA_CHECK(cudaMemset(st_.slot_of, 0xff, keys * 4));  // -1: nothing cached
    TT_CUDA_CHECK(cudaMemset(st_.owner, 0xff, size_t(n_slots_) * 4));
    TT_CUDA_CHECK(cudaMemset(st_.stamp, 0, size_t(n_slots_) * 8 + 3 * 8));  // stamps, clock, stats
    TT_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    loaded_.resize(size_t(n_slots_));
    freed_.resize(size_t(n_slots_));
    for (int i = 0; i < n_slots_; ++i) {
        TT_CUDA_CHECK(cudaEventCreateWithFlags(&loaded_[size_t(i)], cudaEventDisableTiming));
        TT_CUDA_CHECK(cudaEventCreateWithFlags(&freed_[size_t(i)], cudaEventDisableTiming));
    }
    used_.assign(size_t(n_slots_), false);
    owner_.assign(size_t(n_slots_), -1);
}

ExpertCache::~ExpertCache() {
    if (copy_) cudaStreamSynchronize(copy_);
    for (auto e : loaded_) cudaEventDestroy(e);
    for (auto e : freed_) cudaEventDestroy(e);
    if (copy_) cudaStreamDestroy(copy_);
    if (dev_) cudaFree(dev_);
}

void ExpertCache::lookup(int layer, const int32_t* ids, int top_k, const void** ptrs, cudaStream_t s) {
    expert_cache_lookup(st_, layer, ids, top_k, ptrs, s);
    expert_cache_fetch(st_, fetch_blocks_, s);
}

void ExpertCache::begin_prefill() {
    // Staging overwrites slots in ring order; the maps are rewritten by end_prefill().
    std::fill(owner_.begin(), owner_.end(), -1);
    // note: decode kernels may have read any slot since the last prefill: every first use waits
    // for the compute stream as it is now.
    std::fill(used_.begin(), used_.end(), false);
    current_ = -1;
}

const void* ExpertCache::stage(int layer, int expert, cudaStream_t compute) {
    const int slot = next_;
    next_ = (next_ + 1) % n_slots_;
    const int key = layer * n_experts_ + expert;
    void* dst = static_cast<uint8_t*>(dev_) + size_t(slot) * slot_bytes_;
    // The copy engine waits until the kernels that read the slot's previous expert are done; the
    // first use of a slot in this prefill may follow decode kernels that read it: everything so far.
    if (!used_[size_t(slot)]) TT_CUDA_CHECK(cudaEventRecord(freed_[size_t(slot)], compute));
    TT_CUDA_CHECK(cudaStreamWaitEvent(copy_, freed_[size_t(slot)], 0));
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, host_ptr_[size_t(key)], block_bytes_, cudaMemcpyHostToDevice, copy_));
    TT_CUDA_CHECK(cudaEventRecord(loaded_[size_t(slot)], copy_));
    TT_CUDA_CHECK(cudaStreamWaitEvent(compute, loaded_[size_t(slot)], 0));
    owner_[size_t(slot)] = key;
    current_ = slot;
    ++staged_;
    return dst;
}

void ExpertCache::release(cudaStream_t compute) {
    TT_ASSERT(current_ >= 0);
    TT_CUDA_CHECK(cudaEventRecord(freed_[size_t(current_)], compute));
    used_[size_t(current_)] = true;
}

void ExpertCache::end_prefill(cudaStream_t compute) {
    // The slots now hold the last experts staged: publish them as cached, the most recently
    // staged as the most recently used, so decode finds them (on the compute stream, after the
    // prefill's kernels).
    const size_t keys = size_t(n_layers_) * size_t(n_experts_);
    std::vector<int32_t> slot_of(keys, -1);
    std::vector<unsigned long long> stamp(size_t(n_slots_) + 3, 0);
    for (int i = 0; i < n_slots_; ++i) {
        // Ring order: slot next_ is the oldest staged.
        const int slot = (next_ + i) % n_slots_;
        if (owner_[size_t(slot)] < 0) continue;
        slot_of[size_t(owner_[size_t(slot)])] = slot;
        stamp[size_t(slot)] = uint64_t(i) + 1;
    }
    // Keep the clock and the stats (the last 3 words are clock, hits, misses): read them first.
    TT_CUDA_CHECK(cudaMemcpyAsync(stamp.data() + n_slots_, st_.clock, 3 * 8, cudaMemcpyDeviceToHost, compute));
    TT_CUDA_CHECK(cudaStreamSynchronize(compute));
    stamp[size_t(n_slots_)] = std::max<unsigned long long>(stamp[size_t(n_slots_)], uint64_t(n_slots_) + 1);
    for (int i = 0; i < n_slots_; ++i)
        if (stamp[size_t(i)]) stamp[size_t(i)] += stamp[size_t(n_slots_)] - uint64_t(n_slots_) - 1;  // below the clock
    TT_CUDA_CHECK(cudaMemcpyAsync(st_.slot_of, slot_of.data(), keys * 4, cudaMemcpyHostToDevice, compute));
    TT_CUDA_CHECK(cudaMemcpyAsync(st_.owner, owner_.data(), size_t(n_slots_) * 4, cudaMemcpyHostToDevice, compute));
    TT_CUDA_CHECK(cudaMemcpyAsync(st_.stamp, stamp.data(), (size_t(n_slots_) + 3) * 8, cudaMemcpyHostToDevice, compute));
    // note: the host vectors die here; the copies must finish first.
    TT_CUDA_CHECK(cudaStreamSynchronize(compute));
}

ExpertCache::Counts ExpertCache::counts() const {
    unsigned long long v[2] = {0, 0};
    TT_CUDA_CHECK(cudaMemcpy(v, st_.stats, sizeof v, cudaMemcpyDeviceToHost));
    return {v[0], v[1]};
}

}  // namespace tt::cuda
