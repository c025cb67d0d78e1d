// `thintensor list [--json]`: the models and archives in the cache (what `pull`, `run ORG/NAME` and
// `run DIR` put there), with size and when each was last used — Ollama's `list`.
#include "cli/command.h"
#include "core/progress.h"
#include "runtime/model_cache.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ctime>
#include <filesystem>
#include <memory>

namespace {

std::string iso_time(int64_t t) { return t > 0 ? tt::format_utc_iso8601(t) : ""; }

// "just now", "5 minutes ago", "3 days ago": how Ollama's list says it.
std::string ago(int64_t t) {
    if (t <= 0) return "?";
    const int64_t d = int64_t(std::time(nullptr)) - t;
    auto plural = [](int64_t n, const char* unit) { return fmt::format("{} {}{} ago", n, unit, n == 1 ? "" : "s"); };
    if (d < 60) return "just now";
    if (d < 3600) return plural(d / 60, "minute");
    if (d < 86400) return plural(d / 3600, "hour");
    return plural(d / 86400, "day");
}

nlohmann::ordered_json archive_json(const tt::CachedArchive& a) {
    return {{"path", a.path}, {"size", a.size}, {"last_used", iso_time(a.last_used)}, {"source", a.source}};
}

int run(bool json) {
    const tt::CacheListing c = tt::list_cache();
    if (json) {
        nlohmann::ordered_json models = nlohmann::ordered_json::array(), archives = nlohmann::ordered_json::array();
        for (const auto& m : c.models) {
            nlohmann::ordered_json ar = nlohmann::ordered_json::array();
            for (const auto& a : m.archives) ar.push_back(archive_json(a));
            models.push_back({{"name", m.name}, {"repo", m.repo}, {"revision", m.revision}, {"commit", m.commit},
                              {"path", m.dir}, {"complete", m.complete}, {"pulling", m.pulling}, {"files", m.n_files},
                              {"size", m.size}, {"last_used", iso_time(m.last_used)}, {"archives", ar}});
        }
        for (const auto& a : c.archives) archives.push_back(archive_json(a));
        const nlohmann::ordered_json j{{"home", c.home}, {"models", models}, {"archives", archives},
                                       {"stale_temp_files", c.stale_temp}};
        fmt::print("{}\n", j.dump(2));
        return 0;
    }
    if (c.models.empty() && c.archives.empty()) {
        fmt::print(stderr, "the cache ({}) is empty\n", c.home);
        return 0;
    }
    fmt::print("{:<44} {:<12} {:>10}  {:<16} {}\n", "NAME", "COMMIT", "SIZE", "LAST USED", "STATUS");
    for (const auto& m : c.models) {
        uint64_t total = m.size;
        for (const auto& a : m.archives) total += a.size;
        std::string status = m.pulling ? "pulling" : m.complete ? "complete" : "incomplete (pull again to resume)";
        if (!m.archives.empty()) status += fmt::format(", {} archive{}", m.archives.size(), m.archives.size() == 1 ? "" : "s");
        fmt::print("{:<44} {:<12} {:>10}  {:<16} {}\n", m.name, m.commit.substr(0, 12), tt::format_bytes(double(total)),
                   ago(m.last_used), status);
    }
    for (const auto& a : c.archives)
        fmt::print("{:<44} {:<12} {:>10}  {:<16} {}\n", std::filesystem::path(a.path).filename().string(), "-",
                   tt::format_bytes(double(a.size)), ago(a.last_used),
                   a.source.empty() ? "archive" : "archive of " + a.source);
    if (!c.stale_temp.empty())
        fmt::print(stderr, "{} temporary file{} of interrupted writes (removed by the next use, or by `thintensor rm`)\n",
                   c.stale_temp.size(), c.stale_temp.size() == 1 ? "" : "s");
    return 0;
}

}  // namespace

static tt::cli::Registration reg("list", "List the models and archives in the cache (size, last use)", 11,
                                 [](CLI::App& sub) -> tt::cli::RunFn {
                                     auto json = std::make_shared<bool>(false);
                                     sub.add_flag("--json", *json, "Print JSON");
                                     return [json]() -> int { return run(*json); };
                                 });
