// Validators for numeric flags, shared by every subcommand, so that a bad value is a usage error
// (exit 2) whose message names the flag, the rule and the value given: NaN and infinities are
// refused by every number check, and no bound is printed as a 300-digit std::to_string(DBL_MAX).
// CLI11 runs a validator on the text before converting it, so these parse the text themselves.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace tt::cli {

// A finite number in [lo, hi] (or (lo, hi] / [lo, hi) with the open flags); `rule` is how --help
// and the error say it, e.g. "> 0" or "in (0, 1]".
CLI::Validator finite_number(double lo, double hi, bool lo_open, bool hi_open, const std::string& rule);
// Shorthands: any finite number >= 0; any finite number > 0.
CLI::Validator non_negative_number();
CLI::Validator positive_number();
// A whole number in [lo, hi]; the message gives the rule, e.g. "at least 1".
CLI::Validator int_in(int64_t lo, int64_t hi, const std::string& rule);
CLI::Validator int_at_least(int64_t lo);

// The most CPU threads --threads accepts: 4 x the hardware threads (more only adds contention,
// and a mistyped 1000 would otherwise start 1000 threads).
int max_threads();

}  // namespace tt::cli
