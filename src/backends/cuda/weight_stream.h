// Weight placement and streaming for the CUDA backend (docs/STREAMING.md). Holds the resident
// blocks in one VRAM allocation and streams the others, pass after pass, through a ring of VRAM
// slots on a copy stream that runs beside the compute stream:
//
//   begin_pass(k)   fork the copy stream off the compute stream; copy the first block of each slot
//   need(b)         the compute stream waits until block b is in its slot (event "loaded b")
//   done(b)         after the last kernel that reads b: record "freed b" on the compute stream,
//                   then the copy stream waits for it and copies the next block of the pass that
//                   uses the same slot (and every block after it whose slot is free)
//   end_pass()      join the copy stream back into the compute stream
//
// Streamed block j (in the prefill order, plan.stream_order) always uses slot j % R, so every
// pass issues the same copies to the same addresses: a decode step with its copies is captured
// once in a CUDA graph and replayed with no host work. A decode pass skips the layers the plan
// computes on the CPU (plan.decode_stream_order); its copies then wait for whichever block of
// that pass last used the slot. A slot is overwritten only after the compute stream passed done()
// of the block it held, and read only after need() saw its copy finish.
//
// Host side: streamed blocks are registered in place in the archive's mapping (cudaHostRegister,
// read-only) and copied straight from it; blocks the plan puts on disk (RAM budget too small) or
// that cannot be registered go through one pinned bounce buffer filled by host threads (a host
// node in the graph) from the file (pread, O_DIRECT when the file system allows) or the mapping.
// Host-mapped blocks (Placement::host_mapped: the token embedding, Gemma 4's per-layer table) are
// registered each as a range of its own and never copied: kernels read their rows through the
// device pointer the driver maps the range at, which address() returns.
// With nothing streamed, every hook is a no-op and the backend runs exactly as fully resident.
#pragma once

#include "format/archive.h"
#include "runtime/backend.h"
#include "runtime/plan.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tt {
class ThreadPool;
}

namespace tt::cuda {

class WeightStream {
public:
    // Uploads the resident blocks and sets up the ring. Throws tt::Error on CUDA failures; a
    // refused host registration throws RegistrationRefused so that the caller can re-plan.
    WeightStream(const Archive& archive, const Plan& plan, cudaStream_t compute);
    ~WeightStream();
    WeightStream(const WeightStream&) = delete;
    WeightStream& operator=(const WeightStream&) = delete;

    struct RegistrationRefused : std::runtime_error {
        using std::runtime_error::runtime_error;
    };

    // Where the kernels find a tensor: its resident copy, its slot (fixed for the whole run), or, in a
    // host-mapped block (the token embedding, Gemma 4's per-layer table "per_layer_embd"), the device
    // pointer of its registered host memory, which kernels read over PCIe.
    const void* address(const ArchiveTensor& t) const;
    // An expert the plan leaves in host memory (Placement::expert_cache): address() is the device
    // pointer of its registered host copy, which the expert cache fetches from; this is its host
    // address (the mapping), for copy-engine transfers.
    const void* host_address(const ArchiveTensor& t) const { return archive_.base() + t.offset; }
    // Where the embedding lookup reads rows of `t` (the token embedding): the resident copy, or its
    // registered host memory through the device pointer the driver maps it at.
    const void* lookup_address(const ArchiveTensor& t) const;

    bool streaming() const { return !streamed_.empty(); }
    // A decode pass copies the streamed blocks but those the plan computes on the CPU
    // (Placement::cpu); a prefill pass copies them all (plan.decode_stream_order, plan.stream_order).
    enum class Pass { decode, prefill };
    // Block index of layer il / of the head blocks, for need() and done().
    int layer_block(int il) const { return layer_block_[size_t(il)]; }
    int output_block() const { return output_block_; }  // the final norm (and an untied head)
    void begin_pass(Pass kind);
    // For a block this pass does not copy (a CPU layer in decode), need() and done() do nothing.
    void need(int block);
    void done(int block);
    void need_head();  // the output block (and a tied embedding)
    void done_head();
    void end_pass();
    // One more decode pass ran: begin_pass() counts eager passes; a graph replay of a captured decode pass calls this.
    void count_pass();
    // When false, passes keep the events but issue no copies (kernel-only timing; results invalid).
    void set_copies(bool on) { copies_ = on; }
    // Takes decode's split from `moved`: this stream's plan after set_decode_split (plan.h) moved
    // its CPU layers. Rebuilds the blocks a decode pass copies, their slot order, and one such
    // pass's copy time (timed again). Outside a pass; a decode graph captured before copies the old
    // order and must be captured again.
    void set_decode_split(const Plan& moved);
    // Throws tt::Error when a host-side read for the bounce buffer failed since the last call.
    void check();

    StreamStats stats() const;

private:
    struct Streamed {
        int block = -1;
        uint64_t offset = 0, bytes = 0;  // file range
        Placement place = Placement::registered;
        void* slot = nullptr;
        cudaEvent_t loaded = nullptr, freed = nullptr;
    };
    struct FillJob {
        WeightStream* self;
        int j;
    };
    void release();
    void upload_resident(const Archive& a);
    void register_host(const Archive& a);
    // Issues, in pass order, every copy whose slot the pass no longer needs for an earlier block.
    void enqueue_ready();
    void enqueue_copy(int j, int after);  // after: the streamed block that held the slot before (-1: none this pass)
    bool in_pass_order(int j) const;
    void build_pass_orders();  // order_, slot_before_ and the bytes a pass copies, from streamed_'s places
    static void CUDART_CB fill_bounce(void* job);
    void fill(const Streamed& s);
    double time_copy_pass();

    const Archive& archive_;
    Plan plan_;
    cudaStream_t compute_ = nullptr, copy_ = nullptr;
    void* resident_ = nullptr;
    std::vector<int64_t> resident_off_;   // per block: offset in resident_, or -1
    std::vector<int> stream_index_;       // per block: j, or -1
    std::vector<int> layer_block_;
    int output_block_ = -1, embed_block_ = -1;
    void* ring_ = nullptr;
    std::vector<Streamed> streamed_;       // every block a prefill pass streams, in its order
    std::vector<FillJob> jobs_;
    std::vector<bool> enqueued_, released_;
    // Per pass kind: the streamed blocks it copies (indices into streamed_, in order) and, for each
    // of those, the one before it in that order with the same slot (-1: none).
    std::vector<int> order_[2], slot_before_[2];
    Pass kind_ = Pass::decode;
    size_t next_issue_ = 0;                // position in order_[kind_] of the next copy to issue
    uint64_t prefill_bytes_per_pass_ = 0, prefill_passes_ = 0;
    std::vector<void*> registered_;       // host ranges to unregister
    // Per block: the device pointer of its own registration (a host-mapped block, or a tied embedding
    // streamed as the head), else nullptr.
    std::vector<const void*> host_device_;
    struct HostRange {
        uint64_t offset, bytes;
        const void* device;
    };
    std::vector<HostRange> host_ranges_;  // registered ranges and their device pointers (expert cache)
    void* bounce_ = nullptr;
    int fd_ = -1;
    bool direct_io_ = false;
    std::unique_ptr<ThreadPool> pool_;
    cudaEvent_t fork_ = nullptr, join_ = nullptr;
    bool copies_ = true, in_pass_ = false;
    uint64_t bytes_per_pass_ = 0, passes_ = 0;
    uint64_t earlier_passes_ = 0, earlier_bytes_ = 0;  // decode passes at splits set before this one
    double copy_s_per_pass_ = 0;
    std::string planned_summary_;  // the plan's own line, whatever split decode moves to
    std::mutex error_mu_;
    std::string error_;
    std::atomic<bool> failed_{false};
};

}  // namespace tt::cuda
