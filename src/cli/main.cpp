// thintensor: the command-line entry point. Parses the subcommand, runs it, and turns a thrown
// tt::Error into one "error:" line and exit code 1 (usage errors exit 2).
#include "cli/command.h"
#include "core/error.h"
#include "core/log.h"

#ifdef THINTENSOR_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

namespace tt::cli {

std::vector<Command>& registry() {
    static std::vector<Command> commands;
    return commands;
}

Registration::Registration(std::string name, std::string description, int order, SetupFn setup) {
    registry().push_back({std::move(name), std::move(description), std::move(setup), order});
}

}  // namespace tt::cli

int main(int argc, char** argv) {
    using namespace tt;
#ifdef THINTENSOR_HAVE_CUDA
    cuda::register_backend();
#endif
    CLI::App app{"ThinTensor: pull, convert, verify and run causal language models on the GPU and CPU"};
    app.set_version_flag("--version", std::string("thintensor ") + THINTENSOR_VERSION);
    app.require_subcommand(1);
    bool quiet = false, verbose = false;
    app.add_flag("-q,--quiet", quiet, "Only errors on stderr");
    app.add_flag("-v,--verbose", verbose, "Debug messages on stderr");

    auto commands = cli::registry();
    std::sort(commands.begin(), commands.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
    std::map<CLI::App*, cli::RunFn> runs;
    for (const auto& c : commands) {
        CLI::App* sub = app.add_subcommand(c.name, c.description);
        runs[sub] = c.setup(*sub);
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    log::set_level(quiet ? log::Level::quiet : verbose ? log::Level::debug : log::Level::info);
    try {
        for (auto& [sub, run] : runs)
            if (sub->parsed()) return run();
    } catch (const Error& e) {
        std::fflush(stdout);
        fmt::print(stderr, "thintensor: error: {}\n", e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        std::fflush(stdout);
        fmt::print(stderr, "thintensor: error: out of memory\n");
        return 1;
    } catch (const std::exception& e) {
        // Not a tt::Error: a library threw on input that a check missed (a bug worth reporting),
        // still reported as an error rather than an abort.
        std::fflush(stdout);
        fmt::print(stderr, "thintensor: error: {}\n", e.what());
        return 1;
    }
    return 0;
}
