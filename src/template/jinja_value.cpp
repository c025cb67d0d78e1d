// Python semantics of template values: str/repr, truthiness, comparison, json.dumps.
#include "template/jinja_value.h"

#include "core/error.h"
#include "core/json.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace tt::jinja {

void op_fail(std::string message) { throw OpError{std::move(message)}; }

const Value* Object::find(std::string_view key) const {
    for (const auto& [k, v] : items)
        if (k == key) return &v;
    return nullptr;
}

void Object::set(const std::string& key, Value v) {
    for (auto& [k, old] : items)
        if (k == key) {
            old = std::move(v);
            return;
        }
    items.emplace_back(key, std::move(v));
}

const Value* Args::get(size_t i, std::string_view name) const {
    if (i < pos.size()) return &pos[i];
    for (const auto& [k, v] : kw)
        if (k == name) return &v;
    return nullptr;
}

static uint64_t add_saturating(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

Value::Value(Array a) : kind_(Kind::array) {
    uint32_t deepest = 0;
    uint64_t w = sizeof(Value);
    for (const Value& x : a) {
        deepest = std::max(deepest, x.depth());
        w = add_saturating(w, x.weight());
    }
    depth_ = deepest + 1;
    weight_ = w;
    array_ = std::make_shared<Array>(std::move(a));
}

Value::Value(std::shared_ptr<Object> o) : kind_(Kind::object), object_(std::move(o)) {
    if (object_->is_namespace) return;  // one level, a few bytes: see depth()
    uint32_t deepest = 0;
    uint64_t w = sizeof(Value);
    for (const auto& [k, x] : object_->items) {
        deepest = std::max(deepest, x.depth());
        w = add_saturating(w, add_saturating(k.size() + sizeof(k), x.weight()));
    }
    depth_ = deepest + 1;
    weight_ = w;
}

std::string Value::undefined_message() const { return str_.empty() ? "value is undefined" : str_; }

std::string type_name(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::undefined: return "Undefined";
        case Value::Kind::none: return "NoneType";
        case Value::Kind::boolean: return "bool";
        case Value::Kind::integer: return "int";
        case Value::Kind::floating: return "float";
        case Value::Kind::string: return "str";
        case Value::Kind::array: return "list";
        case Value::Kind::object: return v.is_namespace() ? "Namespace" : "dict";
        case Value::Kind::callable: return "function";
    }
    return "?";
}

bool truthy(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::undefined:
        case Value::Kind::none: return false;
        case Value::Kind::boolean:
        case Value::Kind::integer: return v.as_int() != 0;
        case Value::Kind::floating: return v.as_double() != 0.0;
        case Value::Kind::string: return !v.str().empty();
        case Value::Kind::array: return !v.array().empty();
        case Value::Kind::object: return v.is_namespace() || !v.object().items.empty();
        case Value::Kind::callable: return true;
    }
    return false;
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    // Shortest round-trip digits in scientific form, then laid out the way Python's repr does:
    // positional for exponents in [-4, 16), scientific otherwise.
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    bool neg = sci[0] == '-';
    if (neg) sci.erase(0, 1);
    size_t e = sci.find('e');
    int exp = std::atoi(sci.c_str() + e + 1);
    std::string digits;
    for (size_t i = 0; i < e; ++i)
        if (sci[i] != '.') digits += sci[i];
    std::string out;
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
        } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
            out = digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
        }
    } else {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        out += fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', std::abs(exp));
    }
    return neg ? "-" + out : out;
}

static std::string repr_string(const std::string& s) {
    // Python picks single quotes unless the text has a ' and no ".
    char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
    std::string out(1, q);
    for (unsigned char c : s) {
        if (c == static_cast<unsigned char>(q) || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            out += fmt::format("\\x{:02x}", c);
        } else {
            out += static_cast<char>(c);
        }
    }
    out += q;
    return out;
}

std::string repr(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::string: return repr_string(v.str());
        case Value::Kind::array: {
            std::string out = v.is_tuple() ? "(" : "[";
            for (size_t i = 0; i < v.array().size(); ++i) out += (i ? ", " : "") + repr(v.array()[i]);
            if (v.is_tuple()) return out + (v.array().size() == 1 ? ",)" : ")");
            return out + "]";
        }
        case Value::Kind::object: {
            if (v.is_namespace()) return "<Namespace>";
            std::string out = "{";
            bool first = true;
            for (const auto& [k, x] : v.object().items) {
                out += (first ? "" : ", ") + repr_string(k) + ": " + repr(x);
                first = false;
            }
            return out + "}";
        }
        default: return to_str(v);
    }
}

std::string to_str(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::undefined: return "";
        case Value::Kind::none: return "None";
        case Value::Kind::boolean: return v.as_bool() ? "True" : "False";
        case Value::Kind::integer: return std::to_string(v.as_int());
        case Value::Kind::floating: return float_repr(v.as_double());
        case Value::Kind::string: return v.str();
        case Value::Kind::callable: return "<function " + v.callable().name + ">";
        default: return repr(v);
    }
}

bool equals(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::undefined:
        case Value::Kind::none: return true;
        case Value::Kind::string: return a.str() == b.str();
        case Value::Kind::array: {
            const auto &x = a.array(), &y = b.array();
            if (x.size() != y.size()) return false;
            for (size_t i = 0; i < x.size(); ++i)
                if (!equals(x[i], y[i])) return false;
            return true;
        }
        case Value::Kind::object: {
            if (a.is_namespace() || b.is_namespace()) return &a.object() == &b.object();
            const auto &x = a.object(), &y = b.object();
            if (x.items.size() != y.items.size()) return false;
            for (const auto& [k, v] : x.items) {
                const Value* w = y.find(k);
                if (!w || !equals(v, *w)) return false;
            }
            return true;
        }
        case Value::Kind::callable: return &a.callable() == &b.callable();
        default: return false;
    }
}

bool less(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
        return a.as_int() < b.as_int();
    }
    // UTF-8 byte order is code point order, which is what Python compares.
    if (a.is_string() && b.is_string()) return a.str() < b.str();
    if (a.is_array() && b.is_array()) {
        const auto &x = a.array(), &y = b.array();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (less(x[i], y[i])) return true;
            if (less(y[i], x[i])) return false;
        }
        return x.size() < y.size();
    }
    op_fail(fmt::format("'<' not supported between instances of '{}' and '{}'", type_name(a), type_name(b)));
}

// One character at s[i]: its length in bytes (1 for an invalid byte) and code point.
// note: Python strings may hold lone surrogates ("\ud83d" in a template literal, which the lexer
// encodes as the 3 bytes ED A0..BF 80..BF); utf8proc refuses them, so they are decoded here, one
// character each, as Python counts, indexes and tojson-escapes them.
static size_t utf8_next(std::string_view s, size_t i, uint32_t* cp) {
    utf8proc_int32_t c = 0;
    auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                              static_cast<utf8proc_ssize_t>(s.size() - i), &c);
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    if (n <= 0 && i + 2 < s.size() && byte(0) == 0xED && (byte(1) & 0xE0) == 0xA0 && (byte(2) & 0xC0) == 0x80) {
        if (cp) *cp = 0xD000u | (uint32_t(byte(1) & 0x3F) << 6) | uint32_t(byte(2) & 0x3F);
        return 3;
    }
    if (n <= 0) {
        if (cp) *cp = static_cast<unsigned char>(s[i]);
        return 1;
    }
    if (cp) *cp = static_cast<uint32_t>(c);
    return static_cast<size_t>(n);
}

std::vector<std::string_view> utf8_chars(std::string_view s) {
    std::vector<std::string_view> out;
    for (size_t i = 0; i < s.size();) {
        size_t n = utf8_next(s, i, nullptr);
        out.push_back(s.substr(i, n));
        i += n;
    }
    return out;
}

size_t utf8_length(std::string_view s) {
    size_t n = 0;
    for (size_t i = 0; i < s.size(); ++n) i += utf8_next(s, i, nullptr);
    return n;
}

uint32_t utf8_decode(std::string_view ch) {
    if (ch.empty()) return 0;
    uint32_t cp = 0;
    utf8_next(ch, 0, &cp);
    return cp;
}

void utf8_append(std::string& out, uint32_t cp) {
    utf8proc_uint8_t buf[4];
    auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

bool is_py_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
           cp == 0x3000;
}

// ---- json.dumps ----

static void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
    out += '"';
    for (std::string_view ch : utf8_chars(s)) {
        auto c = static_cast<unsigned char>(ch[0]);
        if (ch.size() == 1) {
            switch (c) {
                case '"': out += "\\\""; continue;
                case '\\': out += "\\\\"; continue;
                case '\n': out += "\\n"; continue;
                case '\r': out += "\\r"; continue;
                case '\t': out += "\\t"; continue;
                case '\b': out += "\\b"; continue;
                case '\f': out += "\\f"; continue;
                default: break;
            }
            if (c < 0x20 || (ensure_ascii && c >= 0x7f)) out += fmt::format("\\u{:04x}", c);
            else out += static_cast<char>(c);
        } else if (ensure_ascii) {
            uint32_t cp = utf8_decode(ch);
            if (cp >= 0x10000) {  // a surrogate pair, as Python writes astral characters
                cp -= 0x10000;
                out += fmt::format("\\u{:04x}\\u{:04x}", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
            } else {
                out += fmt::format("\\u{:04x}", cp);
            }
        } else {
            out += ch;
        }
    }
    out += '"';
}

static void json_value(std::string& out, const Value& v, const JsonOptions& opt, int depth) {
    bool pretty = opt.indent >= 0 || !opt.indent_str.empty();
    std::string item_sep = opt.has_separators ? opt.item_sep : pretty ? "," : ", ";
    std::string key_sep = opt.has_separators ? opt.key_sep : ": ";
    auto newline = [&](int d) {
        if (!pretty) return;
        out += '\n';
        for (int i = 0; i < d; ++i) out += opt.indent_str.empty() ? std::string(static_cast<size_t>(opt.indent), ' ') : opt.indent_str;
    };
    switch (v.kind()) {
        case Value::Kind::none: out += "null"; return;
        case Value::Kind::boolean: out += v.as_bool() ? "true" : "false"; return;
        case Value::Kind::integer: out += std::to_string(v.as_int()); return;
        case Value::Kind::floating: {
            double d = v.as_double();
            if (std::isnan(d)) out += "NaN";
            else if (std::isinf(d)) out += d < 0 ? "-Infinity" : "Infinity";
            else out += float_repr(d);
            return;
        }
        case Value::Kind::string: json_string(out, v.str(), opt.ensure_ascii); return;
        case Value::Kind::array: {
            if (v.array().empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t i = 0; i < v.array().size(); ++i) {
                if (i) out += item_sep;
                newline(depth + 1);
                json_value(out, v.array()[i], opt, depth + 1);
            }
            newline(depth);
            out += ']';
            return;
        }
        case Value::Kind::object: {
            // A namespace is no dict for json.dumps (and may contain itself).
            if (v.is_namespace()) op_fail("Object of type Namespace is not JSON serializable");
            std::vector<const std::pair<std::string, Value>*> items;
            for (const auto& kv : v.object().items) items.push_back(&kv);
            if (items.empty()) {
                out += "{}";
                return;
            }
            if (opt.sort_keys)
                std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
            out += '{';
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += item_sep;
                newline(depth + 1);
                json_string(out, items[i]->first, opt.ensure_ascii);
                out += key_sep;
                json_value(out, items[i]->second, opt, depth + 1);
            }
            newline(depth);
            out += '}';
            return;
        }
        default: op_fail(fmt::format("Object of type {} is not JSON serializable", type_name(v)));
    }
}

std::string to_json(const Value& v, const JsonOptions& opt) {
    std::string out;
    json_value(out, v, opt, 0);
    return out;
}

// note: JSON read from files is already bounded (core/json.h); this bound is for JSON built in
// memory by a caller, which would otherwise make a value that nothing can walk (see depth()).
template <typename J>
static Value convert(const J& j, int depth) {
    if (depth > k_max_json_depth) fail("template variables: JSON nested deeper than {} levels", k_max_json_depth);
    switch (j.type()) {
        case J::value_t::null: return Value::none();
        case J::value_t::boolean: return Value(j.template get<bool>());
        case J::value_t::number_integer: return Value(j.template get<int64_t>());
        case J::value_t::number_unsigned: {
            auto u = j.template get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
            return Value(static_cast<int64_t>(u));
        }
        case J::value_t::number_float: return Value(j.template get<double>());
        case J::value_t::string: return Value(j.template get<std::string>());
        case J::value_t::array: {
            Array a;
            a.reserve(j.size());
            for (const auto& x : j) a.push_back(convert(x, depth + 1));
            return Value(std::move(a));
        }
        case J::value_t::object: {
            auto o = std::make_shared<Object>();
            for (auto it = j.begin(); it != j.end(); ++it) o->items.emplace_back(it.key(), convert(it.value(), depth + 1));
            return Value(std::move(o));
        }
        default: return Value::none();  // binary / discarded: not produced by JSON text
    }
}

Value from_json(const nlohmann::json& j) { return convert(j, 0); }
Value from_json(const nlohmann::ordered_json& j) { return convert(j, 0); }

}  // namespace tt::jinja
