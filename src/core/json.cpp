#include "core/json.h"

#include "core/error.h"
#include "core/output_file.h"

namespace tt {

namespace {

struct TooDeep {};

template <typename Json>
Json parse_bounded(std::string_view text, const std::string& what) {
    // note: the callback sees each value's depth before it is built; refusing at the first value
    // past the bound keeps the partial tree shallow as well.
    typename Json::parser_callback_t bound = [](int depth, nlohmann::json::parse_event_t event, Json&) {
        if (depth >= k_max_json_depth &&
            (event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start))
            throw TooDeep{};
        return true;
    };
    try {
        return Json::parse(text.begin(), text.end(), bound);
    } catch (const TooDeep&) {
        fail("{}: JSON nested deeper than {} levels", what, k_max_json_depth);
    } catch (const nlohmann::json::exception& e) {
        fail("{}: invalid JSON: {}", what, e.what());
    }
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& what) {
    return parse_bounded<nlohmann::json>(text, what);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& what) {
    return parse_bounded<nlohmann::ordered_json>(text, what);
}

nlohmann::json read_json_file(const std::string& path) { return parse_json(read_file(path), path); }

}  // namespace tt
