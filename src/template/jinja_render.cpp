// The Jinja interpreter: walks the statement tree with Jinja's scoping rules (a for-loop body is
// a new scope per iteration, so `set` inside it does not leak out, which is why templates use
// namespace(); `if` bodies share their enclosing scope; a macro call has its own scope) and turns
// value errors into tt::Error with the line and column of the expression that failed.
#include "template/jinja.h"

#include "core/error.h"
#include "template/jinja_builtins.h"
#include "template/jinja_lexer.h"
#include "template/jinja_parser.h"

#include <chrono>
#include <optional>

namespace tt::jinja {

extern const char* const k_block_input;

namespace {

struct Scope {
    std::shared_ptr<Scope> parent;
    std::vector<std::pair<std::string, Value>> vars;

    const Value* find(std::string_view name) const {
        for (const Scope* s = this; s; s = s->parent.get())
            for (const auto& [k, v] : s->vars)
                if (k == name) return &v;
        return nullptr;
    }
    void set(const std::string& name, Value v) {
        for (auto& [k, old] : vars)
            if (k == name) {
                old = std::move(v);
                return;
            }
        vars.emplace_back(name, std::move(v));
    }
};
using ScopePtr = std::shared_ptr<Scope>;

ScopePtr child_of(const ScopePtr& parent) {
    auto s = std::make_shared<Scope>();
    s->parent = parent;
    return s;
}

enum class Flow { normal, break_, continue_ };

class Renderer {
public:
    Renderer(const std::string& context, const std::string& source, const RenderLimits& limits)
        : context_(context), lines_(source), limits_(limits),
          deadline_(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(limits.max_seconds))) {}

    // Namespaces can hold themselves ({% set ns.me = ns %}) and loop.changed() can remember the
    // loop object that holds it; both are shared_ptr cycles, broken here once the render is over.
    ~Renderer() {
        for (auto& ns : namespaces_) ns->items.clear();
        for (auto& c : changed_) c->reset();
    }

    std::string run(const Body& body, const Object& vars) {
        auto builtins = std::make_shared<Scope>();
        Object g;
        add_builtin_globals(g);
        // namespace() is the renderer's own, to keep track of what it must clear afterwards.
        g.set("namespace", Value::function("namespace", [this](const Args& a) {
            auto o = std::make_shared<Object>();
            o->is_namespace = true;
            if (!a.pos.empty()) {
                if (!a.pos[0].is_object()) op_fail("namespace() expects a mapping");
                o->items = a.pos[0].object().items;
            }
            for (const auto& [k, v] : a.kw) o->set(k, v);
            for (const auto& [k, v] : o->items) check_value(v);
            namespaces_.push_back(o);
            return Value(std::move(o));
        }));
        builtins->vars = std::move(g.items);
        globals_ = child_of(builtins);
        globals_->vars = vars.items;
        std::string out;
        exec(body, globals_, out);
        return out;
    }

private:
    [[noreturn]] void fail_at(size_t offset, const std::string& msg) const {
        SourcePos p = lines_.at(offset);
        fail("{}:{}:{}: {}", context_, p.line, p.col, msg);
    }

    // Every limit failure names the template (context_), the position and the limit, so that a
    // user whose downloaded template trips one knows it is the template and which bound it hit.
    void step(size_t offset) {
        if (++steps_ > limits_.max_steps)
            fail_at(offset, fmt::format("template exceeded the step limit ({} statements and loop iterations)",
                                        limits_.max_steps));
        check_time(offset);
    }
    void check_time(size_t offset) const {
        if (std::chrono::steady_clock::now() > deadline_)
            fail_at(offset, fmt::format("template exceeded the time limit ({} s)", limits_.max_seconds));
    }
    // All rendered text counts, at every level (a macro's output is counted when the macro renders
    // it and again where it is printed), so that neither the output nor text piled up in macro
    // results and set blocks can grow without bound.
    void emit(std::string& out, const std::string& text, size_t offset) {
        rendered_ += text.size();
        if (rendered_ > limits_.max_output)
            fail_at(offset, fmt::format("template exceeded the output limit ({} bytes rendered)", limits_.max_output));
        out += text;
    }
    // Values are bounded when made (see Value::depth()): a loop of `{% set ns.x = [ns.x] %}` or
    // `{% set ns.x = [ns.x, ns.x] %}` stops at the limit instead of building what str(), tojson
    // or the destructor cannot walk.
    void check_value(const Value& v) const {
        if (v.depth() > static_cast<uint32_t>(limits_.max_depth))
            op_fail(fmt::format("template exceeded the nesting limit: a value nested deeper than {} levels",
                                limits_.max_depth));
        if (v.weight() > limits_.max_output)
            op_fail(fmt::format("template exceeded the output limit: a value larger than {} bytes",
                                limits_.max_output));
    }

    // Evaluation, block and macro-call nesting counted together: the parser bounds each tree, this
    // bounds trees within blocks within macros (a macro calling itself, or calling deeper ones).
    struct Nest {
        Renderer& r;
        size_t offset;
        Nest(Renderer& r_, size_t offset_) : r(r_), offset(offset_) {
            if (++r.depth_ > r.limits_.max_depth) {
                --r.depth_;
                r.fail_at(offset, fmt::format("template exceeded the nesting limit: evaluation nested deeper than {} "
                                              "levels (expressions, blocks and macro calls together)",
                                              r.limits_.max_depth));
            }
        }
        ~Nest() { --r.depth_; }
        Nest(const Nest&) = delete;
        Nest& operator=(const Nest&) = delete;
    };

    // ---- expressions ----

    Value eval(const Expr& e, const ScopePtr& scope) {
        Nest nest(*this, e.offset);
        // An expression does bounded work between statements, but a loop over 100000 items with a
        // filter condition, or a long chain, is many of them: look at the clock now and then.
        if ((++evals_ & 1023) == 0) check_time(e.offset);
        try {
            Value v = eval_inner(e, scope);
            check_value(v);
            return v;
        } catch (const OpError& err) {
            fail_at(e.offset, err.message);
        }
    }

    Args eval_args(const Expr& e, size_t first, const ScopePtr& scope) {
        Args a;
        for (size_t i = first; i < e.args.size(); ++i) a.pos.push_back(eval(*e.args[i], scope));
        for (const auto& [k, x] : e.kwargs) a.kw.emplace_back(k, eval(*x, scope));
        return a;
    }

    Value eval_inner(const Expr& e, const ScopePtr& scope) {
        switch (e.kind) {
            case ExprKind::literal: return e.value;
            case ExprKind::name: {
                if (const Value* v = scope->find(e.name)) return *v;
                return Value::undefined(fmt::format("'{}' is undefined", e.name));
            }
            case ExprKind::list:
            case ExprKind::tuple: {
                Array items;
                for (const auto& x : e.args) items.push_back(eval(*x, scope));
                return e.kind == ExprKind::tuple ? Value::tuple(std::move(items)) : Value(std::move(items));
            }
            case ExprKind::dict: {
                auto o = std::make_shared<Object>();
                for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
                    Value k = eval(*e.args[i], scope);
                    if (!k.is_string())
                        fail_at(e.args[i]->offset, fmt::format("dict keys must be strings, not {}", type_name(k)));
                    o->set(k.str(), eval(*e.args[i + 1], scope));
                }
                return Value(std::move(o));
            }
            case ExprKind::getattr: return get_attr(eval(*e.args[0], scope), e.name);
            case ExprKind::getitem: {
                Value obj = eval(*e.args[0], scope);
                return get_item(obj, eval(*e.args[1], scope));
            }
            case ExprKind::slice: {
                Value obj = eval(*e.args[0], scope);
                std::optional<Value> parts[3];
                for (int i = 0; i < 3; ++i)
                    if (e.args[static_cast<size_t>(i) + 1]) parts[i] = eval(*e.args[static_cast<size_t>(i) + 1], scope);
                return get_slice(obj, parts[0] ? &*parts[0] : nullptr, parts[1] ? &*parts[1] : nullptr,
                                 parts[2] ? &*parts[2] : nullptr);
            }
            case ExprKind::call: {
                Value callee = eval(*e.args[0], scope);
                return call(callee, eval_args(e, 1, scope));
            }
            case ExprKind::filter: {
                Value v = eval(*e.args[0], scope);
                return apply_filter(e.name, v, eval_args(e, 1, scope));
            }
            case ExprKind::test: {
                Value v = eval(*e.args[0], scope);
                bool r = apply_test(e.name, v, eval_args(e, 1, scope));
                return Value(e.negated ? !r : r);
            }
            case ExprKind::not_: return Value(!truthy(eval(*e.args[0], scope)));
            case ExprKind::neg: return negate(eval(*e.args[0], scope));
            case ExprKind::pos: {
                Value v = eval(*e.args[0], scope);
                if (!v.is_number()) op_fail(fmt::format("bad operand type for unary +: '{}'", type_name(v)));
                return v;
            }
            case ExprKind::and_: {
                Value a = eval(*e.args[0], scope);
                return truthy(a) ? eval(*e.args[1], scope) : a;
            }
            case ExprKind::or_: {
                Value a = eval(*e.args[0], scope);
                return truthy(a) ? a : eval(*e.args[1], scope);
            }
            case ExprKind::binary: {
                Value a = eval(*e.args[0], scope);
                Value b = eval(*e.args[1], scope);
                return binary_op(e.name, a, b);
            }
            case ExprKind::compare: {
                Value left = eval(*e.args[0], scope);
                for (size_t i = 0; i < e.ops.size(); ++i) {
                    Value right = eval(*e.args[i + 1], scope);
                    const std::string& op = e.ops[i];
                    bool r;
                    if (op == "==") r = equals(left, right);
                    else if (op == "!=") r = !equals(left, right);
                    else if (op == "<") r = less(left, right);
                    else if (op == ">") r = less(right, left);
                    else if (op == "<=") r = !less(right, left);
                    else if (op == ">=") r = !less(left, right);
                    else if (op == "in") r = contains(right, left);
                    else r = !contains(right, left);  // not in
                    if (!r) return Value(false);
                    left = std::move(right);
                }
                return Value(true);
            }
            case ExprKind::cond: {
                if (truthy(eval(*e.args[0], scope))) return eval(*e.args[1], scope);
                if (e.args[2]) return eval(*e.args[2], scope);
                return Value::undefined("the inline if-expression evaluated to false and has no else");
            }
        }
        op_fail("unknown expression");
    }

    // ---- statements ----

    Flow exec(const Body& body, const ScopePtr& scope, std::string& out) {
        if (body.empty()) return Flow::normal;
        Nest nest(*this, body.front()->offset);
        for (const auto& s : body) {
            step(s->offset);
            Flow f = exec_stmt(*s, scope, out);
            if (f != Flow::normal) return f;
        }
        return Flow::normal;
    }

    std::string render_body(const Body& body, const ScopePtr& scope) {
        std::string out;
        exec(body, scope, out);
        return out;
    }

    Flow exec_stmt(const Stmt& s, const ScopePtr& scope, std::string& out) {
        try {
            switch (s.kind) {
                case StmtKind::text: emit(out, s.text, s.offset); break;
                case StmtKind::output: emit(out, to_str(eval(*s.expr, scope)), s.offset); break;
                case StmtKind::if_:
                    for (size_t i = 0; i < s.conds.size(); ++i)
                        if (truthy(eval(*s.conds[i], scope))) return exec(s.bodies[i], scope, out);
                    if (s.bodies.size() > s.conds.size()) return exec(s.bodies.back(), scope, out);
                    break;
                case StmtKind::for_: exec_for(s, scope, out); break;
                case StmtKind::set: exec_set(s, scope); break;
                case StmtKind::set_block: {
                    Value v(render_body(s.bodies[0], scope));
                    if (s.expr) v = apply_block_filter(*s.expr, v, scope);
                    scope->set(s.targets[0], std::move(v));
                    break;
                }
                case StmtKind::macro: scope->set(s.name, make_macro(s, scope, s.name)); break;
                case StmtKind::call_block: {
                    Value caller = make_macro(s, scope, "caller");
                    const Expr& c = *s.expr;
                    Value callee = eval(*c.args[0], scope);
                    Args a = eval_args(c, 1, scope);
                    a.kw.emplace_back("caller", caller);
                    Value r;
                    try {
                        r = call(callee, a);
                    } catch (const OpError& err) {
                        fail_at(c.offset, err.message);
                    }
                    emit(out, to_str(r), s.offset);
                    break;
                }
                case StmtKind::filter: {
                    Value v(render_body(s.bodies[0], scope));
                    emit(out, to_str(apply_block_filter(*s.expr, v, scope)), s.offset);
                    break;
                }
                case StmtKind::break_: return Flow::break_;
                case StmtKind::continue_: return Flow::continue_;
                case StmtKind::scope: return exec(s.bodies[0], scope, out);
            }
        } catch (const OpError& err) {
            fail_at(s.offset, err.message);
        }
        return Flow::normal;
    }

    Value apply_block_filter(const Expr& chain, Value input, const ScopePtr& scope) {
        auto inner = child_of(scope);
        inner->set(k_block_input, std::move(input));
        return eval(chain, inner);
    }

    void bind_targets(const std::vector<std::string>& targets, const Value& v, Scope& scope, size_t offset) {
        if (targets.size() == 1) {
            scope.set(targets[0], v);
            return;
        }
        if (!v.is_array() && !v.is_string())
            fail_at(offset, fmt::format("cannot unpack a non-sequence {} into {} names", type_name(v), targets.size()));
        Array items = iterate(v);
        if (items.size() != targets.size())
            fail_at(offset, fmt::format("{} values to unpack (expected {}, got {})",
                                        items.size() > targets.size() ? "too many" : "not enough", targets.size(),
                                        items.size()));
        for (size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], items[i]);
    }

    void exec_set(const Stmt& s, const ScopePtr& scope) {
        Value v = eval(*s.expr, scope);
        if (!s.attr.empty()) {
            const Value* target = scope->find(s.targets[0]);
            if (!target || !target->is_namespace())
                fail_at(s.offset, fmt::format("cannot assign attribute '{}' on '{}': it is not a namespace()",
                                              s.attr, s.targets[0]));
            target->mutable_object().set(s.attr, std::move(v));  // v was checked by eval
            return;
        }
        bind_targets(s.targets, v, *scope, s.offset);
    }

    void exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
        if (s.recursive) fail_at(s.offset, "recursive for loops are not supported");
        Value iterable = eval(*s.expr, scope);
        Array items;
        try {
            items = iterate(iterable);
        } catch (const OpError& err) {
            fail_at(s.expr->offset, err.message);
        }
        if (s.cond) {  // `for x in xs if cond`: filtered before the loop, so loop.length counts kept items
            Array kept;
            for (const Value& x : items) {
                auto probe = child_of(scope);
                bind_targets(s.targets, x, *probe, s.offset);
                if (truthy(eval(*s.cond, probe))) kept.push_back(x);
            }
            items = std::move(kept);
        }
        if (items.empty()) {
            if (s.bodies.size() > 1) exec(s.bodies[1], scope, out);
            return;
        }
        auto last_changed = std::make_shared<std::optional<Value>>();
        changed_.push_back(last_changed);
        int64_t n = static_cast<int64_t>(items.size());
        for (int64_t i = 0; i < n; ++i) {
            step(s.offset);
            auto iter = child_of(scope);
            bind_targets(s.targets, items[static_cast<size_t>(i)], *iter, s.offset);
            iter->set("loop", make_loop(items, i, last_changed));
            Flow f = exec(s.bodies[0], iter, out);
            if (f == Flow::break_) break;
        }
    }

    static Value make_loop(const Array& items, int64_t i, const std::shared_ptr<std::optional<Value>>& last_changed) {
        int64_t n = static_cast<int64_t>(items.size());
        auto o = std::make_shared<Object>();
        o->items.reserve(14);
        o->items.emplace_back("index", Value(i + 1));
        o->items.emplace_back("index0", Value(i));
        o->items.emplace_back("revindex", Value(n - i));
        o->items.emplace_back("revindex0", Value(n - i - 1));
        o->items.emplace_back("first", Value(i == 0));
        o->items.emplace_back("last", Value(i == n - 1));
        o->items.emplace_back("length", Value(n));
        o->items.emplace_back("depth", Value(1));
        o->items.emplace_back("depth0", Value(0));
        o->items.emplace_back("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
        o->items.emplace_back("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item"));
        o->items.emplace_back("cycle", Value::function("loop.cycle", [i](const Args& a) {
            if (a.pos.empty()) op_fail("no items for cycling given");
            return a.pos[static_cast<size_t>(i) % a.pos.size()];
        }));
        o->items.emplace_back("changed", Value::function("loop.changed", [last_changed](const Args& a) {
            Value v(a.pos);
            if (*last_changed && equals(**last_changed, v)) return Value(false);
            *last_changed = v;
            return Value(true);
        }));
        return Value(std::move(o));
    }

    // A macro is a callable that renders its body in a fresh scope whose parent is the scope it
    // was defined in (held weakly: the scope owns the macro, a strong link would be a cycle).
    Value make_macro(const Stmt& m, const ScopePtr& defining, const std::string& name) {
        std::weak_ptr<Scope> def = defining;
        const Stmt* stmt = &m;
        return Value::function(name, [this, stmt, def](const Args& a) {
            ScopePtr parent = def.lock();
            if (!parent) parent = globals_;
            auto scope = child_of(parent);
            const auto& params = stmt->params;
            Array varargs;
            for (size_t i = 0; i < a.pos.size(); ++i) {
                if (i < params.size()) scope->set(params[i].name, a.pos[i]);
                else varargs.push_back(a.pos[i]);
            }
            auto kwargs = std::make_shared<Object>();
            for (const auto& [k, v] : a.kw) {
                bool is_param = false;
                for (size_t i = 0; i < params.size(); ++i)
                    if (params[i].name == k) {
                        if (i < a.pos.size()) op_fail(fmt::format("macro got multiple values for argument '{}'", k));
                        is_param = true;
                    }
                if (is_param || k == "caller") scope->set(k, v);
                else kwargs->set(k, v);
            }
            for (size_t i = a.pos.size(); i < params.size(); ++i) {
                if (scope->vars.end() != std::find_if(scope->vars.begin(), scope->vars.end(),
                                                      [&](const auto& kv) { return kv.first == params[i].name; }))
                    continue;
                scope->set(params[i].name, params[i].default_value
                                               ? eval(*params[i].default_value, scope)
                                               : Value::undefined(fmt::format("'{}' is undefined", params[i].name)));
            }
            scope->set("varargs", Value(std::move(varargs)));
            scope->set("kwargs", Value(std::move(kwargs)));
            std::string out;
            exec(stmt->bodies[0], scope, out);  // bounded by the nesting limit like any block
            return Value(std::move(out));
        });
    }

    const std::string& context_;
    LineTable lines_;
    RenderLimits limits_;
    std::chrono::steady_clock::time_point deadline_;
    uint64_t steps_ = 0;
    uint64_t evals_ = 0;
    size_t rendered_ = 0;
    int depth_ = 0;
    ScopePtr globals_;
    std::vector<std::shared_ptr<Object>> namespaces_;
    std::vector<std::shared_ptr<std::optional<Value>>> changed_;
};

}  // namespace

Template::Template(const std::string& source, std::string context, const RenderLimits& limits)
    : context_(std::move(context)),
      limits_(limits),
      source_(std::make_shared<const std::string>(normalize_newlines(source))),
      body_(std::make_shared<const Body>(parse(*source_, context_, limits.max_depth))) {}

std::string Template::render(const Object& vars, const RenderLimits& limits) const {
    Renderer r(context_, *source_, limits);
    return r.run(*body_, vars);
}

}  // namespace tt::jinja
