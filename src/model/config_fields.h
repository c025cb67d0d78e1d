// Typed reads of one JSON object of a model's configuration (config.json, generation_config.json,
// a nested "rope_parameters"): every accessor checks the JSON type and the range and names the
// file and the field in its error ("config.json: 'rope_parameters.factor' must be a number, got
// \"2\""), so a wrong type or an out-of-range value never surfaces as a library message or a
// silently truncated integer. All integers are read as 64-bit before the range check.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tt {

class ConfigFields {
public:
    // `j` must outlive this object. `file` names the source in errors; `prefix` is this object's
    // path inside it ("rope_parameters.") so nested fields are named in full. A null `j` reads as
    // an empty object (an absent generation_config.json); anything else that is not an object is
    // an error.
    ConfigFields(const nlohmann::json& j, std::string file, std::string prefix = "");

    // The value under `key` when present and not null.
    const nlohmann::json* find(const char* key) const;
    bool has(const char* key) const { return find(key) != nullptr; }

    int64_t req_int(const char* key, int64_t min, int64_t max) const;
    int64_t opt_int(const char* key, int64_t dflt, int64_t min, int64_t max) const;
    // A finite number (integers are accepted).
    double opt_num(const char* key, double dflt) const;
    bool opt_bool(const char* key, bool dflt) const;
    std::string opt_str(const char* key, const std::string& dflt) const;
    // The same, for fields that must be present ("missing '<field>'").
    double req_num(const char* key) const;
    bool req_bool(const char* key) const;
    std::string req_str(const char* key) const;
    ConfigFields req_object(const char* key) const;
    // An integer or a list of integers (eos_token_id); nullopt when absent.
    std::optional<std::vector<int64_t>> opt_int_list(const char* key, int64_t min, int64_t max) const;
    // A list of strings (layer_types); nullopt when absent.
    std::optional<std::vector<std::string>> opt_str_list(const char* key) const;
    // A nested object, its fields named "<prefix><key>."; nullopt when absent.
    std::optional<ConfigFields> opt_object(const char* key) const;

    // "'<prefix><key>'", for messages about a field that has been read.
    std::string name(const char* key) const { return "'" + prefix_ + key + "'"; }
    const std::string& file() const { return file_; }

private:
    [[noreturn]] void type_error(const char* key, const char* want, const nlohmann::json& got) const;
    int64_t to_int(const char* key, const nlohmann::json& v, int64_t min, int64_t max) const;
    const nlohmann::json* j_;
    std::string file_, prefix_;
};

}  // namespace tt
