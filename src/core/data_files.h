// Files ThinTensor ships beside its binary (the transformers helper, the embedded default model):
// next to the executable in the build tree, and under PREFIX/share/thintensor once installed
// (CMakeLists.txt puts them in both places).
#pragma once

#include <string>
#include <vector>

namespace tt {

// The folders searched, in order: the executable's own folder, then ../share/thintensor from it.
std::vector<std::string> data_dirs();
// The first data folder's `relative` path that exists; "" when none has it.
std::string find_data_file(const std::string& relative);

}  // namespace tt
