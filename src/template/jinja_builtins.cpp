// Jinja filters and tests, Python methods on str/dict/list, operators and globals, with the
// behaviour of Jinja 3 under transformers' ImmutableSandboxedEnvironment (mutating methods such
// as list.append are refused, range() is capped at 100000 items like the sandbox's MAX_RANGE).
#include "template/jinja_builtins.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

namespace tt::jinja {

namespace {

constexpr int64_t k_max_range = 100000;
constexpr size_t k_max_string = size_t{32} << 20;  // refuse absurd sizes ('x' * 10**12, indent(10**9))

// Widths and repetition counts from templates are bounded so a typo cannot exhaust memory.
int64_t bounded_width(int64_t n) {
    if (n > static_cast<int64_t>(k_max_string)) op_fail(fmt::format("width {} is too large", n));
    return n;
}

// ---- argument helpers ----

Value arg_or(const Args& a, size_t i, std::string_view name, const Value& fallback) {
    const Value* v = a.get(i, name);
    return v ? *v : fallback;
}

int64_t int_arg(const Args& a, size_t i, std::string_view name, int64_t fallback) {
    const Value* v = a.get(i, name);
    if (!v || v->is_none()) return fallback;
    if (v->is_int() || v->is_bool()) return v->as_int();
    if (v->is_float()) return static_cast<int64_t>(v->as_double());
    op_fail(fmt::format("argument '{}' must be an integer, not {}", name, type_name(*v)));
}

bool bool_arg(const Args& a, size_t i, std::string_view name, bool fallback) {
    const Value* v = a.get(i, name);
    return v ? truthy(*v) : fallback;
}

const std::string& str_arg(const Args& a, size_t i, std::string_view name) {
    const Value* v = a.get(i, name);
    if (!v) op_fail(fmt::format("missing argument '{}'", name));
    if (!v->is_string()) op_fail(fmt::format("argument '{}' must be a string, not {}", name, type_name(*v)));
    return v->str();
}

const std::string& need_str(const Value& v, std::string_view what) {
    if (v.is_undefined()) op_fail(v.undefined_message());
    if (!v.is_string()) op_fail(fmt::format("{} expects a string, not {}", what, type_name(v)));
    return v.str();
}

// ---- unicode helpers ----

// Python decodes invalid UTF-8 with errors='replace' where templates meet it: U+FFFD.
uint32_t decode(std::string_view ch) {
    return ch.size() == 1 && static_cast<unsigned char>(ch[0]) >= 0x80 ? 0xfffd : utf8_decode(ch);
}

void encode(std::string& out, uint32_t cp) { utf8_append(out, cp); }

bool is_alpha(uint32_t cp) {
    auto c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
    return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}
bool is_upper(uint32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_LU; }
bool is_lower(uint32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_LL; }
bool is_digit_cp(uint32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_ND; }

uint32_t to_upper(uint32_t cp) { return static_cast<uint32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp))); }
uint32_t to_lower(uint32_t cp) { return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))); }

std::string map_chars(const std::string& s, uint32_t (*f)(uint32_t)) {
    std::string out;
    for (auto ch : utf8_chars(s)) encode(out, f(decode(ch)));
    return out;
}

std::string py_upper(const std::string& s) {
    // note: utf8proc maps case one code point to one; Python's full mapping turns ß into SS, the
    // one multi-character case likely in chat text.
    std::string out;
    for (auto ch : utf8_chars(s)) {
        uint32_t cp = decode(ch);
        if (cp == 0xdf) out += "SS";
        else encode(out, to_upper(cp));
    }
    return out;
}
std::string py_lower(const std::string& s) { return map_chars(s, to_lower); }

std::string py_capitalize(const std::string& s) {
    std::string out;
    bool first = true;
    for (auto ch : utf8_chars(s)) {
        encode(out, first ? to_upper(decode(ch)) : to_lower(decode(ch)));
        first = false;
    }
    return out;
}

std::string py_title(const std::string& s) {
    std::string out;
    bool prev_cased = false;
    for (auto ch : utf8_chars(s)) {
        uint32_t cp = decode(ch);
        bool cased = is_alpha(cp);
        encode(out, cased ? (prev_cased ? to_lower(cp) : to_upper(cp)) : cp);
        prev_cased = cased;
    }
    return out;
}

// Python str.strip / lstrip / rstrip: chars null means whitespace.
std::string py_strip(const std::string& s, const Value* chars, bool left, bool right) {
    auto cs = utf8_chars(s);
    std::vector<std::string_view> set;
    bool ws = !chars || chars->is_none();
    if (!ws) {
        if (!chars->is_string()) op_fail("strip arg must be None or str");
        set = utf8_chars(chars->str());
    }
    auto strip_me = [&](std::string_view ch) {
        if (ws) return is_py_space(decode(ch));
        return std::find(set.begin(), set.end(), ch) != set.end();
    };
    size_t b = 0, e = cs.size();
    if (left)
        while (b < e && strip_me(cs[b])) ++b;
    if (right)
        while (e > b && strip_me(cs[e - 1])) --e;
    if (b == e) return {};
    size_t start = static_cast<size_t>(cs[b].data() - s.data());
    size_t stop = static_cast<size_t>(cs[e - 1].data() + cs[e - 1].size() - s.data());
    return s.substr(start, stop - start);
}

Array py_split(const std::string& s, const Value* sep, int64_t maxsplit) {
    Array out;
    if (!sep || sep->is_none()) {  // runs of whitespace, no empty strings
        auto cs = utf8_chars(s);
        size_t i = 0;
        while (i < cs.size()) {
            while (i < cs.size() && is_py_space(decode(cs[i]))) ++i;
            if (i == cs.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
                size_t start = static_cast<size_t>(cs[i].data() - s.data());
                std::string rest = s.substr(start);
                while (!rest.empty() && is_py_space(static_cast<unsigned char>(rest.back()))) rest.pop_back();
                out.emplace_back(rest);
                return out;
            }
            size_t j = i;
            while (j < cs.size() && !is_py_space(decode(cs[j]))) ++j;
            size_t start = static_cast<size_t>(cs[i].data() - s.data());
            size_t stop = static_cast<size_t>(cs[j - 1].data() + cs[j - 1].size() - s.data());
            out.emplace_back(s.substr(start, stop - start));
            i = j;
        }
        return out;
    }
    const std::string& d = need_str(*sep, "split");
    if (d.empty()) op_fail("empty separator");
    size_t pos = 0;
    for (;;) {
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) break;
        size_t hit = s.find(d, pos);
        if (hit == std::string::npos) break;
        out.emplace_back(s.substr(pos, hit - pos));
        pos = hit + d.size();
    }
    out.emplace_back(s.substr(pos));
    return out;
}

Array py_rsplit(const std::string& s, const Value* sep, int64_t maxsplit) {
    if (!sep || sep->is_none() || maxsplit < 0) return py_split(s, sep, maxsplit);
    const std::string& d = need_str(*sep, "rsplit");
    if (d.empty()) op_fail("empty separator");
    Array rev;
    size_t end = s.size();
    while (static_cast<int64_t>(rev.size()) < maxsplit) {
        if (end < d.size()) break;
        size_t hit = s.rfind(d, end - d.size());
        if (hit == std::string::npos) break;
        rev.emplace_back(s.substr(hit + d.size(), end - hit - d.size()));
        end = hit;
    }
    rev.emplace_back(s.substr(0, end));
    std::reverse(rev.begin(), rev.end());
    return rev;
}

Array py_splitlines(const std::string& s, bool keepends) {
    Array out;
    size_t start = 0, i = 0;
    while (i < s.size()) {
        size_t nl = 0;
        if (s[i] == '\n' || s[i] == '\v' || s[i] == '\f' || (s[i] >= '\x1c' && s[i] <= '\x1e')) nl = 1;
        else if (s[i] == '\r') nl = (i + 1 < s.size() && s[i + 1] == '\n') ? 2 : 1;
        else if (s.compare(i, 3, "\xe2\x80\xa8") == 0 || s.compare(i, 3, "\xe2\x80\xa9") == 0) nl = 3;
        else if (s.compare(i, 2, "\xc2\x85") == 0) nl = 2;
        if (nl == 0) {
            ++i;
            continue;
        }
        out.emplace_back(s.substr(start, (keepends ? i + nl : i) - start));
        i += nl;
        start = i;
    }
    if (start < s.size()) out.emplace_back(s.substr(start));
    return out;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& rep, int64_t count) {
    std::string out;
    if (old.empty()) {  // Python inserts `rep` between every character
        auto cs = utf8_chars(s);
        int64_t n = 0;
        for (size_t i = 0; i <= cs.size(); ++i) {
            if (count < 0 || n < count) {
                out += rep;
                ++n;
            }
            if (i < cs.size()) out += cs[i];
        }
        return out;
    }
    size_t pos = 0;
    int64_t n = 0;
    for (;;) {
        size_t hit = (count >= 0 && n >= count) ? std::string::npos : s.find(old, pos);
        if (hit == std::string::npos) break;
        out.append(s, pos, hit - pos);
        out += rep;
        pos = hit + old.size();
        ++n;
    }
    out.append(s, pos);
    return out;
}

// Python find() returns a code point index.
int64_t cp_index(const std::string& s, size_t byte_pos) {
    return static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, byte_pos)));
}

bool starts_or_ends(const std::string& s, const Value& arg, bool ends) {
    auto check = [&](const Value& p) {
        const std::string& x = need_str(p, ends ? "endswith" : "startswith");
        if (x.size() > s.size()) return false;
        return ends ? s.compare(s.size() - x.size(), x.size(), x) == 0 : s.compare(0, x.size(), x) == 0;
    };
    if (arg.is_array()) {
        for (const auto& p : arg.array())
            if (check(p)) return true;
        return false;
    }
    return check(arg);
}

bool all_chars(const std::string& s, bool (*pred)(uint32_t)) {
    if (s.empty()) return false;
    for (auto ch : utf8_chars(s))
        if (!pred(decode(ch))) return false;
    return true;
}

std::string py_center(const std::string& s, int64_t width, const std::string& fill) {
    int64_t n = static_cast<int64_t>(utf8_length(s));
    if (width <= n) return s;
    bounded_width(width);
    int64_t pad = width - n;
    // CPython: left = pad/2 + (pad & width & 1)
    int64_t left = pad / 2 + (pad & width & 1);
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += fill;
    out += s;
    for (int64_t i = 0; i < pad - left; ++i) out += fill;
    return out;
}

// ---- methods ----

bool is_unsafe_method(const Value& obj, const std::string& name) {
    static const std::set<std::string> list_mut = {"append", "extend", "insert", "pop", "remove", "clear", "sort",
                                                   "reverse"};
    static const std::set<std::string> dict_mut = {"update", "pop", "popitem", "setdefault", "clear"};
    if (obj.is_array()) return list_mut.count(name) != 0;
    if (obj.is_object() && !obj.is_namespace()) return dict_mut.count(name) != 0;
    return false;
}

Value bind_method(const Value& self, const std::string& name, std::function<Value(const Value&, const Args&)> fn) {
    return Value::function(type_name(self) + "." + name, [self, fn = std::move(fn)](const Args& a) { return fn(self, a); });
}

Value str_method(const Value& self, const std::string& name) {
    using A = const Args&;
    using V = const Value&;
    static const std::map<std::string, std::function<Value(V, A)>, std::less<>> methods = {
        {"strip", [](V s, A a) { return Value(py_strip(s.str(), a.get(0, "chars"), true, true)); }},
        {"lstrip", [](V s, A a) { return Value(py_strip(s.str(), a.get(0, "chars"), true, false)); }},
        {"rstrip", [](V s, A a) { return Value(py_strip(s.str(), a.get(0, "chars"), false, true)); }},
        {"split", [](V s, A a) { return Value(py_split(s.str(), a.get(0, "sep"), int_arg(a, 1, "maxsplit", -1))); }},
        {"rsplit", [](V s, A a) { return Value(py_rsplit(s.str(), a.get(0, "sep"), int_arg(a, 1, "maxsplit", -1))); }},
        {"splitlines", [](V s, A a) { return Value(py_splitlines(s.str(), bool_arg(a, 0, "keepends", false))); }},
        {"startswith", [](V s, A a) { return Value(starts_or_ends(s.str(), arg_or(a, 0, "prefix", Value()), false)); }},
        {"endswith", [](V s, A a) { return Value(starts_or_ends(s.str(), arg_or(a, 0, "suffix", Value()), true)); }},
        {"upper", [](V s, A) { return Value(py_upper(s.str())); }},
        {"lower", [](V s, A) { return Value(py_lower(s.str())); }},
        {"title", [](V s, A) { return Value(py_title(s.str())); }},
        {"capitalize", [](V s, A) { return Value(py_capitalize(s.str())); }},
        {"replace",
         [](V s, A a) {
             return Value(py_replace(s.str(), str_arg(a, 0, "old"), str_arg(a, 1, "new"), int_arg(a, 2, "count", -1)));
         }},
        {"find",
         [](V s, A a) {
             size_t hit = s.str().find(str_arg(a, 0, "sub"));
             return Value(hit == std::string::npos ? int64_t{-1} : cp_index(s.str(), hit));
         }},
        {"rfind",
         [](V s, A a) {
             size_t hit = s.str().rfind(str_arg(a, 0, "sub"));
             return Value(hit == std::string::npos ? int64_t{-1} : cp_index(s.str(), hit));
         }},
        {"index",
         [](V s, A a) {
             size_t hit = s.str().find(str_arg(a, 0, "sub"));
             if (hit == std::string::npos) op_fail("substring not found");
             return Value(cp_index(s.str(), hit));
         }},
        {"count",
         [](V s, A a) {
             const std::string& sub = str_arg(a, 0, "sub");
             if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(s.str()) + 1));
             int64_t n = 0;
             for (size_t p = s.str().find(sub); p != std::string::npos; p = s.str().find(sub, p + sub.size())) ++n;
             return Value(n);
         }},
        {"join",
         [](V s, A a) {
             std::string out;
             bool first = true;
             for (const Value& x : iterate(arg_or(a, 0, "iterable", Value()))) {
                 if (!first) out += s.str();
                 out += need_str(x, "str.join");
                 first = false;
             }
             return Value(std::move(out));
         }},
        {"center", [](V s, A a) {
             return Value(py_center(s.str(), int_arg(a, 0, "width", 0), a.get(1, "fillchar") ? str_arg(a, 1, "fillchar") : " "));
         }},
        {"zfill",
         [](V s, A a) {
             int64_t w = bounded_width(int_arg(a, 0, "width", 0)), n = static_cast<int64_t>(utf8_length(s.str()));
             if (w <= n) return s;
             std::string body = s.str(), sign;
             if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
                 sign = body.substr(0, 1);
                 body.erase(0, 1);
             }
             return Value(sign + std::string(static_cast<size_t>(w - n), '0') + body);
         }},
        {"isdigit", [](V s, A) { return Value(all_chars(s.str(), is_digit_cp)); }},
        {"isnumeric", [](V s, A) { return Value(all_chars(s.str(), is_digit_cp)); }},
        {"isalpha", [](V s, A) { return Value(all_chars(s.str(), is_alpha)); }},
        {"isalnum", [](V s, A) { return Value(all_chars(s.str(), [](uint32_t c) { return is_alpha(c) || is_digit_cp(c); })); }},
        {"isspace", [](V s, A) { return Value(all_chars(s.str(), is_py_space)); }},
        {"isupper", [](V s, A) {
             bool any = false;
             for (auto ch : utf8_chars(s.str())) {
                 uint32_t c = decode(ch);
                 if (is_lower(c)) return Value(false);
                 any = any || is_upper(c);
             }
             return Value(any);
         }},
        {"islower", [](V s, A) {
             bool any = false;
             for (auto ch : utf8_chars(s.str())) {
                 uint32_t c = decode(ch);
                 if (is_upper(c)) return Value(false);
                 any = any || is_lower(c);
             }
             return Value(any);
         }},
    };
    auto it = methods.find(name);
    if (it == methods.end()) return Value::undefined(fmt::format("'str object' has no attribute '{}'", name));
    return bind_method(self, name, it->second);
}

Value dict_method(const Value& self, const std::string& name) {
    if (name == "items")
        return bind_method(self, name, [](const Value& d, const Args&) {
            Array out;
            for (const auto& [k, v] : d.object().items) out.push_back(Value::tuple(Array{Value(k), v}));
            return Value(std::move(out));
        });
    if (name == "keys")
        return bind_method(self, name, [](const Value& d, const Args&) {
            Array out;
            for (const auto& kv : d.object().items) out.emplace_back(kv.first);
            return Value(std::move(out));
        });
    if (name == "values")
        return bind_method(self, name, [](const Value& d, const Args&) {
            Array out;
            for (const auto& kv : d.object().items) out.push_back(kv.second);
            return Value(std::move(out));
        });
    if (name == "get")
        return bind_method(self, name, [](const Value& d, const Args& a) {
            Value key = arg_or(a, 0, "key", Value());
            const Value* v = key.is_string() ? d.object().find(key.str()) : nullptr;
            return v ? *v : arg_or(a, 1, "default", Value::none());
        });
    if (name == "copy") return bind_method(self, name, [](const Value& d, const Args&) { return d; });
    return Value();
}

Value list_method(const Value& self, const std::string& name) {
    if (name == "index")
        return bind_method(self, name, [](const Value& l, const Args& a) {
            Value x = arg_or(a, 0, "value", Value());
            for (size_t i = 0; i < l.array().size(); ++i)
                if (equals(l.array()[i], x)) return Value(static_cast<int64_t>(i));
            op_fail(fmt::format("{} is not in list", repr(x)));
        });
    if (name == "count")
        return bind_method(self, name, [](const Value& l, const Args& a) {
            Value x = arg_or(a, 0, "value", Value());
            int64_t n = 0;
            for (const auto& y : l.array()) n += equals(x, y);
            return Value(n);
        });
    if (name == "copy") return bind_method(self, name, [](const Value& l, const Args&) { return l; });
    return Value();
}

// ---- filters ----

using Filter = std::function<Value(const Value&, const Args&)>;

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

// Attribute lookup for filters taking attribute="a.b" (dots walk nested objects, digits index).
Value attr_path(const Value& v, const std::string& path) {
    Value cur = v;
    size_t start = 0;
    for (;;) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (cur.is_undefined()) return cur;
        cur = numeric && part.size() < 18 ? get_item(cur, Value(static_cast<int64_t>(std::strtoll(part.c_str(), nullptr, 10))))
                                          : get_item(cur, Value(part));
        if (dot == std::string::npos) return cur;
        start = dot + 1;
    }
}

// Sort key for sort/unique/min/max with case_sensitive=False: strings compare lowercased.
Value sort_key(const Value& v, bool case_sensitive) {
    return (!case_sensitive && v.is_string()) ? Value(py_lower(v.str())) : v;
}

Array sorted(Array items, bool reverse, bool case_sensitive, const Value* attribute) {
    std::vector<std::pair<Value, Value>> keyed;
    for (auto& x : items) {
        Value k = attribute && attribute->is_string() ? attr_path(x, attribute->str()) : x;
        keyed.emplace_back(sort_key(k, case_sensitive), std::move(x));
    }
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        return reverse ? less(b.first, a.first) : less(a.first, b.first);
    });
    Array out;
    for (auto& kv : keyed) out.push_back(std::move(kv.second));
    return out;
}

Value min_max(const Value& v, const Args& a, bool want_max) {
    Array items = iterate(v);
    if (items.empty()) return Value::undefined("no min/max of an empty sequence");
    bool cs = bool_arg(a, 0, "case_sensitive", false);
    const Value* attribute = a.get(1, "attribute");
    Value best = items[0];
    auto key = [&](const Value& x) {
        return sort_key(attribute && attribute->is_string() ? attr_path(x, attribute->str()) : x, cs);
    };
    for (size_t i = 1; i < items.size(); ++i) {
        bool better = want_max ? less(key(best), key(items[i])) : less(key(items[i]), key(best));
        if (better) best = items[i];
    }
    return best;
}

// Python's "%" formatting, the subset templates use: %s %r %d %i %f %x %%, with width/precision.
std::string percent_format(const std::string& f, const Array& args) {
    std::string out;
    size_t next = 0;
    for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] != '%') {
            out += f[i];
            continue;
        }
        if (++i >= f.size()) op_fail("incomplete format");
        if (f[i] == '%') {
            out += '%';
            continue;
        }
        // printf flags/width/precision, translated to fmt: '-' left-aligns, '0' zero-pads.
        std::string flags, width, precision;
        while (i < f.size() && std::strchr("-+ #0", f[i])) flags += f[i++];
        while (i < f.size() && f[i] >= '0' && f[i] <= '9') width += f[i++];
        if (i < f.size() && f[i] == '.') {
            precision = ".";
            ++i;
            while (i < f.size() && f[i] >= '0' && f[i] <= '9') precision += f[i++];
            if (precision == ".") precision = ".0";
        }
        if (width.size() > 4 || precision.size() > 4) op_fail("format width or precision too large");
        if (i >= f.size()) op_fail("incomplete format");
        bool left = flags.find('-') != std::string::npos, zero = !left && flags.find('0') != std::string::npos;
        std::string sign = flags.find('+') != std::string::npos ? "+" : flags.find(' ') != std::string::npos ? " " : "";
        std::string spec = (zero ? std::string() : std::string(left ? "<" : ">")) + sign + (zero ? "0" : "") + width;
        std::string str_spec = std::string(left ? "<" : ">") + width + precision;
        if (next >= args.size()) op_fail("not enough arguments for format string");
        const Value& v = args[next++];
        char conv = f[i];
        try {
        switch (conv) {
            case 's': out += fmt::format(fmt::runtime("{:" + str_spec + "}"), to_str(v)); break;
            case 'r': out += repr(v); break;
            case 'd':
            case 'i':
                if (!v.is_number()) op_fail(fmt::format("%{} format: a number is required, not {}", conv, type_name(v)));
                out += fmt::format(fmt::runtime("{:" + spec + "d}"), static_cast<int64_t>(v.as_double()));
                break;
            case 'x':
                if (!v.is_int()) op_fail(fmt::format("%x format: an integer is required, not {}", type_name(v)));
                out += fmt::format(fmt::runtime("{:" + spec + "x}"), v.as_int());
                break;
            case 'f':
                if (!v.is_number()) op_fail(fmt::format("%f format: a number is required, not {}", type_name(v)));
                out += fmt::format(fmt::runtime("{:" + spec + (precision.empty() ? ".6" : precision) + "f}"),
                                   v.as_double());
                break;
            default: op_fail(fmt::format("unsupported format character '{}'", conv));
        }
        } catch (const fmt::format_error& e) {
            op_fail(fmt::format("bad format '%{}': {}", conv, e.what()));
        }
    }
    if (next < args.size()) op_fail("not all arguments converted during string formatting");
    return out;
}

Value filter_tojson(const Value& v, const Args& a) {
    // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    JsonOptions opt;
    opt.ensure_ascii = bool_arg(a, 0, "ensure_ascii", false);
    const Value* indent = a.get(1, "indent");
    if (indent && indent->is_string()) opt.indent_str = indent->str();
    else if (indent && !indent->is_none()) opt.indent = static_cast<int>(std::max<int64_t>(0, int_arg(a, 1, "indent", 0)));
    const Value* seps = a.get(2, "separators");
    if (seps && !seps->is_none()) {
        if (!seps->is_array() || seps->array().size() != 2 || !seps->array()[0].is_string() ||
            !seps->array()[1].is_string())
            op_fail("tojson: separators must be a pair of strings");
        opt.has_separators = true;
        opt.item_sep = seps->array()[0].str();
        opt.key_sep = seps->array()[1].str();
    }
    opt.sort_keys = bool_arg(a, 3, "sort_keys", false);
    return Value(to_json(v, opt));
}

Value filter_indent(const Value& v, const Args& a) {
    std::string s = to_str(v);
    const Value* w = a.get(0, "width");
    std::string ind = (w && w->is_string()) ? w->str() : std::string(static_cast<size_t>(std::max<int64_t>(0, bounded_width(int_arg(a, 0, "width", 4)))), ' ');
    bool first = bool_arg(a, 1, "first", false), blank = bool_arg(a, 2, "blank", false);
    s += "\n";  // Jinja's quirk so that splitlines keeps a trailing empty line
    Array lines = py_splitlines(s, false);
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i].str();
        if (i > 0) {
            out += '\n';
            if (blank || !line.empty()) out += ind;
        }
        out += line;
    }
    if (first) out = ind + out;
    return Value(std::move(out));
}

Value filter_int(const Value& v, const Args& a) {
    int64_t fallback = int_arg(a, 0, "default", 0);
    int64_t base = int_arg(a, 1, "base", 10);
    if (v.is_int() || v.is_bool()) return Value(v.as_int());
    if (v.is_float()) return std::isfinite(v.as_double()) ? Value(static_cast<int64_t>(v.as_double())) : Value(fallback);
    if (v.is_string()) {
        std::string s = py_strip(v.str(), nullptr, true, true);
        std::string digits;
        for (char c : s)
            if (c != '_') digits += c;
        errno = 0;
        char* end = nullptr;
        long long x = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
        if (!digits.empty() && end && *end == '\0' && errno == 0) return Value(static_cast<int64_t>(x));
        char* fend = nullptr;
        double d = std::strtod(digits.c_str(), &fend);  // Jinja falls back to int(float(s))
        if (!digits.empty() && fend && *fend == '\0' && std::isfinite(d)) return Value(static_cast<int64_t>(d));
    }
    return Value(fallback);
}

Value filter_float(const Value& v, const Args& a) {
    double fallback = a.get(0, "default") && a.get(0, "default")->is_number() ? a.get(0, "default")->as_double() : 0.0;
    if (v.is_number()) return Value(v.as_double());
    if (v.is_string()) {
        std::string s = py_strip(v.str(), nullptr, true, true);
        char* end = nullptr;
        double d = std::strtod(s.c_str(), &end);
        if (!s.empty() && end && *end == '\0') return Value(d);
    }
    return Value(fallback);
}

Value filter_round(const Value& v, const Args& a) {
    if (!v.is_number()) op_fail(fmt::format("round expects a number, not {}", type_name(v)));
    int64_t precision = int_arg(a, 0, "precision", 0);
    std::string method = a.get(1, "method") ? str_arg(a, 1, "method") : "common";
    double scale = std::pow(10.0, static_cast<double>(precision));
    double x = v.as_double() * scale;
    if (method == "common") x = std::nearbyint(x);  // Python round(): halves to even
    else if (method == "ceil") x = std::ceil(x);
    else if (method == "floor") x = std::floor(x);
    else op_fail("method must be 'common', 'ceil' or 'floor'");
    return Value(x / scale);
}

Value filter_truncate(const Value& v, const Args& a) {
    std::string s = to_str(v);
    int64_t length = int_arg(a, 0, "length", 255);
    bool killwords = bool_arg(a, 1, "killwords", false);
    std::string end = a.get(2, "end") ? str_arg(a, 2, "end") : "...";
    int64_t leeway = int_arg(a, 3, "leeway", 5);
    auto cs = utf8_chars(s);
    int64_t n = static_cast<int64_t>(cs.size()), n_end = static_cast<int64_t>(utf8_length(end));
    if (n <= length + leeway) return Value(s);
    int64_t keep = std::max<int64_t>(0, length - n_end);
    std::string head;
    for (int64_t i = 0; i < keep; ++i) head += cs[static_cast<size_t>(i)];
    if (!killwords) {
        size_t sp = head.rfind(' ');
        if (sp != std::string::npos) head.resize(sp);
    }
    return Value(head + end);
}

Value select_like(const Value& v, const Args& a, bool by_attr, bool keep_if) {
    Array out;
    size_t test_i = by_attr ? 1 : 0;
    std::string attr = by_attr ? str_arg(a, 0, "attribute") : "";
    const Value* test = a.pos.size() > test_i ? &a.pos[test_i] : nullptr;
    if (test && !test->is_string()) op_fail("test name must be a string");
    if (test && !has_test(test->str())) op_fail(fmt::format("no test named '{}'", test->str()));
    Args rest;
    for (size_t i = test_i + 1; i < a.pos.size(); ++i) rest.pos.push_back(a.pos[i]);
    for (const Value& x : iterate(v)) {
        Value subject = by_attr ? attr_path(x, attr) : x;
        bool ok = test ? apply_test(test->str(), subject, rest) : truthy(subject);
        if (ok == keep_if) out.push_back(x);
    }
    return Value(std::move(out));
}

Value filter_map(const Value& v, const Args& a) {
    Array out;
    const Value* attribute = nullptr;
    for (const auto& [k, x] : a.kw)
        if (k == "attribute") attribute = &x;
    if (attribute) {
        if (!attribute->is_string()) op_fail("map: attribute must be a string");
        const Value* dflt = nullptr;
        for (const auto& [k, x] : a.kw)
            if (k == "default") dflt = &x;
        for (const Value& x : iterate(v)) {
            Value r = attr_path(x, attribute->str());
            out.push_back(r.is_undefined() && dflt ? *dflt : r);
        }
        return Value(std::move(out));
    }
    if (a.pos.empty() || !a.pos[0].is_string()) op_fail("map: expected a filter name or attribute=");
    const std::string& f = a.pos[0].str();
    if (!has_filter(f)) op_fail(fmt::format("no filter named '{}'", f));
    Args rest;
    rest.pos.assign(a.pos.begin() + 1, a.pos.end());
    rest.kw = a.kw;
    for (const Value& x : iterate(v)) out.push_back(apply_filter(f, x, rest));
    return Value(std::move(out));
}

const std::map<std::string, Filter, std::less<>>& filters() {
    using A = const Args&;
    using V = const Value&;
    static const std::map<std::string, Filter, std::less<>> table = [] {
        std::map<std::string, Filter, std::less<>> t;
        t["abs"] = [](V v, A) {
            if (v.is_float()) return Value(std::fabs(v.as_double()));
            if (v.is_number()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
            op_fail(fmt::format("bad operand type for abs(): '{}'", type_name(v)));
        };
        t["attr"] = [](V v, A a) { return get_attr(v, str_arg(a, 0, "name")); };
        t["batch"] = [](V v, A a) {
            int64_t n = int_arg(a, 0, "linecount", 1);
            if (n <= 0) op_fail("batch: linecount must be positive");
            const Value* fill = a.get(1, "fill_with");
            Array out, cur;
            for (const Value& x : iterate(v)) {
                cur.push_back(x);
                if (static_cast<int64_t>(cur.size()) == n) {
                    out.emplace_back(std::move(cur));
                    cur.clear();
                }
            }
            if (!cur.empty()) {
                if (fill && !fill->is_none())
                    while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*fill);
                out.emplace_back(std::move(cur));
            }
            return Value(std::move(out));
        };
        t["capitalize"] = [](V v, A) { return Value(py_capitalize(to_str(v))); };
        t["center"] = [](V v, A a) { return Value(py_center(to_str(v), int_arg(a, 0, "width", 80), " ")); };
        t["default"] = [](V v, A a) {
            bool boolean = bool_arg(a, 1, "boolean", false);
            if (v.is_undefined() || (boolean && !truthy(v))) return arg_or(a, 0, "default_value", Value(""));
            return v;
        };
        t["d"] = t["default"];
        t["dictsort"] = [](V v, A a) {
            if (!v.is_object()) op_fail(fmt::format("dictsort expects a dict, not {}", type_name(v)));
            bool cs = bool_arg(a, 0, "case_sensitive", false);
            std::string by = a.get(1, "by") ? str_arg(a, 1, "by") : "key";
            bool reverse = bool_arg(a, 2, "reverse", false);
            if (by != "key" && by != "value") op_fail("dictsort: by must be 'key' or 'value'");
            Array items;
            for (const auto& [k, x] : v.object().items) items.push_back(Value::tuple(Array{Value(k), x}));
            Value idx(static_cast<int64_t>(by == "key" ? 0 : 1));
            Value attr(by == "key" ? "0" : "1");
            return Value(sorted(std::move(items), reverse, cs, &attr));
        };
        t["escape"] = [](V v, A) { return Value(html_escape(to_str(v))); };
        t["e"] = t["escape"];
        t["forceescape"] = t["escape"];
        t["first"] = [](V v, A) {
            Array items = iterate(v);
            return items.empty() ? Value::undefined("first of an empty sequence") : items.front();
        };
        t["last"] = [](V v, A) {
            Array items = iterate(v);
            return items.empty() ? Value::undefined("last of an empty sequence") : items.back();
        };
        t["float"] = filter_float;
        t["format"] = [](V v, A a) { return Value(percent_format(need_str(v, "format"), a.pos)); };
        t["indent"] = filter_indent;
        t["int"] = filter_int;
        t["items"] = [](V v, A) {
            if (v.is_undefined()) return Value(Array{});
            if (!v.is_object()) op_fail(fmt::format("items expects a dict, not {}", type_name(v)));
            Array out;
            for (const auto& [k, x] : v.object().items) out.push_back(Value::tuple(Array{Value(k), x}));
            return Value(std::move(out));
        };
        t["join"] = [](V v, A a) {
            std::string sep = a.get(0, "d") ? str_arg(a, 0, "d") : "";
            const Value* attribute = a.get(1, "attribute");
            std::string out;
            bool first = true;
            for (const Value& x : iterate(v)) {
                if (!first) out += sep;
                out += to_str(attribute && attribute->is_string() ? attr_path(x, attribute->str()) : x);
                first = false;
            }
            return Value(std::move(out));
        };
        t["length"] = [](V v, A) { return Value(length(v)); };
        t["count"] = t["length"];
        t["list"] = [](V v, A) { return Value(iterate(v)); };
        t["lower"] = [](V v, A) { return Value(py_lower(to_str(v))); };
        t["upper"] = [](V v, A) { return Value(py_upper(to_str(v))); };
        t["map"] = filter_map;
        t["max"] = [](V v, A a) { return min_max(v, a, true); };
        t["min"] = [](V v, A a) { return min_max(v, a, false); };
        t["pprint"] = [](V v, A) { return Value(repr(v)); };
        t["reject"] = [](V v, A a) { return select_like(v, a, false, false); };
        t["rejectattr"] = [](V v, A a) { return select_like(v, a, true, false); };
        t["select"] = [](V v, A a) { return select_like(v, a, false, true); };
        t["selectattr"] = [](V v, A a) { return select_like(v, a, true, true); };
        t["replace"] = [](V v, A a) {
            return Value(py_replace(to_str(v), str_arg(a, 0, "old"), str_arg(a, 1, "new"), int_arg(a, 2, "count", -1)));
        };
        t["reverse"] = [](V v, A) {
            if (v.is_string()) {
                auto cs = utf8_chars(v.str());
                std::string out;
                for (size_t i = cs.size(); i-- > 0;) out += cs[i];
                return Value(std::move(out));
            }
            Array items = iterate(v);
            std::reverse(items.begin(), items.end());
            return Value(std::move(items));
        };
        t["round"] = filter_round;
        t["safe"] = [](V v, A) { return v; };
        t["sort"] = [](V v, A a) {
            return Value(sorted(iterate(v), bool_arg(a, 0, "reverse", false), bool_arg(a, 1, "case_sensitive", false),
                                a.get(2, "attribute")));
        };
        t["string"] = [](V v, A) { return Value(to_str(v)); };
        t["sum"] = [](V v, A a) {
            const Value* attribute = a.get(0, "attribute");
            Value total = arg_or(a, 1, "start", Value(int64_t{0}));
            for (const Value& x : iterate(v))
                total = binary_op("+", total, attribute && attribute->is_string() ? attr_path(x, attribute->str()) : x);
            return total;
        };
        t["title"] = [](V v, A) { return Value(py_title(to_str(v))); };
        t["tojson"] = filter_tojson;
        t["trim"] = [](V v, A a) { return Value(py_strip(to_str(v), a.get(0, "chars"), true, true)); };
        t["truncate"] = filter_truncate;
        t["unique"] = [](V v, A a) {
            bool cs = bool_arg(a, 0, "case_sensitive", false);
            const Value* attribute = a.get(1, "attribute");
            Array out, seen;
            for (const Value& x : iterate(v)) {
                Value k = sort_key(attribute && attribute->is_string() ? attr_path(x, attribute->str()) : x, cs);
                if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); })) {
                    seen.push_back(k);
                    out.push_back(x);
                }
            }
            return Value(std::move(out));
        };
        t["wordcount"] = [](V v, A) { return Value(static_cast<int64_t>(py_split(to_str(v), nullptr, -1).size())); };
        return t;
    }();
    return table;
}

// ---- tests ----

using Test = std::function<bool(const Value&, const Args&)>;

const std::map<std::string, Test, std::less<>>& tests() {
    using A = const Args&;
    using V = const Value&;
    static const std::map<std::string, Test, std::less<>> table = [] {
        std::map<std::string, Test, std::less<>> t;
        auto other = [](A a) { return arg_or(a, 0, "other", Value()); };
        t["defined"] = [](V v, A) { return !v.is_undefined(); };
        t["undefined"] = [](V v, A) { return v.is_undefined(); };
        t["none"] = [](V v, A) { return v.is_none(); };
        t["boolean"] = [](V v, A) { return v.is_bool(); };
        t["true"] = [](V v, A) { return v.is_bool() && v.as_bool(); };
        t["false"] = [](V v, A) { return v.is_bool() && !v.as_bool(); };
        t["integer"] = [](V v, A) { return v.is_int(); };
        t["float"] = [](V v, A) { return v.is_float(); };
        t["number"] = [](V v, A) { return v.is_number(); };
        t["string"] = [](V v, A) { return v.is_string(); };
        t["mapping"] = [](V v, A) { return v.is_object() && !v.is_namespace(); };
        // Undefined is iterable (it iterates as empty) in Jinja, and so counts here.
        t["iterable"] = [](V v, A) { return v.is_string() || v.is_array() || (v.is_object() && !v.is_namespace()) || v.is_undefined(); };
        t["sequence"] = t["iterable"];
        t["callable"] = [](V v, A) { return v.is_callable(); };
        t["sameas"] = [other](V v, A a) {
            Value o = other(a);
            if (v.kind() != o.kind()) return false;
            if (v.is_array()) return &v.array() == &o.array();
            if (v.is_object()) return &v.object() == &o.object();
            return equals(v, o);
        };
        t["eq"] = [other](V v, A a) { return equals(v, other(a)); };
        t["equalto"] = t["eq"];
        t["=="] = t["eq"];
        t["ne"] = [other](V v, A a) { return !equals(v, other(a)); };
        t["!="] = t["ne"];
        t["lt"] = [other](V v, A a) { return less(v, other(a)); };
        t["lessthan"] = t["lt"];
        t["<"] = t["lt"];
        t["le"] = [other](V v, A a) { return !less(other(a), v); };
        t["<="] = t["le"];
        t["gt"] = [other](V v, A a) { return less(other(a), v); };
        t["greaterthan"] = t["gt"];
        t[">"] = t["gt"];
        t["ge"] = [other](V v, A a) { return !less(v, other(a)); };
        t[">="] = t["ge"];
        t["in"] = [](V v, A a) { return contains(arg_or(a, 0, "seq", Value()), v); };
        t["even"] = [](V v, A) {
            if (!v.is_int()) op_fail(fmt::format("even expects an integer, not {}", type_name(v)));
            return v.as_int() % 2 == 0;
        };
        t["odd"] = [](V v, A) {
            if (!v.is_int()) op_fail(fmt::format("odd expects an integer, not {}", type_name(v)));
            return v.as_int() % 2 != 0;
        };
        t["divisibleby"] = [](V v, A a) {
            int64_t n = int_arg(a, 0, "num", 0);
            if (n == 0) op_fail("integer division or modulo by zero");
            if (!v.is_number()) op_fail(fmt::format("divisibleby expects a number, not {}", type_name(v)));
            return static_cast<int64_t>(v.as_double()) % n == 0;
        };
        t["lower"] = [](V v, A) { return v.is_string() && py_lower(v.str()) == v.str(); };
        t["upper"] = [](V v, A) { return v.is_string() && py_upper(v.str()) == v.str(); };
        t["escaped"] = [](V, A) { return false; };
        t["filter"] = [](V v, A) { return v.is_string() && has_filter(v.str()); };
        t["test"] = [](V v, A) { return v.is_string() && has_test(v.str()); };
        return t;
    }();
    return table;
}

}  // namespace

// ---- access ----

Value get_attr(const Value& obj, const std::string& name) {
    if (obj.is_undefined()) op_fail(obj.undefined_message());
    if (is_unsafe_method(obj, name))
        op_fail(fmt::format("access to attribute '{}' of '{}' object is unsafe (templates are immutable)", name,
                            type_name(obj)));
    if (obj.is_namespace()) {
        const Value* v = obj.object().find(name);
        return v ? *v : Value::undefined(fmt::format("'Namespace' object has no attribute '{}'", name));
    }
    if (obj.is_object()) {
        // Jinja tries the Python attribute first, so d.items is the method even if "items" is a key.
        Value m = dict_method(obj, name);
        if (!m.is_undefined()) return m;
        const Value* v = obj.object().find(name);
        return v ? *v : Value::undefined(fmt::format("'dict object' has no attribute '{}'", name));
    }
    if (obj.is_string()) return str_method(obj, name);
    if (obj.is_array()) {
        Value m = list_method(obj, name);
        return m.is_undefined() ? Value::undefined(fmt::format("'list object' has no attribute '{}'", name)) : m;
    }
    return Value::undefined(fmt::format("'{}' object has no attribute '{}'", type_name(obj), name));
}

Value get_item(const Value& obj, const Value& key) {
    if (obj.is_undefined()) op_fail(obj.undefined_message());
    if (obj.is_object()) {
        if (key.is_string()) {
            if (const Value* v = obj.object().find(key.str())) return *v;
            if (!obj.is_namespace()) {  // Jinja falls back to the attribute
                Value m = dict_method(obj, key.str());
                if (!m.is_undefined()) return m;
            }
        }
        return Value::undefined(fmt::format("'dict object' has no attribute {}", repr(key)));
    }
    if ((obj.is_array() || obj.is_string()) && (key.is_int() || key.is_bool())) {
        int64_t i = key.as_int();
        if (obj.is_array()) {
            int64_t n = static_cast<int64_t>(obj.array().size());
            if (i < 0) i += n;
            if (i < 0 || i >= n) return Value::undefined(fmt::format("list index {} out of range", key.as_int()));
            return obj.array()[static_cast<size_t>(i)];
        }
        auto cs = utf8_chars(obj.str());
        int64_t n = static_cast<int64_t>(cs.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined(fmt::format("string index {} out of range", key.as_int()));
        return Value(std::string(cs[static_cast<size_t>(i)]));
    }
    if (obj.is_array() || obj.is_string()) {
        if (key.is_string()) return get_attr(obj, key.str());
        return Value::undefined(fmt::format("'{}' indices must be integers, not {}", type_name(obj), type_name(key)));
    }
    return Value::undefined(fmt::format("'{}' object is not subscriptable", type_name(obj)));
}

Value get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step) {
    if (obj.is_undefined()) op_fail(obj.undefined_message());
    auto bound = [](const Value* v, const char* what) -> std::optional<int64_t> {
        if (!v || v->is_none()) return std::nullopt;
        if (!v->is_int() && !v->is_bool()) op_fail(fmt::format("slice {} must be an integer or None", what));
        return v->as_int();
    };
    auto st = bound(step, "step");
    int64_t k = st.value_or(1);
    if (k == 0) op_fail("slice step cannot be zero");
    std::vector<std::string_view> chars;
    int64_t n;
    if (obj.is_array()) {
        n = static_cast<int64_t>(obj.array().size());
    } else if (obj.is_string()) {
        chars = utf8_chars(obj.str());
        n = static_cast<int64_t>(chars.size());
    } else {
        op_fail(fmt::format("'{}' object is not subscriptable", type_name(obj)));
    }
    // Python's slice.indices()
    auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
        if (!v) return dflt;
        int64_t i = *v;
        if (i < 0) i += n;
        if (k > 0) return std::clamp<int64_t>(i, 0, n);
        return std::clamp<int64_t>(i, -1, n - 1);
    };
    int64_t b = clamp(bound(start, "start"), k > 0 ? 0 : n - 1);
    int64_t e = clamp(bound(stop, "stop"), k > 0 ? n : -1);
    if (obj.is_array()) {
        Array out;
        for (int64_t i = b; k > 0 ? i < e : i > e; i += k) out.push_back(obj.array()[static_cast<size_t>(i)]);
        return Value(std::move(out));
    }
    std::string out;
    for (int64_t i = b; k > 0 ? i < e : i > e; i += k) out += chars[static_cast<size_t>(i)];
    return Value(std::move(out));
}

// ---- operators ----

Value binary_op(std::string_view op, const Value& a, const Value& b) {
    if (op == "~") return Value(to_str(a) + to_str(b));
    if (a.is_undefined()) op_fail(a.undefined_message());
    if (b.is_undefined()) op_fail(b.undefined_message());
    auto unsupported = [&]() {
        op_fail(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, type_name(a), type_name(b)));
    };
    bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
    bool nums = a.is_number() && b.is_number();
    int64_t r = 0;
    if (op == "+") {
        if (ints) {
            if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) op_fail("integer overflow");
            return Value(r);
        }
        if (nums) return Value(a.as_double() + b.as_double());
        if (a.is_string() && b.is_string()) return Value(a.str() + b.str());
        if (a.is_array() && b.is_array()) {
            Array out = a.array();
            out.insert(out.end(), b.array().begin(), b.array().end());
            return Value(std::move(out));
        }
        unsupported();
    }
    if (op == "-") {
        if (ints) {
            if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) op_fail("integer overflow");
            return Value(r);
        }
        if (nums) return Value(a.as_double() - b.as_double());
        unsupported();
    }
    if (op == "*") {
        if (ints) {
            if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) op_fail("integer overflow");
            return Value(r);
        }
        if (nums) return Value(a.as_double() * b.as_double());
        const Value* seq = a.is_string() || a.is_array() ? &a : b.is_string() || b.is_array() ? &b : nullptr;
        const Value* times = seq == &a ? &b : &a;
        if (seq && (times->is_int() || times->is_bool())) {
            int64_t n = std::max<int64_t>(0, times->as_int());
            // A list item is a Value, not a byte: the same byte bound, in items.
            size_t unit = seq->is_string() ? seq->str().size() : seq->array().size() * sizeof(Value);
            if (unit && static_cast<uint64_t>(n) > k_max_string / unit) op_fail("repetition result too large");
            if (seq->is_string()) {
                std::string out;
                for (int64_t i = 0; i < n; ++i) out += seq->str();
                return Value(std::move(out));
            }
            Array out;
            for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq->array().begin(), seq->array().end());
            return Value(std::move(out));
        }
        unsupported();
    }
    if (op == "/") {
        if (!nums) unsupported();
        if (b.as_double() == 0) op_fail("division by zero");
        return Value(a.as_double() / b.as_double());
    }
    if (op == "//" || op == "%") {
        if (op == "%" && a.is_string()) return Value(percent_format(a.str(), b.is_array() ? b.array() : Array{b}));
        if (!nums) unsupported();
        if (ints) {
            int64_t x = a.as_int(), y = b.as_int();
            if (y == 0) op_fail("integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) op_fail("integer overflow");
            int64_t q = x / y, m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors toward -inf
                --q;
                m += y;
            }
            return Value(op == "//" ? q : m);
        }
        double x = a.as_double(), y = b.as_double();
        if (y == 0) op_fail("float division by zero");
        double q = std::floor(x / y);
        return Value(op == "//" ? q : x - q * y);
    }
    if (op == "**") {
        if (ints && b.as_int() >= 0) {
            int64_t base = a.as_int(), result = 1;
            for (int64_t e = b.as_int(); e > 0; --e)
                if (__builtin_mul_overflow(result, base, &result)) op_fail("integer overflow");
            return Value(result);
        }
        if (nums) return Value(std::pow(a.as_double(), b.as_double()));
        unsupported();
    }
    op_fail(fmt::format("unknown operator '{}'", op));
}

Value negate(const Value& v) {
    if (v.is_float()) return Value(-v.as_double());
    if (v.is_int() || v.is_bool()) {
        if (v.as_int() == INT64_MIN) op_fail("integer overflow");
        return Value(-v.as_int());
    }
    if (v.is_undefined()) op_fail(v.undefined_message());
    op_fail(fmt::format("bad operand type for unary -: '{}'", type_name(v)));
}

bool contains(const Value& container, const Value& item) {
    if (container.is_string()) {
        if (!item.is_string())
            op_fail(fmt::format("'in <string>' requires string as left operand, not {}", type_name(item)));
        return container.str().find(item.str()) != std::string::npos;
    }
    if (container.is_array()) {
        for (const auto& x : container.array())
            if (equals(x, item)) return true;
        return false;
    }
    if (container.is_object()) return item.is_string() && container.object().find(item.str()) != nullptr;
    if (container.is_undefined()) return false;
    op_fail(fmt::format("argument of type '{}' is not iterable", type_name(container)));
}

Array iterate(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::undefined: return {};
        case Value::Kind::array: return v.array();
        case Value::Kind::string: {
            Array out;
            for (auto ch : utf8_chars(v.str())) out.emplace_back(std::string(ch));
            return out;
        }
        case Value::Kind::object: {
            if (v.is_namespace()) break;
            Array out;
            for (const auto& kv : v.object().items) out.emplace_back(kv.first);
            return out;
        }
        default: break;
    }
    op_fail(fmt::format("'{}' object is not iterable", type_name(v)));
}

int64_t length(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::undefined: return 0;
        case Value::Kind::string: return static_cast<int64_t>(utf8_length(v.str()));
        case Value::Kind::array: return static_cast<int64_t>(v.array().size());
        case Value::Kind::object:
            if (!v.is_namespace()) return static_cast<int64_t>(v.object().items.size());
            break;
        default: break;
    }
    op_fail(fmt::format("object of type '{}' has no len()", type_name(v)));
}

bool has_filter(std::string_view name) { return filters().count(name) != 0; }
bool has_test(std::string_view name) { return tests().count(name) != 0; }

Value apply_filter(std::string_view name, const Value& v, const Args& args) {
    auto it = filters().find(name);
    if (it == filters().end()) op_fail(fmt::format("no filter named '{}'", name));
    return it->second(v, args);
}

bool apply_test(std::string_view name, const Value& v, const Args& args) {
    auto it = tests().find(name);
    if (it == tests().end()) op_fail(fmt::format("no test named '{}'", name));
    return it->second(v, args);
}

Value call(const Value& callee, const Args& args) {
    if (callee.is_callable()) return callee.callable().fn(args);
    if (callee.is_undefined()) op_fail(callee.undefined_message());
    op_fail(fmt::format("'{}' object is not callable", type_name(callee)));
}

// ---- globals ----

void add_builtin_globals(Object& g) {
    g.set("range", Value::function("range", [](const Args& a) {
        if (a.pos.empty() || a.pos.size() > 3) op_fail("range expected 1 to 3 arguments");
        for (const auto& x : a.pos)
            if (!x.is_int() && !x.is_bool()) op_fail(fmt::format("range: '{}' object cannot be interpreted as an integer", type_name(x)));
        int64_t start = 0, stop, step = 1;
        if (a.pos.size() == 1) {
            stop = a.pos[0].as_int();
        } else {
            start = a.pos[0].as_int();
            stop = a.pos[1].as_int();
            if (a.pos.size() == 3) step = a.pos[2].as_int();
        }
        if (step == 0) op_fail("range() arg 3 must not be zero");
        Array out;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
            if (static_cast<int64_t>(out.size()) >= k_max_range)
                op_fail(fmt::format("range too big, the sandbox allows at most {} items", k_max_range));
            out.emplace_back(i);
        }
        return Value(std::move(out));
    }));
    g.set("dict", Value::function("dict", [](const Args& a) {
        auto o = std::make_shared<Object>();
        if (!a.pos.empty()) {
            if (!a.pos[0].is_object()) op_fail("dict() expects a mapping");
            o->items = a.pos[0].object().items;
        }
        for (const auto& [k, v] : a.kw) o->set(k, v);
        return Value(std::move(o));
    }));
    g.set("namespace", Value::function("namespace", [](const Args& a) {
        auto o = std::make_shared<Object>();
        o->is_namespace = true;
        if (!a.pos.empty()) {
            if (!a.pos[0].is_object()) op_fail("namespace() expects a mapping");
            o->items = a.pos[0].object().items;
        }
        for (const auto& [k, v] : a.kw) o->set(k, v);
        return Value(std::move(o));
    }));
    g.set("raise_exception", Value::function("raise_exception", [](const Args& a) -> Value {
        op_fail("template raised an error: " + (a.pos.empty() ? std::string() : to_str(a.pos[0])));
    }));
    g.set("strftime_now", Value::function("strftime_now", [](const Args& a) {
        const Value* f = a.get(0, "format");
        if (!f || !f->is_string()) op_fail("strftime_now expects a format string");
        std::time_t now = std::time(nullptr);
        std::tm tm{};
        localtime_r(&now, &tm);
        char buf[512];
        size_t n = std::strftime(buf, sizeof buf, f->str().c_str(), &tm);
        return Value(std::string(buf, n));
    }));
    g.set("joiner", Value::function("joiner", [](const Args& a) {
        std::string sep = a.get(0, "sep") ? to_str(*a.get(0, "sep")) : ", ";
        auto used = std::make_shared<bool>(false);
        return Value::function("joiner", [sep, used](const Args&) {
            if (!*used) {
                *used = true;
                return Value("");
            }
            return Value(sep);
        });
    }));
    g.set("cycler", Value::function("cycler", [](const Args& a) {
        if (a.pos.empty()) op_fail("cycler needs at least one item");
        auto o = std::make_shared<Object>();
        auto items = std::make_shared<Array>(a.pos);
        auto pos = std::make_shared<size_t>(0);
        std::weak_ptr<Object> self = o;
        o->set("current", (*items)[0]);
        o->set("next", Value::function("cycler.next", [items, pos, self](const Args&) {
            Value v = (*items)[*pos];
            *pos = (*pos + 1) % items->size();
            if (auto s = self.lock()) s->set("current", (*items)[*pos]);
            return v;
        }));
        o->set("reset", Value::function("cycler.reset", [items, pos, self](const Args&) {
            *pos = 0;
            if (auto s = self.lock()) s->set("current", (*items)[0]);
            return Value::none();
        }));
        return Value(std::move(o));
    }));
}

}  // namespace tt::jinja
