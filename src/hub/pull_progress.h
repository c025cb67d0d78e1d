// The progress display of a pull: bytes, files, rate and ETA redrawn on one line on a terminal,
// a plain line every few seconds otherwise (logs, CI). Unlike a generic bar it knows a pull can
// stop early: abandon() ends the display with where it stopped instead of a "done" line, and bytes
// already on disk from an interrupted pull count as done but not towards the rate.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace tt::hub {

class PullProgress {
public:
    PullProgress(std::string label, uint64_t total_bytes, size_t n_files, uint64_t resumed_bytes);
    ~PullProgress();
    PullProgress(const PullProgress&) = delete;
    PullProgress& operator=(const PullProgress&) = delete;

    void set_bytes(uint64_t done);  // thread-safe
    void file_done();               // thread-safe
    void finish();                  // "done in ..." (once)
    void abandon();                 // "stopped at ..." (once; the destructor's default)

private:
    void draw(bool final, bool stopped);
    std::string line(bool final, bool stopped) const;
    std::string label_;
    uint64_t total_, done_, resumed_;
    size_t n_files_, n_done_ = 0;
    bool tty_, ended_ = false;
    std::chrono::steady_clock::time_point start_, last_draw_;
    std::mutex mu_;
};

}  // namespace tt::hub
