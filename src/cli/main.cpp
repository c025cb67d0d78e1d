// thintensor: the command-line entry point. Parses the subcommand, runs it, and turns a thrown
// tt::Error into one "error:" line and exit code 1. Usage errors (an unknown command or flag, a bad
// flag value) exit 2, whichever of CLI11's own codes (104-109) the parser raised; --help and
// --version exit 0. The global flags -q and -v may come before or after the command.
#include "cli/command.h"
#include "core/error.h"
#include "core/log.h"

#ifdef THINTENSOR_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string_view>

namespace tt::cli {

std::vector<Command>& registry() {
    static std::vector<Command> commands;
    return commands;
}

Registration::Registration(std::string name, std::string description, int order, SetupFn setup) {
    registry().push_back({std::move(name), std::move(description), std::move(setup), order});
}

}  // namespace tt::cli

namespace {

constexpr int k_exit_usage = 2;

// Levenshtein distance, to suggest the command a typo meant.
size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

int usage_error(const std::string& message, const std::string& command) {
    std::fflush(stdout);
    fmt::print(stderr, "thintensor: error: {}\nRun 'thintensor {}--help' for usage.\n", message,
               command.empty() ? "" : command + " ");
    return k_exit_usage;
}

// The first word that is not a flag must be a command. CLI11 would say only "A subcommand is
// required" for a mistyped one; this names it and lists the commands. Only flags without a value
// are global, so every word before the command is a flag.
std::string unknown_command_message(int argc, char** argv, const std::vector<tt::cli::Command>& commands) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--") return "";
        if (!arg.empty() && arg[0] == '-') continue;
        for (const auto& c : commands)
            if (c.name == arg) return "";
        std::vector<std::string> names, close;
        for (const auto& c : commands) {
            names.push_back(c.name);
            if (edit_distance(arg, c.name) <= 2) close.push_back("'" + c.name + "'");
        }
        std::string msg = fmt::format("unknown command '{}'", arg);
        if (!close.empty()) msg += fmt::format(" (did you mean {}?)", fmt::join(close, " or "));
        return msg + fmt::format("; the commands are: {}", fmt::join(names, ", "));
    }
    return "";
}

}  // namespace

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
    // Inherited by every subcommand added below: a flag a subcommand does not know is tried on
    // the top level, so `chat -v` and `pull --quiet` work as well as `-v chat`.
    app.fallthrough();

    auto commands = cli::registry();
    std::sort(commands.begin(), commands.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
    std::map<CLI::App*, cli::RunFn> runs;
    for (const auto& c : commands) {
        CLI::App* sub = app.add_subcommand(c.name, c.description);
        sub->footer("The global flags -q/--quiet and -v/--verbose may also be given after the command.");
        runs[sub] = c.setup(*sub);
    }
    if (const std::string msg = unknown_command_message(argc, argv, commands); !msg.empty()) return usage_error(msg, "");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
        std::string command;
        for (const auto* sub : app.get_subcommands()) command = sub->get_name();
        if (command.empty() && e.get_name() == "RequiredError" && std::string_view(e.what()).find("subcommand") != std::string_view::npos) {
            std::vector<std::string> names;
            for (const auto& c : commands) names.push_back(c.name);
            return usage_error(fmt::format("no command given; the commands are: {}", fmt::join(names, ", ")), "");
        }
        return usage_error(e.what(), command);
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
