// `thintensor pull ORG/NAME[:REVISION]`: download a model from the Hugging Face Hub (or the
// HF_ENDPOINT mirror) into the cache, resumable and verified; prints the model folder on stdout so
// scripts can use it (`dir=$(thintensor pull org/name)`), or with --json what it pulled. The global
// -q (no progress display, no info lines) applies.
#include "cli/command.h"
#include "core/log.h"
#include "hub/hub.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace {
struct Opts {
    std::string repo;
    std::string revision;
    tt::hub::PullOptions pull;
    bool json = false;
};
}  // namespace

static tt::cli::Registration reg(
    "pull", "Download a model from the Hugging Face Hub (resumable, sha256-verified)", 10,
    [](CLI::App& sub) -> tt::cli::RunFn {
        auto o = std::make_shared<Opts>();
        sub.add_option("REPO", o->repo, "Model id ORG/NAME, optionally ORG/NAME:REVISION (branch, tag or commit)")
            ->required();
        sub.add_option("--revision", o->revision, "Revision when REPO has no ':REVISION' (default: main)");
        sub.add_option("--include", o->pull.include,
                       "Also download files matching GLOB (repeatable; default set: *.safetensors, *.json, "
                       "tokenizer.model, *.txt, *.jinja)")
            ->type_name("GLOB")
            ->take_all();
        sub.add_option("--exclude", o->pull.exclude, "Skip files matching GLOB (repeatable; wins over --include)")
            ->type_name("GLOB")
            ->take_all();
        sub.add_option("--cache-dir", o->pull.cache_dir,
                       "Cache root (default $THINTENSOR_HOME/models or ~/.cache/thintensor/models)")
            ->type_name("DIR");
        sub.add_option("--jobs,-j", o->pull.jobs, "Files downloaded in parallel")->capture_default_str();
        sub.add_option("--retries", o->pull.retries, "Retries per file on transient network errors")
            ->capture_default_str();
        sub.add_flag("--json", o->json,
                     "Print JSON on stdout: repo, revision, commit, path, source, files, bytes (instead of the folder)");
        return [o]() -> int {
            if (!o->revision.empty()) o->pull.revision = o->revision;
            o->pull.quiet = tt::log::level() == tt::log::Level::quiet;
            const tt::hub::PullResult r = tt::hub::pull_model(o->repo, o->pull);
            if (!o->json) {
                fmt::print("{}\n", r.dir);
                return 0;
            }
            nlohmann::ordered_json files = nlohmann::ordered_json::array();
            for (const auto& f : r.files)
                files.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}, {"downloaded", f.downloaded}});
            const nlohmann::ordered_json j{{"repo", r.repo},   {"revision", r.revision}, {"commit", r.commit},
                                           {"path", r.dir},    {"source", r.source},     {"bytes", r.bytes},
                                           {"bytes_downloaded", r.bytes_downloaded},    {"files", files}};
            fmt::print("{}\n", j.dump(2));
            return 0;
        };
    });
