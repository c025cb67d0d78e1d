// The dynamic value of the Jinja engine, with Python's semantics where chat templates can see them:
// truthiness, str()/repr(), ==/< across int/float/bool, undefined that prints empty but fails on
// attribute access, json.dumps as transformers' `tojson` calls it.
//
// Lists and dicts are shared and never mutated once built (transformers renders in an
// ImmutableSandboxedEnvironment, so templates cannot call .append() or .update()); the only
// mutable object is a namespace(), which is what `{% set ns.x = ... %}` writes to.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tt::jinja {

// Thrown by value operations that have no source position; the renderer catches it and rethrows
// a tt::Error carrying the line and column of the expression being evaluated.
struct OpError {
    std::string message;
};
[[noreturn]] void op_fail(std::string message);

class Value;
using Array = std::vector<Value>;

// A Python dict with string keys, in insertion order (json.dumps and loops keep it).
struct Object {
    std::vector<std::pair<std::string, Value>> items;
    bool is_namespace = false;  // a namespace(): attributes, assignable with {% set ns.x %}
    const Value* find(std::string_view key) const;
    void set(const std::string& key, Value v);
};

// Arguments of a call: positional then keyword, as written.
struct Args {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
    // Python-style binding: the i-th positional or the keyword `name`, else nullptr.
    const Value* get(size_t i, std::string_view name) const;
};

struct Callable {
    std::string name;
    std::function<Value(const Args&)> fn;
};

class Value {
public:
    enum class Kind : uint8_t { undefined, none, boolean, integer, floating, string, array, object, callable };

    Value() = default;  // undefined
    static Value undefined(std::string hint) {
        Value v;
        v.str_ = std::move(hint);
        return v;
    }
    static Value none() { return Value(Kind::none); }
    Value(bool b) : kind_(Kind::boolean), int_(b) {}
    Value(int v) : kind_(Kind::integer), int_(v) {}
    Value(int64_t v) : kind_(Kind::integer), int_(v) {}
    Value(double v) : kind_(Kind::floating), float_(v) {}
    Value(std::string s) : kind_(Kind::string), str_(std::move(s)) {}
    Value(const char* s) : kind_(Kind::string), str_(s) {}
    Value(Array a);
    // A Python tuple: a list that prints as (a, b). dict.items() and (a, b) literals make these.
    static Value tuple(Array a) {
        Value v(std::move(a));
        v.int_ = 1;
        return v;
    }
    Value(std::shared_ptr<Object> o);
    Value(std::shared_ptr<Callable> c) : kind_(Kind::callable), callable_(std::move(c)) {}
    static Value function(std::string name, std::function<Value(const Args&)> fn) {
        return Value(std::make_shared<Callable>(Callable{std::move(name), std::move(fn)}));
    }

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::undefined; }
    bool is_none() const { return kind_ == Kind::none; }
    bool is_bool() const { return kind_ == Kind::boolean; }
    bool is_int() const { return kind_ == Kind::integer; }
    bool is_float() const { return kind_ == Kind::floating; }
    // Python: bool is an int, so True + 1 == 2.
    bool is_number() const { return kind_ == Kind::integer || kind_ == Kind::floating || kind_ == Kind::boolean; }
    bool is_string() const { return kind_ == Kind::string; }
    bool is_array() const { return kind_ == Kind::array; }
    bool is_tuple() const { return kind_ == Kind::array && int_ == 1; }
    bool is_object() const { return kind_ == Kind::object; }
    bool is_namespace() const { return kind_ == Kind::object && object_->is_namespace; }
    bool is_callable() const { return kind_ == Kind::callable; }

    bool as_bool() const { return int_ != 0; }
    int64_t as_int() const { return int_; }  // integer or boolean
    double as_double() const { return kind_ == Kind::floating ? float_ : static_cast<double>(int_); }
    const std::string& str() const { return str_; }  // string; for undefined, the hint
    const Array& array() const { return *array_; }
    const Object& object() const { return *object_; }
    Object& mutable_object() const { return *object_; }
    const Callable& callable() const { return *callable_; }

    // The message an operation on this undefined value fails with ("'x' is undefined").
    std::string undefined_message() const;

    // Nesting (1 for a scalar or a namespace, 1 + the deepest item for a list or dict) and an
    // estimate of the bytes the value holds as if nothing in it were shared. Both are computed
    // when a list or dict is built, in O(its items), so that the renderer can refuse a value
    // before anything walks it: str(), tojson and the destructor recurse once per level, and a
    // list holding the same list twice, doubled 40 times, prints 2^40 items.
    // note: a namespace counts as one level and a few bytes: it is mutable (its contents are
    // checked when assigned), and the renderer holds every namespace itself, so destroying a
    // value never recurses into one.
    uint32_t depth() const { return depth_; }
    uint64_t weight() const { return kind_ == Kind::string ? sizeof(Value) + str_.size() : weight_; }

private:
    explicit Value(Kind k) : kind_(k) {}
    Kind kind_ = Kind::undefined;
    uint32_t depth_ = 1;
    uint64_t weight_ = sizeof(Value);  // lists and dicts; strings add their size in weight()
    int64_t int_ = 0;
    double float_ = 0;
    std::string str_;
    std::shared_ptr<const Array> array_;
    std::shared_ptr<Object> object_;
    std::shared_ptr<const Callable> callable_;
};

// Python's type name, for error messages ("str", "int", "list", "dict", "NoneType", ...).
std::string type_name(const Value& v);
bool truthy(const Value& v);
// Python str(v); undefined prints as "".
std::string to_str(const Value& v);
// Python repr(v).
std::string repr(const Value& v);
// Python repr(float): shortest round-trip digits, "1.0", "1e-05", "1e+16".
std::string float_repr(double d);
// Python ==.
bool equals(const Value& a, const Value& b);
// Python <, for numbers, strings and lists; throws OpError for other pairs.
bool less(const Value& a, const Value& b);

// UTF-8 helpers (utf8proc underneath): Python indexes strings by code point. A byte that does not
// start a valid UTF-8 sequence is one character of its own.
std::vector<std::string_view> utf8_chars(std::string_view s);
size_t utf8_length(std::string_view s);
// The code point of one character from utf8_chars (an invalid byte: its own value).
uint32_t utf8_decode(std::string_view ch);
void utf8_append(std::string& out, uint32_t cp);
// Python str.isspace() for one code point.
bool is_py_space(uint32_t cp);

struct JsonOptions {
    bool ensure_ascii = false;
    bool sort_keys = false;
    int indent = -1;            // -1: no newlines (indent=None)
    std::string indent_str;     // used when indent is a string
    std::string item_sep;       // empty: the json.dumps default for the indent mode
    std::string key_sep;
    bool has_separators = false;
};
// Python json.dumps(v, ...). Throws OpError for undefined or callables ("not JSON serializable").
std::string to_json(const Value& v, const JsonOptions& opt);

// From nlohmann JSON (ordered_json keeps the key order of the input file).
Value from_json(const nlohmann::json& j);
Value from_json(const nlohmann::ordered_json& j);

}  // namespace tt::jinja
