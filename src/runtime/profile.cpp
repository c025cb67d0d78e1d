#include "runtime/profile.h"

#include "core/error.h"

namespace tt {

Profile parse_profile(const std::string& name) {
    if (name == "safe") return Profile::safe;
    if (name == "balanced") return Profile::balanced;
    fail("--profile '{}': unknown profile (choose safe or balanced)", name);
}

const char* profile_name(Profile p) { return p == Profile::safe ? "safe" : "balanced"; }

}  // namespace tt
