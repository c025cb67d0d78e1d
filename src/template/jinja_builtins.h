// The operations behind template expressions: attribute and item access (with the Python string /
// dict / list methods chat templates call), slicing, operators, Jinja's filters and tests, and
// the globals (range, namespace, dict, joiner, cycler, raise_exception, strftime_now).
// All of them throw OpError, which the renderer turns into an error with line and column.
#pragma once

#include "template/jinja_value.h"

#include <string>
#include <string_view>

namespace tt::jinja {

// obj.name: dict keys, namespace attributes, bound methods (str.strip, dict.items, ...).
// Accessing anything on undefined fails like Jinja does ("'x' is undefined").
Value get_attr(const Value& obj, const std::string& name);
// obj[key]: list/str by index (negative counts from the end), dict by key.
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] on lists and strings (null pointers: omitted bounds).
Value get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step);

// + - * / // % ** ~
Value binary_op(std::string_view op, const Value& a, const Value& b);
Value negate(const Value& v);
// `item in container`
bool contains(const Value& container, const Value& item);
// Iteration as a for loop sees it: list items, dict keys, string characters; undefined is empty.
Array iterate(const Value& v);
// len(); undefined has length 0.
int64_t length(const Value& v);

bool has_filter(std::string_view name);
bool has_test(std::string_view name);
Value apply_filter(std::string_view name, const Value& v, const Args& args);
bool apply_test(std::string_view name, const Value& v, const Args& args);
Value call(const Value& callee, const Args& args);

// Adds range, dict, namespace, joiner, cycler, raise_exception and strftime_now to `globals`.
void add_builtin_globals(Object& globals);

}  // namespace tt::jinja
