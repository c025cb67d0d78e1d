#include "core/data_files.h"

#include <filesystem>
#include <system_error>

namespace fs = std::filesystem;

namespace tt {

std::vector<std::string> data_dirs() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    const fs::path dir = self.parent_path();
    return {dir.string(), (dir / ".." / "share" / "thintensor").lexically_normal().string()};
}

std::string find_data_file(const std::string& relative) {
    for (const auto& d : data_dirs()) {
        const fs::path p = fs::path(d) / relative;
        std::error_code ec;
        if (fs::exists(p, ec)) return p.lexically_normal().string();
    }
    return "";
}

}  // namespace tt
