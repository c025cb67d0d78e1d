// A fixed-size cache of pre-token bytes -> token ids, shared by all threads that encode with one
// tokenizer. Real text repeats its words (Zipf), so most pieces are found here and never reach the
// BPE merge loop; `tokenizers` keeps a similar cache (10,000 words, frozen once full).
//
// Layout: 2-way set-associative, one 64-byte cache line per entry (key bytes and ids packed
// together), a newer word evicts an older one, so the cache follows the text instead of freezing
// on the first words. Entries that do not fit a line (long pieces, many ids) are not cached.
//
// note: concurrency is a per-entry seqlock. Readers never write (no cache-line ping-pong between
// threads): they copy the entry with relaxed atomic loads and retry-as-miss if its sequence number
// changed or was odd (a write in progress). A writer claims the entry with a CAS from even to odd
// and gives up if another thread holds it; losing an insert only costs a future merge.
#pragma once

#include <xxhash.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace tt::tok {

class WordCache {
public:
    // `entries` is rounded up to a power of two (at least 2). The table (64 bytes an entry) is
    // allocated on first use, so a tokenizer that never encodes does not pay for it.
    explicit WordCache(size_t entries = size_t{1} << 16) {
        size_t n = 2;
        while (n < entries) n <<= 1;
        mask_ = n - 1;
    }
    ~WordCache() { delete[] slots_.load(std::memory_order_acquire); }
    WordCache(const WordCache&) = delete;
    WordCache& operator=(const WordCache&) = delete;

    static uint64_t hash(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

    // Starts loading the entries `h` maps to, so that a find() a little later does not stall.
    void prefetch(uint64_t h) const { __builtin_prefetch(&slots()[static_cast<size_t>(h) & mask_ & ~size_t{1}]); }

    // Appends the cached ids of `key` (whose hash() is `h`) to `out`; false if not cached.
    // `raw`: the key is in the model's raw-byte form (see Pieces::byte_level), a separate key space.
    bool find(uint64_t h, std::string_view key, bool raw, std::vector<int32_t>& out) const {
        size_t set = static_cast<size_t>(h) & mask_ & ~size_t{1};
        const auto tag = static_cast<uint32_t>(h >> 32);
        for (size_t w = 0; w < 2; ++w) {
            const Slot& s = slots()[set + w];
            uint64_t head = s.head.load(std::memory_order_acquire);
            if ((head >> 32) != tag || (head & 1)) continue;
            uint64_t buf[k_words];
            for (size_t k = 0; k < k_words; ++k) buf[k] = s.data[k].load(std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_acquire);
            if (s.head.load(std::memory_order_relaxed) != head) continue;  // overwritten meanwhile
            const auto* bytes = reinterpret_cast<const unsigned char*>(buf);
            size_t key_len = bytes[0] & 0x7F, n_ids = bytes[1];
            if (bytes[0] != (key.size() | (raw ? 0x80 : 0)) || std::memcmp(bytes + 2, key.data(), key_len) != 0) continue;
            size_t at = out.size();
            out.resize(at + n_ids);
            std::memcpy(out.data() + at, bytes + 2 + key_len, n_ids * sizeof(int32_t));
            return true;
        }
        return false;
    }

    // Stores key -> ids (no-op if they do not fit one entry or the entry is being written).
    void insert(uint64_t h, std::string_view key, bool raw, const int32_t* ids, size_t n_ids) const {
        if (!fits(key.size(), n_ids)) return;
        size_t set = static_cast<size_t>(h) & mask_ & ~size_t{1};
        // An empty way if there is one, else a way picked by the hash (the set's two words stay
        // cached when two hot words collide in the same way).
        Slot* table = slots();
        size_t w = table[set].head.load(std::memory_order_relaxed) == 0       ? 0
                   : table[set + 1].head.load(std::memory_order_relaxed) == 0 ? 1
                                                                              : (h >> 31) & 1;
        Slot& s = table[set + w];
        uint64_t head = s.head.load(std::memory_order_relaxed);
        if (head & 1) return;
        uint32_t seq = static_cast<uint32_t>(head);
        // acquire: the data stores below stay after the odd sequence number is visible.
        if (!s.head.compare_exchange_strong(head, (head & ~uint64_t{0xFFFFFFFF}) | (seq + 1), std::memory_order_acquire,
                                            std::memory_order_relaxed))
            return;
        uint64_t buf[k_words] = {};
        auto* bytes = reinterpret_cast<unsigned char*>(buf);
        bytes[0] = static_cast<unsigned char>(key.size() | (raw ? 0x80 : 0));
        bytes[1] = static_cast<unsigned char>(n_ids);
        std::memcpy(bytes + 2, key.data(), key.size());
        std::memcpy(bytes + 2 + key.size(), ids, n_ids * sizeof(int32_t));
        for (size_t k = 0; k < k_words; ++k) s.data[k].store(buf[k], std::memory_order_relaxed);
        s.head.store((h >> 32 << 32) | static_cast<uint32_t>(seq + 2), std::memory_order_release);
    }

    static bool fits(size_t key_len, size_t n_ids) { return 2 + key_len + n_ids * sizeof(int32_t) <= k_words * 8; }

private:
    static constexpr size_t k_words = 7;  // 56 bytes: key length | raw << 7, id count, key bytes, ids
    struct alignas(64) Slot {
        std::atomic<uint64_t> head{0};  // hash tag << 32 | sequence number (odd while written)
        std::atomic<uint64_t> data[k_words] = {};
    };
    // The table, allocated by the first caller (a thread that loses the race frees its copy).
    Slot* slots() const {
        Slot* p = slots_.load(std::memory_order_acquire);
        if (p) return p;
        auto* fresh = new Slot[mask_ + 1]();
        if (slots_.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return fresh;
        delete[] fresh;
        return p;
    }
    size_t mask_ = 0;
    mutable std::atomic<Slot*> slots_{nullptr};  // written through const (thread-safe) calls
};

}  // namespace tt::tok
