#include "model/config_fields.h"

#include "core/error.h"

#include <cmath>

namespace tt {

namespace {
// A value for a message: short, so a huge array does not flood the terminal.
std::string shown(const nlohmann::json& v) {
    std::string s = v.dump();
    if (s.size() > 60) s = s.substr(0, 57) + "...";
    return s;
}
}  // namespace

ConfigFields::ConfigFields(const nlohmann::json& j, std::string file, std::string prefix)
    : j_(&j), file_(std::move(file)), prefix_(std::move(prefix)) {
    if (!j.is_null() && !j.is_object())
        fail("{}: {} must be a JSON object, got {}", file_, prefix_.empty() ? std::string("the file") : "'" + prefix_.substr(0, prefix_.size() - 1) + "'",
             shown(j));
}

const nlohmann::json* ConfigFields::find(const char* key) const {
    if (!j_->is_object()) return nullptr;
    auto it = j_->find(key);
    return it == j_->end() || it->is_null() ? nullptr : &*it;
}

void ConfigFields::type_error(const char* key, const char* want, const nlohmann::json& got) const {
    fail("{}: {} must be {}, got {}", file_, name(key), want, shown(got));
}

int64_t ConfigFields::to_int(const char* key, const nlohmann::json& v, int64_t min, int64_t max) const {
    if (!v.is_number_integer()) type_error(key, "an integer", v);
    // note: nlohmann keeps integers above INT64_MAX as unsigned; get<int64_t>() would wrap them.
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(max))
        fail("{}: {} is {}, outside the supported range [{}, {}]", file_, name(key), v.dump(), min, max);
    const int64_t x = v.get<int64_t>();
    if (x < min || x > max) fail("{}: {} is {}, outside the supported range [{}, {}]", file_, name(key), x, min, max);
    return x;
}

int64_t ConfigFields::req_int(const char* key, int64_t min, int64_t max) const {
    const auto* v = find(key);
    if (!v) fail("{}: missing {}", file_, name(key));
    return to_int(key, *v, min, max);
}

int64_t ConfigFields::opt_int(const char* key, int64_t dflt, int64_t min, int64_t max) const {
    const auto* v = find(key);
    return v ? to_int(key, *v, min, max) : dflt;
}

double ConfigFields::opt_num(const char* key, double dflt) const {
    const auto* v = find(key);
    if (!v) return dflt;
    if (!v->is_number()) type_error(key, "a number", *v);
    const double x = v->get<double>();
    if (!std::isfinite(x)) fail("{}: {} must be finite, got {}", file_, name(key), v->dump());
    return x;
}

bool ConfigFields::opt_bool(const char* key, bool dflt) const {
    const auto* v = find(key);
    if (!v) return dflt;
    if (!v->is_boolean()) type_error(key, "true or false", *v);
    return v->get<bool>();
}

std::string ConfigFields::opt_str(const char* key, const std::string& dflt) const {
    const auto* v = find(key);
    if (!v) return dflt;
    if (!v->is_string()) type_error(key, "a string", *v);
    return v->get<std::string>();
}

double ConfigFields::req_num(const char* key) const {
    if (!has(key)) fail("{}: missing {}", file_, name(key));
    return opt_num(key, 0.0);
}

bool ConfigFields::req_bool(const char* key) const {
    if (!has(key)) fail("{}: missing {}", file_, name(key));
    return opt_bool(key, false);
}

std::string ConfigFields::req_str(const char* key) const {
    if (!has(key)) fail("{}: missing {}", file_, name(key));
    return opt_str(key, "");
}

ConfigFields ConfigFields::req_object(const char* key) const {
    if (!has(key)) fail("{}: missing {}", file_, name(key));
    return *opt_object(key);
}

std::optional<std::vector<int64_t>> ConfigFields::opt_int_list(const char* key, int64_t min, int64_t max) const {
    const auto* v = find(key);
    if (!v) return std::nullopt;
    std::vector<int64_t> out;
    if (v->is_array()) {
        for (const auto& e : *v) {
            if (!e.is_number_integer()) type_error(key, "an integer or a list of integers", *v);
            out.push_back(to_int(key, e, min, max));
        }
    } else {
        if (!v->is_number_integer()) type_error(key, "an integer or a list of integers", *v);
        out.push_back(to_int(key, *v, min, max));
    }
    return out;
}

std::optional<std::vector<std::string>> ConfigFields::opt_str_list(const char* key) const {
    const auto* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_array()) type_error(key, "a list of strings", *v);
    std::vector<std::string> out;
    for (const auto& e : *v) {
        if (!e.is_string()) type_error(key, "a list of strings", *v);
        out.push_back(e.get<std::string>());
    }
    return out;
}

std::optional<ConfigFields> ConfigFields::opt_object(const char* key) const {
    const auto* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_object()) type_error(key, "an object", *v);
    return ConfigFields(*v, file_, prefix_ + key + ".");
}

}  // namespace tt
