// Progress display for long work (convert, pull, load): a redrawn bar with bytes, rate and ETA
// when stderr is a terminal, a plain line every few seconds otherwise, nothing under --quiet.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace tt {

class Progress {
public:
    Progress(std::string label, uint64_t total_bytes);
    ~Progress();
    void add(uint64_t bytes);   // thread-safe
    void set(uint64_t bytes);   // thread-safe
    void finish();              // prints the final line (once)

private:
    void draw(bool final);
    std::string label_;
    uint64_t total_;
    uint64_t done_ = 0;
    bool tty_;
    bool enabled_;
    bool finished_ = false;
    std::chrono::steady_clock::time_point start_, last_draw_;
    std::mutex mu_;
};

// "1.50 GiB", "12.0 MiB", "512 B".
std::string format_bytes(double bytes);
// "1.2 s", "3m05s".
std::string format_duration(double seconds);
// "2026-12-01T11:57:02Z" (UTC) for seconds since the epoch; now when t < 0.
std::string format_utc_iso8601(int64_t t = -1);

}  // namespace tt
