#include "runtime/model_source.h"

#include "convert/convert.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/log.h"
#include "core/output_file.h"
#include "format/archive.h"
#include "hub/hub.h"
#include "model/hf_config.h"
#include "runtime/default_model.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace tt {

std::string thintensor_home() { return hub::thintensor_home(); }

std::string archive_cache_dir() { return (fs::path(thintensor_home()) / "archives").string(); }

bool looks_like_path(const std::string& s) {
    std::error_code ec;
    if (fs::exists(s, ec)) return true;
    if (hub::has_model_file_extension(s)) return true;
    for (const char* start : {"./", "../", "/", "~"})
        if (s.starts_with(start)) return true;
    // Slashes before the revision: ORG/NAME:refs/pr/3 is a Hub id.
    const std::string_view id = std::string_view(s).substr(0, s.find(':'));
    return s == "." || s == ".." || std::count(id.begin(), id.end(), '/') > 1 || s.find('\\') != std::string::npos;
}

void ensure_cache_dir(const std::string& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        fail("cannot create the cache directory {}: {} (set THINTENSOR_HOME to a writable directory)", dir, ec.message());
    if (::access(dir.c_str(), W_OK) != 0)
        fail("the cache directory {} is not writable: {} (set THINTENSOR_HOME to a writable directory)", dir,
             std::strerror(errno));
}

static bool has_thin_magic(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    char magic[8] = {};
    return f.read(magic, 8) && std::memcmp(magic, k_thin_magic, 8) == 0;
}

std::string model_directory_key(const std::string& dir_arg) {
    const fs::path dir(dir_arg);
    std::string desc = fs::absolute(dir).lexically_normal().string();
    std::vector<fs::directory_entry> entries(fs::directory_iterator(dir), fs::directory_iterator{});
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
    for (const auto& e : entries) {
        if (!e.is_regular_file()) continue;
        desc += '\n' + e.path().filename().string() + ' ' + std::to_string(e.file_size()) + ' ' +
                std::to_string(e.last_write_time().time_since_epoch().count());
    }
    return hex64(xxh3_64(desc.data(), desc.size()));
}

std::string fetch_model(const std::string& model) {
    if (model.empty()) return default_model_dir();  // no MODEL given: the embedded default
    // A local path wins; a string that can only be a path and names nothing fails here, at once,
    // rather than as a Hub id after a round of network retries.
    if (looks_like_path(model)) {
        std::error_code ec;
        if (!fs::exists(model, ec)) fail("{}: no such model file or directory", model);
        return model;
    }
    if (!hub::looks_like_repo_id(model)) return model;
    log::info("{} is not a local path: fetching it from the Hugging Face Hub ({})", model, hub::endpoint());
    return hub::pull(model, hub::PullOptions{});
}

std::string unsupported_architecture(const std::string& path) {
    const fs::path cfg = fs::path(path) / "config.json";
    if (!fs::is_directory(path) || !fs::is_regular_file(cfg)) return "";
    nlohmann::json j;
    try {
        j = read_json_file(cfg.string());
    } catch (const Error&) {
        return "";  // not readable JSON: resolve_model (the converter) says what is wrong with it
    }
    if (!j.is_object() || !j.contains("architectures") || !j["architectures"].is_array() || j["architectures"].empty() ||
        !j["architectures"][0].is_string())
        return "";
    const std::string arch = j["architectures"][0].get<std::string>();
    const auto supported = supported_architectures();
    return std::find(supported.begin(), supported.end(), arch) == supported.end() ? arch : "";
}

std::string resolve_model(const std::string& model_arg) {
    // ORG/NAME[:REV]: pull (or find complete in the cache), then convert the folder below.
    const std::string model = fetch_model(model_arg);
    const fs::path p(model);
    if (fs::is_regular_file(p)) {
        if (!has_thin_magic(p)) fail("{}: not a .thin archive (convert a model directory with `thintensor convert`)", model);
        return model;
    }
    if (fs::is_directory(p)) {
        if (!fs::exists(p / "config.json")) fail("{}: not a model directory (no config.json)", model);
        const fs::path cache = archive_cache_dir();
        std::error_code ec;
        const std::string name = fs::absolute(p).lexically_normal().filename().string();
        const fs::path out = cache / (name + "-" + model_directory_key(p.string()) + ".thin");
        if (fs::exists(out, ec)) {
            log::info("using cached archive {}", out.string());
            hub::mark_used(out.string());
            return out.string();
        }
        ensure_cache_dir(cache.string());
        // Conversions killed by SIGKILL (or a power cut) leave their temporary archives: remove
        // those no live process holds.
        for (const auto& stale : sweep_stale_temp_files(cache.string()))
            log::info("removed {} (left by an interrupted conversion)", stale);
        log::info("converting {} into the cache: {}", model, out.string());
        convert_hf(model, out.string(), ConvertOptions{});
        return out.string();
    }
    fail("{}: no such model file or directory", model);
}

}  // namespace tt
