#include "backends/cuda/weight_stream.h"

#include "backends/cuda/cuda_check.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/thread_pool.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace tt::cuda {

namespace {

constexpr uint64_t k_read_chunk = uint64_t(8) << 20;  // one pread / memcpy per host thread at a time

}  // namespace

WeightStream::WeightStream(const Archive& archive, const Plan& plan, cudaStream_t compute)
    : archive_(archive), plan_(plan), compute_(compute), planned_summary_(plan.summary()) {
    const size_t nb = plan_.blocks.size();
    resident_off_.assign(nb, -1);
    stream_index_.assign(nb, -1);
    layer_block_.assign(size_t(plan_.n_layers), -1);
    uint64_t resident_bytes = 0;
    for (size_t i = 0; i < nb; ++i) {
        const BlockPlacement& b = plan_.blocks[i];
        if (b.name == "embed") embed_block_ = int(i);
        else if (b.name == "output") output_block_ = int(i);
        else if (b.layer >= 0 && b.expert < 0) layer_block_[size_t(b.layer)] = int(i);
        if (b.place == Placement::vram) {
            // Blocks start 4 KiB apart as in the file, so each tensor keeps its alignment.
            resident_off_[i] = int64_t(resident_bytes);
            resident_bytes += round_up(b.bytes, k_thin_align);
        }
    }
    try {
        if (resident_bytes) TT_CUDA_CHECK(cudaMalloc(&resident_, resident_bytes));
        upload_resident(archive);
        const bool any_host_mapped = std::any_of(plan_.blocks.begin(), plan_.blocks.end(),
                                                 [](const BlockPlacement& b) { return b.place == Placement::host_mapped; });
        if (plan_.streaming() || any_host_mapped || plan_.expert_slots > 0) register_host(archive);
        if (plan_.streaming()) {
            const int R = plan_.ring_slots;
            TT_ASSERT(R >= 1 && plan_.slot_bytes > 0);
            TT_CUDA_CHECK(cudaMalloc(&ring_, size_t(R) * plan_.slot_bytes));
            TT_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
            TT_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
            TT_CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
            bool any_bounce = false, any_disk = false;
            for (size_t j = 0; j < plan_.stream_order.size(); ++j) {
                const int i = plan_.stream_order[j];
                const BlockPlacement& b = plan_.blocks[size_t(i)];
                TT_ASSERT(b.stream_index == int(j) && b.bytes <= plan_.slot_bytes);
                Streamed s;
                s.block = i;
                s.offset = b.offset;
                s.bytes = b.bytes;
                s.place = b.place;
                s.slot = static_cast<uint8_t*>(ring_) + (j % size_t(R)) * plan_.slot_bytes;
                TT_CUDA_CHECK(cudaEventCreateWithFlags(&s.loaded, cudaEventDisableTiming));
                TT_CUDA_CHECK(cudaEventCreateWithFlags(&s.freed, cudaEventDisableTiming));
                streamed_.push_back(s);
                stream_index_[size_t(i)] = int(j);
                any_bounce |= b.place == Placement::bounce;
                any_disk |= b.place == Placement::disk;
            }
            build_pass_orders();
            jobs_.resize(streamed_.size());
            for (size_t j = 0; j < jobs_.size(); ++j) jobs_[j] = {this, int(j)};
            enqueued_.assign(streamed_.size(), false);
            released_.assign(streamed_.size(), false);
            if (any_bounce || any_disk) {
                TT_CUDA_CHECK(cudaHostAlloc(&bounce_, plan_.slot_bytes, cudaHostAllocDefault));
                pool_ = std::make_unique<ThreadPool>(int(std::min(8u, std::max(1u, std::thread::hardware_concurrency()))));
            }
            if (any_disk) {
                fd_ = ::open(archive.path().c_str(), O_RDONLY | O_DIRECT);
                direct_io_ = fd_ >= 0;
                if (fd_ < 0) {
                    log::warn("{}: the file system refuses O_DIRECT ({}); streamed blocks are read through the page cache",
                              archive.path(), std::strerror(errno));
                    fd_ = ::open(archive.path().c_str(), O_RDONLY);
                    if (fd_ < 0) fail("{}: cannot open for streaming: {}", archive.path(), std::strerror(errno));
                }
            }
            copy_s_per_pass_ = time_copy_pass();
            log::debug("streaming: one pass of copies ({}) takes {:.2f} ms = {:.1f} GB/s", format_bytes(double(bytes_per_pass_)),
                       copy_s_per_pass_ * 1e3, double(bytes_per_pass_) / copy_s_per_pass_ / 1e9);
        }
    } catch (...) {
        release();  // the destructor does not run for an object whose constructor threw
        throw;
    }
}

WeightStream::~WeightStream() { release(); }

void WeightStream::release() {
    // Every release below tolerates a null handle, so this runs safely on a half-built object.
    (void)cudaDeviceSynchronize();
    for (auto& s : streamed_) {
        if (s.loaded) cudaEventDestroy(s.loaded);
        if (s.freed) cudaEventDestroy(s.freed);
        s.loaded = s.freed = nullptr;
    }
    streamed_.clear();
    if (fork_) cudaEventDestroy(fork_);
    if (join_) cudaEventDestroy(join_);
    fork_ = join_ = nullptr;
    if (copy_) cudaStreamDestroy(copy_);
    copy_ = nullptr;
    for (void* p : registered_) cudaHostUnregister(p);
    registered_.clear();
    if (bounce_) cudaFreeHost(bounce_);
    bounce_ = nullptr;
    if (ring_) cudaFree(ring_);
    ring_ = nullptr;
    if (resident_) cudaFree(resident_);
    resident_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    pool_.reset();
    (void)cudaGetLastError();
}

void WeightStream::upload_resident(const Archive& a) {
    // Copied in large pieces through two pinned staging buffers so that reading the mapping and
    // the PCIe copy overlap.
    struct Piece {
        uint64_t file, dev, n;
    };
    std::vector<Piece> pieces;
    constexpr uint64_t k_stage = 64u << 20;
    uint64_t total = 0;
    for (size_t i = 0; i < plan_.blocks.size(); ++i) {
        if (resident_off_[i] < 0) continue;
        const BlockPlacement& b = plan_.blocks[i];
        for (uint64_t o = 0; o < b.bytes; o += k_stage) pieces.push_back({b.offset + o, uint64_t(resident_off_[i]) + o, std::min(k_stage, b.bytes - o)});
        total += b.bytes;
    }
    if (pieces.empty()) return;
    const auto t0 = std::chrono::steady_clock::now();
    void* stage[2] = {nullptr, nullptr};
    cudaEvent_t done[2] = {nullptr, nullptr};
    for (int i = 0; i < 2; ++i) {
        TT_CUDA_CHECK(cudaHostAlloc(&stage[i], k_stage, cudaHostAllocDefault));
        TT_CUDA_CHECK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
    }
    Progress progress("load to GPU", total);
    int slot = 0;
    for (const Piece& p : pieces) {
        a.mapped().advise_sequential(p.file, p.n);
        TT_CUDA_CHECK(cudaEventSynchronize(done[slot]));  // the copy that last used this buffer is done
        std::memcpy(stage[slot], a.base() + p.file, p.n);
        TT_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(resident_) + p.dev, stage[slot], p.n, cudaMemcpyHostToDevice, compute_));
        TT_CUDA_CHECK(cudaEventRecord(done[slot], compute_));
        progress.add(p.n);
        slot ^= 1;
    }
    TT_CUDA_CHECK(cudaStreamSynchronize(compute_));
    for (int i = 0; i < 2; ++i) {
        cudaFreeHost(stage[i]);
        cudaEventDestroy(done[i]);
    }
    progress.finish();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log::debug("loaded {} of resident weights in {:.2f} s ({}/s)", format_bytes(double(total)), secs, format_bytes(double(total) / secs));
}

void WeightStream::register_host(const Archive& a) {
    // Registered ranges: each host-mapped block alone (the token embedding, Gemma 4's per-layer
    // table: its device pointer serves the kernels that read its rows), and runs of file-adjacent
    // streamed blocks merged into one registration each.
    struct Range {
        uint64_t offset, bytes;
        int own_block;  // the host-mapped block this range is, or -1 for a run of streamed blocks
    };
    std::vector<Range> ranges;
    host_device_.assign(plan_.blocks.size(), nullptr);
    for (size_t i = 0; i < plan_.blocks.size(); ++i) {
        const BlockPlacement& b = plan_.blocks[i];
        // note: a tied embedding streamed as the head (Placement::registered) keeps a range of its own too, for the lookups.
        const bool own = b.place == Placement::host_mapped || (int(i) == embed_block_ && plan_.embed_host_mapped);
        if (!own && b.place != Placement::registered && b.place != Placement::cpu && b.place != Placement::expert_cache) continue;
        const uint64_t len = round_up(b.bytes, k_thin_align);
        if (!own && !ranges.empty() && ranges.back().own_block < 0 && ranges.back().offset + ranges.back().bytes == b.offset)
            ranges.back().bytes += len;
        else
            ranges.push_back({b.offset, len, own ? int(i) : -1});
    }
    const long page = sysconf(_SC_PAGESIZE);
    uint64_t total = 0;
    for (const auto& r : ranges) total += r.bytes;
    if (!total) return;
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& r : ranges) {
        void* p = const_cast<uint8_t*>(a.base() + r.offset);
        if (page <= 0 || r.offset % uint64_t(page) != 0)
            throw RegistrationRefused(fmt::format("blocks are 4 KiB aligned but host pages are {} bytes", page));
        a.mapped().advise_sequential(r.offset, r.bytes);
        // note: read-only because the mapping is PROT_READ; the device only ever reads it.
        const cudaError_t e = cudaHostRegister(p, r.bytes, cudaHostRegisterMapped | cudaHostRegisterReadOnly);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            throw RegistrationRefused(fmt::format("cudaHostRegister of {} of {}: {}", format_bytes(double(r.bytes)), a.path(),
                                                  cudaGetErrorString(e)));
        }
        registered_.push_back(p);
        if (plan_.expert_slots > 0) {
            // The expert cache fetches experts by device pointers into these ranges.
            void* d = nullptr;
            TT_CUDA_CHECK(cudaHostGetDevicePointer(&d, p, 0));
            host_ranges_.push_back({r.offset, r.bytes, d});
        }
        if (r.own_block >= 0) {
            void* d = nullptr;
            TT_CUDA_CHECK(cudaHostGetDevicePointer(&d, p, 0));
            host_device_[size_t(r.own_block)] = d;
        }
    }
    log::debug("registered {} of the archive with the driver in {:.2f} s", format_bytes(double(total)),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

const void* WeightStream::address(const ArchiveTensor& t) const {
    for (size_t i = 0; i < plan_.blocks.size(); ++i) {
        const BlockPlacement& b = plan_.blocks[i];
        if (b.name != t.block) continue;
        const uint64_t in_block = t.offset - b.offset;
        if (resident_off_[i] >= 0) return static_cast<const uint8_t*>(resident_) + uint64_t(resident_off_[i]) + in_block;
        if (stream_index_[i] >= 0) return static_cast<const uint8_t*>(streamed_[size_t(stream_index_[i])].slot) + in_block;
        if (b.place == Placement::expert_cache) {
            for (const auto& r : host_ranges_)
                if (t.offset >= r.offset && t.offset < r.offset + r.bytes)
                    return static_cast<const uint8_t*>(r.device) + (t.offset - r.offset);
            TT_ASSERT(false, "expert block {} is not registered", b.name);
        }
        // A host-mapped block: the device pointer of its registration.
        TT_ASSERT(b.place == Placement::host_mapped && i < host_device_.size() && host_device_[i], "block {} is not registered", b.name);
        return static_cast<const uint8_t*>(host_device_[i]) + in_block;
    }
    fail("{}: tensor '{}' names block '{}', which the block table lacks", archive_.path(), t.view.name, t.block);
}

const void* WeightStream::lookup_address(const ArchiveTensor& t) const {
    const BlockPlacement& b = plan_.blocks[size_t(embed_block_)];
    TT_ASSERT(t.block == b.name);
    if (resident_off_[size_t(embed_block_)] >= 0) return address(t);
    TT_ASSERT(size_t(embed_block_) < host_device_.size() && host_device_[size_t(embed_block_)]);
    return static_cast<const uint8_t*>(host_device_[size_t(embed_block_)]) + (t.offset - b.offset);
}

void WeightStream::build_pass_orders() {
    // A block keeps the slot of its place in the prefill order, so its tensors have one address; a
    // decode pass, which skips the CPU layers, waits for whichever block last used a slot in its
    // own order.
    const size_t R = size_t(plan_.ring_slots);
    for (int k = 0; k < 2; ++k) {
        order_[k].clear();
        slot_before_[k].clear();
        std::vector<int> last(R, -1);
        for (size_t j = 0; j < streamed_.size(); ++j) {
            if (Pass(k) == Pass::decode && streamed_[j].place == Placement::cpu) continue;
            order_[k].push_back(int(j));
            slot_before_[k].push_back(last[j % R]);
            last[j % R] = int(j);
        }
    }
    bytes_per_pass_ = prefill_bytes_per_pass_ = 0;
    for (int j : order_[int(Pass::decode)]) bytes_per_pass_ += streamed_[size_t(j)].bytes;
    for (const Streamed& st : streamed_) prefill_bytes_per_pass_ += st.bytes;
}

void WeightStream::set_decode_split(const Plan& moved) {
    TT_ASSERT(!in_pass_ && streaming());
    TT_ASSERT(moved.stream_order == plan_.stream_order && moved.blocks.size() == plan_.blocks.size(), "another plan's split");
    earlier_passes_ += passes_;
    earlier_bytes_ += passes_ * bytes_per_pass_;
    passes_ = 0;
    plan_ = moved;
    for (Streamed& st : streamed_) st.place = plan_.blocks[size_t(st.block)].place;  // every one registered: cpu or not
    build_pass_orders();
    copy_s_per_pass_ = time_copy_pass();
}

bool WeightStream::in_pass_order(int j) const { return kind_ == Pass::prefill || streamed_[size_t(j)].place != Placement::cpu; }

void WeightStream::enqueue_ready() {
    const std::vector<int>& order = order_[int(kind_)];
    const std::vector<int>& before = slot_before_[int(kind_)];
    while (next_issue_ < order.size()) {
        const int after = before[next_issue_];
        if (after >= 0 && !released_[size_t(after)]) return;  // its slot is still read by an earlier block
        enqueue_copy(order[next_issue_], after);
        ++next_issue_;
    }
}

void WeightStream::enqueue_copy(int j, int after) {
    Streamed& s = streamed_[size_t(j)];
    // The slot still holds streamed block `after` until the kernels reading it are done.
    if (after >= 0) TT_CUDA_CHECK(cudaStreamWaitEvent(copy_, streamed_[size_t(after)].freed, 0));
    if (copies_) {
        const void* src = archive_.base() + s.offset;
        if (s.place != Placement::registered && s.place != Placement::cpu) {  // cpu: registered too
            // One bounce buffer: its previous copy precedes this fill on the same stream.
            TT_CUDA_CHECK(cudaLaunchHostFunc(copy_, fill_bounce, &jobs_[size_t(j)]));
            src = bounce_;
        }
        TT_CUDA_CHECK(cudaMemcpyAsync(s.slot, src, s.bytes, cudaMemcpyHostToDevice, copy_));
    }
    TT_CUDA_CHECK(cudaEventRecord(s.loaded, copy_));
    enqueued_[size_t(j)] = true;
}

void WeightStream::begin_pass(Pass kind) {
    if (!streaming()) return;
    check();
    TT_ASSERT(!in_pass_);
    in_pass_ = true;
    kind_ = kind;
    next_issue_ = 0;
    std::fill(enqueued_.begin(), enqueued_.end(), false);
    std::fill(released_.begin(), released_.end(), false);
    // Fork: the copy stream starts after everything already on the compute stream (the previous
    // pass's kernels have released every slot). Inside a graph capture this joins the copy stream
    // to the capture.
    TT_CUDA_CHECK(cudaEventRecord(fork_, compute_));
    TT_CUDA_CHECK(cudaStreamWaitEvent(copy_, fork_, 0));
    enqueue_ready();  // the first block of each slot
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    TT_CUDA_CHECK(cudaStreamIsCapturing(compute_, &capturing));
    if (capturing != cudaStreamCaptureStatusNone) return;  // a captured pass counts at each replay
    if (kind == Pass::decode) count_pass();
    else if (copies_) ++prefill_passes_;
}

void WeightStream::count_pass() {
    if (streaming() && copies_) ++passes_;
}

void WeightStream::need(int block) {
    if (block < 0 || stream_index_[size_t(block)] < 0) return;
    const int j = stream_index_[size_t(block)];
    if (!in_pass_order(j)) return;
    TT_ASSERT(in_pass_ && enqueued_[size_t(j)]);  // else the wait would refer to a stale copy
    TT_CUDA_CHECK(cudaStreamWaitEvent(compute_, streamed_[size_t(j)].loaded, 0));
}

void WeightStream::done(int block) {
    if (block < 0 || stream_index_[size_t(block)] < 0) return;
    const int j = stream_index_[size_t(block)];
    if (!in_pass_order(j)) return;
    TT_ASSERT(in_pass_ && enqueued_[size_t(j)]);
    if (released_[size_t(j)]) return;
    released_[size_t(j)] = true;
    TT_CUDA_CHECK(cudaEventRecord(streamed_[size_t(j)].freed, compute_));
    enqueue_ready();
}

void WeightStream::need_head() {
    need(output_block_);
    need(embed_block_);  // streamed only when tied: then it is the head
}

void WeightStream::done_head() {
    done(output_block_);
    done(embed_block_);
}

void WeightStream::end_pass() {
    if (!streaming()) return;
    TT_ASSERT(in_pass_);
    for (int j : order_[int(kind_)]) TT_ASSERT(released_[size_t(j)]);
    in_pass_ = false;
    TT_CUDA_CHECK(cudaEventRecord(join_, copy_));
    TT_CUDA_CHECK(cudaStreamWaitEvent(compute_, join_, 0));
}

void CUDART_CB WeightStream::fill_bounce(void* job) {
    // Runs on the driver's callback thread: no CUDA calls, no exceptions out.
    auto* fj = static_cast<FillJob*>(job);
    WeightStream* self = fj->self;
    try {
        self->fill(self->streamed_[size_t(fj->j)]);
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(self->error_mu_);
        self->error_ = e.what();
        self->failed_ = true;
    }
}

void WeightStream::fill(const Streamed& s) {
    if (failed_) return;
    auto* dst = static_cast<uint8_t*>(bounce_);
    const uint64_t len = s.place == Placement::disk && direct_io_ ? round_up(s.bytes, k_thin_align) : s.bytes;
    const size_t n_chunks = size_t((len + k_read_chunk - 1) / k_read_chunk);
    pool_->parallel_for(n_chunks, [&](size_t c0, size_t c1) {
        for (size_t c = c0; c < c1; ++c) {
            const uint64_t off = uint64_t(c) * k_read_chunk, n = std::min(k_read_chunk, len - off);
            if (s.place != Placement::disk) {
                std::memcpy(dst + off, archive_.base() + s.offset + off, n);
                continue;
            }
            uint64_t got = 0;
            while (got < n) {
                const ssize_t r = ::pread(fd_, dst + off + got, n - got, off_t(s.offset + off + got));
                if (r < 0 && errno == EINTR) continue;
                if (r < 0) {
                    std::lock_guard<std::mutex> lock(error_mu_);
                    error_ = fmt::format("{}: reading {} bytes at offset {} for streaming: {}", archive_.path(), n - got,
                                         s.offset + off + got, std::strerror(errno));
                    failed_ = true;
                    return;
                }
                if (r == 0) {  // end of file: only the O_DIRECT round-up may be missing
                    if (off + got < s.bytes) {
                        std::lock_guard<std::mutex> lock(error_mu_);
                        error_ = fmt::format("{}: unexpected end of file at offset {} while streaming", archive_.path(), s.offset + off + got);
                        failed_ = true;
                    }
                    return;
                }
                got += uint64_t(r);
            }
        }
    });
}

void WeightStream::check() {
    if (!failed_) return;
    std::lock_guard<std::mutex> lock(error_mu_);
    fail("weight streaming failed: {}", error_);
}

double WeightStream::time_copy_pass() {
    // Every streamed block copied once, back to back on the copy stream with nothing else running:
    // the copy engine's busy time per token (the second of two runs, so the first warms up).
    cudaEvent_t a, b;
    TT_CUDA_CHECK(cudaEventCreate(&a));
    TT_CUDA_CHECK(cudaEventCreate(&b));
    float ms = 0;
    for (int r = 0; r < 2; ++r) {
        TT_CUDA_CHECK(cudaEventRecord(a, copy_));
        for (int jj : order_[int(Pass::decode)]) {
            const size_t j = size_t(jj);
            const Streamed& s = streamed_[j];
            const void* src = archive_.base() + s.offset;
            if (s.place != Placement::registered && s.place != Placement::cpu) {  // cpu: registered too
                TT_CUDA_CHECK(cudaLaunchHostFunc(copy_, fill_bounce, &jobs_[j]));
                src = bounce_;
            }
            TT_CUDA_CHECK(cudaMemcpyAsync(s.slot, src, s.bytes, cudaMemcpyHostToDevice, copy_));
        }
        TT_CUDA_CHECK(cudaEventRecord(b, copy_));
        TT_CUDA_CHECK(cudaEventSynchronize(b));
        TT_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    check();
    return double(ms) * 1e-3;
}

StreamStats WeightStream::stats() const {
    StreamStats st;
    st.streaming = streaming();
    st.plan = planned_summary_;
    st.bytes_per_pass = bytes_per_pass_;
    st.passes = earlier_passes_ + passes_ + prefill_passes_;
    st.bytes_streamed = earlier_bytes_ + passes_ * bytes_per_pass_ + prefill_passes_ * prefill_bytes_per_pass_;
    st.copy_s_per_pass = copy_s_per_pass_;
    st.predicted_tokens_per_s = plan_.decode_tps;
    st.cpu_layers = st.planned_cpu_layers = plan_.n_cpu_layers;  // (the backend's tuner says when they differ)
    st.cpu_threads = plan_.cpu_threads;
    st.cpu_bytes_per_token = plan_.cpu_bytes;
    st.combined_bound_tokens_per_s = plan_.combined_bound_tps;
    return st;
}

}  // namespace tt::cuda
