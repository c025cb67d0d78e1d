// `thintensor rm ORG/NAME[:REV]... | ARCHIVE.thin...`: removes a cached model — its folder, the
// archives converted from it, its lock file and any stale temporary files — or one cached archive
// by the name `list` shows. Ollama's `rm`.
#include "cli/command.h"
#include "core/log.h"
#include "core/progress.h"
#include "runtime/model_cache.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

static tt::cli::Registration reg(
    "rm", "Remove a model (ORG/NAME[:REV]) and its archives from the cache, or a cached archive", 12,
    [](CLI::App& sub) -> tt::cli::RunFn {
        auto names = std::make_shared<std::vector<std::string>>();
        sub.add_option("MODEL", *names, "ORG/NAME[:REV] as `thintensor list` shows it, or a cached archive's file name")
            ->required();
        return [names]() -> int {
            for (const auto& n : *names) {
                const tt::RemovedModel r = tt::remove_cached(n);
                for (const auto& p : r.paths) tt::log::debug("removed {}", p);
                tt::log::info("removed {} ({}, {} path{})", r.name, tt::format_bytes(double(r.bytes)), r.paths.size(),
                              r.paths.size() == 1 ? "" : "s");
            }
            return 0;
        };
    });
