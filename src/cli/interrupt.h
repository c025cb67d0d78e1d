// Ctrl-C during generation: the first SIGINT sets a flag that generate() polls through
// GenerateOptions::should_stop, so the command ends the output cleanly, prints the statistics so
// far (stop reason "interrupted") and exits 130; a second SIGINT gets the previous disposition
// (the default: the process ends at once). Installed only for the generation phase and restored
// afterwards, so it stacks with other handlers, such as core/output_file's temp-file cleanup that
// is active while a model converts into the cache.
#pragma once

namespace tt::cli {

inline constexpr int k_exit_interrupted = 130;  // 128 + SIGINT, what shells report for Ctrl-C

class InterruptScope {
public:
    // Leaves SIGINT alone when it is ignored (nohup, a background job of a script): whoever
    // ignored it did not want Ctrl-C to reach us.
    InterruptScope();
    ~InterruptScope();  // restores the previous handler
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

    // True once SIGINT arrived while this scope was active.
    bool interrupted() const;
};

}  // namespace tt::cli
