#include "core/progress.h"

#include "core/log.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <exception>

namespace tt {

std::string format_utc_iso8601(int64_t t) {
    const std::time_t when = t < 0 ? std::time(nullptr) : std::time_t(t);
    std::tm tm{};
    gmtime_r(&when, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string format_bytes(double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024.0 && u < 4) {
        b /= 1024.0;
        ++u;
    }
    return u == 0 ? fmt::format("{:.0f} {}", b, units[u]) : fmt::format("{:.2f} {}", b, units[u]);
}

std::string format_duration(double s) {
    if (s < 60) return fmt::format("{:.1f} s", s);
    const int m = int(s / 60);
    return fmt::format("{}m{:02d}s", m, int(s - 60 * m));
}

Progress::Progress(std::string label, uint64_t total_bytes)
    : label_(std::move(label)), total_(total_bytes), tty_(::isatty(2) != 0),
      enabled_(log::level() >= log::Level::info), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

Progress::~Progress() {
    // Unwinding from an error: the work did not finish, so no "done" line; end a redrawn bar.
    if (std::uncaught_exceptions() > 0) {
        std::lock_guard lock(mu_);
        if (!finished_ && enabled_ && tty_) std::fputs("\n", stderr);
        finished_ = true;
        return;
    }
    finish();
}

void Progress::add(uint64_t bytes) {
    std::lock_guard lock(mu_);
    done_ += bytes;
    draw(false);
}

void Progress::set(uint64_t bytes) {
    std::lock_guard lock(mu_);
    done_ = bytes;
    draw(false);
}

void Progress::finish() {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
    draw(true);
}

void Progress::draw(bool final) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const double since_draw = std::chrono::duration<double>(now - last_draw_).count();
    // A terminal is redrawn 10 times a second; a log file gets a line every 5 s and the last one.
    if (!final && since_draw < (tty_ ? 0.1 : 5.0)) return;
    last_draw_ = now;
    const double elapsed = std::max(1e-9, std::chrono::duration<double>(now - start_).count());
    const double rate = double(done_) / elapsed;
    const double frac = total_ ? double(done_) / double(total_) : 1.0;
    const double eta = rate > 0 && total_ > done_ ? double(total_ - done_) / rate : 0.0;
    std::string line;
    if (tty_) {
        constexpr int k_width = 30;
        const int filled = int(frac * k_width + 0.5);
        line = fmt::format("\r{} [{}{}] {:5.1f}% {} / {} {}/s {} ", label_, std::string(size_t(filled), '#'),
                           std::string(size_t(k_width - filled), '.'), 100 * frac, format_bytes(double(done_)),
                           format_bytes(double(total_)), format_bytes(rate),
                           final ? fmt::format("in {}", format_duration(elapsed)) : fmt::format("ETA {}", format_duration(eta)));
        if (final) line += "\n";
    } else {
        line = fmt::format("{}: {:.1f}% {} / {} {}/s{}\n", label_, 100 * frac, format_bytes(double(done_)),
                           format_bytes(double(total_)), format_bytes(rate),
                           final ? fmt::format(" done in {}", format_duration(elapsed)) : "");
    }
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
}

}  // namespace tt
