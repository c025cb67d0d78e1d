// Messages to the user go to stderr, so stdout stays clean for generated text and --json output.
#pragma once

#include <fmt/format.h>

#include <cstdio>

namespace tt::log {

// Set by the CLI's --quiet / --verbose; read by every message below.
enum class Level { quiet = 0, info = 1, debug = 2 };
Level level();
void set_level(Level l);

template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
    if (level() >= Level::info) fmt::print(stderr, "{}\n", fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
    fmt::print(stderr, "warning: {}\n", fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
    if (level() >= Level::debug) fmt::print(stderr, "debug: {}\n", fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace tt::log
