// The parsed form of a Jinja template: expression and statement nodes, each with the source
// offset it came from so that render errors can name line and column.
#pragma once

#include "template/jinja_value.h"

#include <memory>
#include <string>
#include <vector>

namespace tt::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind : uint8_t {
    literal,   // value
    name,      // name
    list,      // args: items
    tuple,     // args: items (a list at run time)
    dict,      // args: key0, value0, key1, value1, ...
    getattr,   // args[0].name
    getitem,   // args[0][args[1]]
    slice,     // args[0][args[1]:args[2]:args[3]] (null entries: omitted)
    call,      // args[0](args[1..], kwargs)
    filter,    // args[0] | name(args[1..], kwargs)
    test,      // args[0] is [not] name(args[1..], kwargs)
    not_,      // not args[0]
    neg,       // -args[0]
    pos,       // +args[0]
    and_,      // args[0] and args[1]
    or_,       // args[0] or args[1]
    binary,    // args[0] op args[1]: + - * / // % ** ~
    compare,   // args[0] ops[0] args[1] ops[1] args[2] ... (chained like Python)
    cond,      // args[1] if args[0] else args[2] (args[2] may be null: undefined)
};

struct Expr {
    ExprKind kind;
    size_t offset = 0;
    Value value;                    // literal
    std::string name;               // name / attribute / filter / test / binary operator
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    std::vector<std::string> ops;   // compare operators: == != < <= > >= in "not in"
    bool negated = false;           // test: `is not`
    // 1 + the tallest child. The parser refuses a tree taller than RenderLimits::max_depth, so
    // evaluating or destroying one (both recurse per level) cannot overflow the stack, however
    // long a flat `a + 1 + 1 ...` or `x|upper|upper ...` chain (left-deep trees) is.
    int height = 1;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind : uint8_t {
    text,        // text
    output,      // {{ expr }}
    if_,         // conds[i] -> bodies[i]; bodies.back() is else when bodies.size() > conds.size()
    for_,        // for targets in expr [if cond]: bodies[0], else bodies[1]
    set,         // set targets = expr, or set targets[0].attr = expr
    set_block,   // set targets[0] %}bodies[0]{% endset (filter: optional `| f` chain in expr)
    macro,       // macro name(params) bodies[0]
    call_block,  // call(params) expr %}bodies[0]{% endcall: the macro gets caller()
    filter,      // filter expr (a filter chain applied to the rendered bodies[0])
    break_,
    continue_,
    scope,       // generation / endgeneration and other pass-through blocks: bodies[0]
};

struct MacroParam {
    std::string name;
    ExprPtr default_value;  // null: required
};

struct Stmt {
    StmtKind kind;
    size_t offset = 0;
    std::string text;
    ExprPtr expr;                 // output value, for iterable, set value, filter chain, call
    ExprPtr cond;                 // for-loop filter
    std::vector<ExprPtr> conds;   // if / elif conditions
    std::vector<Body> bodies;
    std::vector<std::string> targets;  // for / set names
    std::string attr;                  // set ns.attr
    std::string name;                  // macro name
    std::vector<MacroParam> params;
    bool recursive = false;
};

}  // namespace tt::jinja
