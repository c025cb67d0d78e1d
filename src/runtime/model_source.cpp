#include "runtime/model_source.h"

#include "convert/convert.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"
#include "format/archive.h"
#include "hub/hub.h"
#include "model/hf_config.h"
#include "runtime/default_model.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace tt {

std::string thintensor_home() {
    if (const char* h = std::getenv("THINTENSOR_HOME"); h && *h) return h;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "thintensor").string();
    if (const char* home = std::getenv("HOME"); home && *home) return (fs::path(home) / ".cache" / "thintensor").string();
    fail("cannot find a cache directory: set THINTENSOR_HOME");
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
    if (!hub::looks_like_repo_id(model)) return model;
    log::info("{} is not a local path: fetching it from the Hugging Face Hub ({})", model, hub::endpoint());
    return hub::pull(model, hub::PullOptions{});
}

std::string unsupported_architecture(const std::string& path) {
    const fs::path cfg = fs::path(path) / "config.json";
    if (!fs::is_directory(path) || !fs::is_regular_file(cfg)) return "";
    std::ifstream f(cfg);
    const auto j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
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
        const fs::path cache = fs::path(thintensor_home()) / "archives";
        fs::create_directories(cache);
        const std::string name = fs::absolute(p).lexically_normal().filename().string();
        const fs::path out = cache / (name + "-" + model_directory_key(p.string()) + ".thin");
        if (fs::exists(out)) {
            log::info("using cached archive {}", out.string());
            return out.string();
        }
        log::info("converting {} into the cache: {}", model, out.string());
        convert_hf(model, out.string(), ConvertOptions{});
        return out.string();
    }
    fail("{}: no such model file or directory", model);
}

}  // namespace tt
