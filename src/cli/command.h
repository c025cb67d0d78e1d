// Subcommand registry. Each src/cli/<name>.cpp registers one subcommand with a static
// Registration; main.cpp parses argv, runs the chosen command and prints any tt::Error once.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace tt::cli {

// setup() declares the subcommand's options on `sub` (binding them to state it owns) and returns
// the function that runs the command once parsing succeeded; that function returns the exit code.
using RunFn = std::function<int()>;
using SetupFn = std::function<RunFn(CLI::App& sub)>;

struct Command {
    std::string name;
    std::string description;
    SetupFn setup;
    int order;  // position in --help
};

std::vector<Command>& registry();

struct Registration {
    Registration(std::string name, std::string description, int order, SetupFn setup);
};

}  // namespace tt::cli
