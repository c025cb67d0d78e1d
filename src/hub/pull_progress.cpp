#include "hub/pull_progress.h"

#include "core/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tt::hub {

PullProgress::PullProgress(std::string label, uint64_t total_bytes, size_t n_files, uint64_t resumed_bytes)
    : label_(std::move(label)), total_(total_bytes), done_(resumed_bytes), resumed_(resumed_bytes),
      n_files_(n_files), tty_(::isatty(2) != 0), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

PullProgress::~PullProgress() { abandon(); }

void PullProgress::set_bytes(uint64_t done) {
    std::lock_guard lock(mu_);
    done_ = done;
    draw(false, false);
}

void PullProgress::file_done() {
    std::lock_guard lock(mu_);
    ++n_done_;
    draw(false, false);
}

void PullProgress::finish() {
    std::lock_guard lock(mu_);
    if (ended_) return;
    ended_ = true;
    draw(true, false);
}

void PullProgress::abandon() {
    std::lock_guard lock(mu_);
    if (ended_) return;
    ended_ = true;
    draw(true, true);
}

std::string PullProgress::line(bool final, bool stopped) const {
    const double elapsed =
        std::max(1e-3, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    // The rate counts only what this run fetched: resumed bytes arrived in an earlier one.
    const double fetched = double(done_ > resumed_ ? done_ - resumed_ : 0);
    const double rate = fetched / elapsed;
    const double pct = total_ ? 100.0 * double(done_) / double(total_) : 100.0;
    std::string tail;
    if (stopped) tail = fmt::format("stopped after {}", format_duration(elapsed));
    else if (final) tail = fmt::format("done in {}", format_duration(elapsed));
    else if (rate > 0 && total_ > done_) tail = fmt::format("ETA {}", format_duration(double(total_ - done_) / rate));
    else tail = "ETA --";
    return fmt::format("{} {:5.1f}% {} / {}, {}/{} files, {}/s, {}", label_, pct, format_bytes(double(done_)),
                       format_bytes(double(total_)), n_done_, n_files_, format_bytes(rate), tail);
}

void PullProgress::draw(bool final, bool stopped) {
    const auto now = std::chrono::steady_clock::now();
    // A terminal is redrawn 10 times a second; a log gets a line every 5 s and the last one.
    if (!final && std::chrono::duration<double>(now - last_draw_).count() < (tty_ ? 0.1 : 5.0)) return;
    last_draw_ = now;
    const std::string text = line(final, stopped);
    if (tty_)
        fmt::print(stderr, "\r\033[K{}{}", text, final ? "\n" : "");
    else
        fmt::print(stderr, "{}\n", text);
    std::fflush(stderr);
}

}  // namespace tt::hub
