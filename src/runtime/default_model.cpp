#include "runtime/default_model.h"

#include "core/data_files.h"
#include "core/error.h"
#include "core/log.h"

#include <fmt/ranges.h>

#include <filesystem>

namespace tt {

namespace {
constexpr const char* k_relative = "models/tinystories-656k";
}

std::string default_model_dir() {
    const std::string dir = find_data_file(std::string(k_relative) + "/config.json");
    if (dir.empty()) {
        std::vector<std::string> looked;
        for (const auto& d : data_dirs()) looked.push_back((std::filesystem::path(d) / k_relative).string());
        fail("no MODEL given, and the embedded default model ({}) is not installed beside the binary (looked in {}); "
             "name a model: a .thin archive, a Hugging Face folder or a Hub id",
             k_default_model_name, fmt::join(looked, ", "));
    }
    const std::string folder = std::filesystem::path(dir).parent_path().string();
    log::info("model: the embedded default, {} ({})", k_default_model_name, folder);
    return folder;
}

}  // namespace tt
