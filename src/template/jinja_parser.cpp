// Jinja parser: statements (if/for/set/macro/call/filter/raw/break/continue/generation) and
// expressions, following the grammar of Jinja's own parser.
#include "template/jinja_parser.h"

#include "core/error.h"
#include "template/jinja_builtins.h"

#include <initializer_list>

namespace tt::jinja {

// The variable a filter block / set block binds its rendered body to before applying the
// filter chain; not a valid identifier, so templates cannot name it.
extern const char* const k_block_input = "\x01block";

namespace {

class Parser {
public:
    Parser(std::vector<Token> tokens, const std::string& source, const std::string& context, int max_depth)
        : toks_(std::move(tokens)), lines_(source), context_(context), max_depth_(max_depth) {}

    Body parse_template() {
        std::string end;
        Body body = parse_body({}, end);
        return body;
    }

private:
    // ---- token helpers ----
    const Token& cur() const { return toks_[pos_]; }
    const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
    const Token& next() {
        const Token& t = toks_[pos_];
        if (pos_ + 1 < toks_.size()) ++pos_;
        return t;
    }
    bool is_op(const char* op) const { return cur().type == Tok::op && cur().text == op; }
    bool is_name(const char* n) const { return cur().type == Tok::name && cur().text == n; }
    bool skip_op(const char* op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char* n) {
        if (!is_name(n)) return false;
        next();
        return true;
    }

    [[noreturn]] void error_at(size_t offset, const std::string& msg) const {
        SourcePos p = lines_.at(offset);
        fail("{}:{}:{}: {}", context_, p.line, p.col, msg);
    }
    static std::string describe(const Token& t) {
        switch (t.type) {
            case Tok::eof: return "end of template";
            case Tok::text: return "template text";
            case Tok::var_end: return "'}}'";
            case Tok::block_end: return "'%}'";
            case Tok::var_begin: return "'{{'";
            case Tok::block_begin: return "'{%'";
            case Tok::string: return "string literal";
            default: return "'" + t.text + "'";
        }
    }
    [[noreturn]] void unexpected(const char* expected) const {
        error_at(cur().offset, fmt::format("unexpected {}, expected {}", describe(cur()), expected));
    }
    void expect_op(const char* op) {
        if (!skip_op(op)) unexpected(fmt::format("'{}'", op).c_str());
    }
    std::string expect_name() {
        if (cur().type != Tok::name) unexpected("a name");
        return next().text;
    }
    void expect_block_end() {
        if (cur().type != Tok::block_end) unexpected("'%}'");
        next();
    }

    // ---- statements ----

    // Parses until a block tag named in `ends` (consumed, its name stored in `end`) or eof
    // (allowed only when ends is empty).
    Body parse_body(std::initializer_list<const char*> ends, std::string& end) {
        Body body;
        for (;;) {
            const Token& t = cur();
            if (t.type == Tok::eof) {
                if (ends.size() == 0) return body;
                std::string want;
                for (const char* e : ends) want += (want.empty() ? "'" : " or '") + std::string(e) + "'";
                error_at(t.offset, fmt::format("unexpected end of template, expected {}", want));
            }
            if (t.type == Tok::text) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::text;
                s->offset = t.offset;
                s->text = t.text;
                body.push_back(std::move(s));
                next();
            } else if (t.type == Tok::var_begin) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::output;
                s->offset = t.offset;
                next();
                s->expr = parse_tuple(true);
                if (cur().type != Tok::var_end) unexpected("'}}'");
                next();
                body.push_back(std::move(s));
            } else if (t.type == Tok::block_begin) {
                const Token& kw = peek();
                if (kw.type != Tok::name) {
                    next();
                    unexpected("a tag name");
                }
                for (const char* e : ends)
                    if (kw.text == e) {
                        next();
                        next();
                        end = e;
                        return body;
                    }
                size_t offset = t.offset;
                next();
                body.push_back(parse_statement(offset));
            } else {
                unexpected("template text or a tag");
            }
        }
    }

    StmtPtr parse_statement(size_t offset) {
        const Token& kw = cur();
        if (++nesting_ > max_depth_)
            error_at(kw.offset, fmt::format("template exceeded the nesting limit: blocks nested deeper than {} levels",
                                            max_depth_));
        struct Unnest {
            int& n;
            ~Unnest() { --n; }
        } unnest{nesting_};
        std::string name = kw.text;
        auto s = std::make_unique<Stmt>();
        s->offset = offset;
        if (name == "if") return parse_if(std::move(s));
        if (name == "for") return parse_for(std::move(s));
        if (name == "set") return parse_set(std::move(s));
        if (name == "macro") return parse_macro(std::move(s));
        if (name == "call") return parse_call_block(std::move(s));
        if (name == "filter") return parse_filter_block(std::move(s));
        if (name == "break" || name == "continue") {
            if (loop_depth_ == 0) error_at(kw.offset, fmt::format("'{}' outside of a for loop", name));
            next();
            s->kind = name == "break" ? StmtKind::break_ : StmtKind::continue_;
            expect_block_end();
            return s;
        }
        if (name == "generation") {  // transformers' AssistantTracker: renders its body as is
            next();
            expect_block_end();
            s->kind = StmtKind::scope;
            std::string end;
            s->bodies.push_back(parse_body({"endgeneration"}, end));
            expect_block_end();
            return s;
        }
        static const char* const ends[] = {"endif", "endfor", "endset", "endmacro", "endcall", "endfilter",
                                           "endgeneration", "elif", "else", "endraw"};
        for (const char* e : ends)
            if (name == e) error_at(kw.offset, fmt::format("unexpected '{}' tag", name));
        error_at(kw.offset, fmt::format("unknown tag '{}'", name));
    }

    StmtPtr parse_if(StmtPtr s) {
        s->kind = StmtKind::if_;
        next();  // if
        for (;;) {
            s->conds.push_back(parse_expression(true));
            expect_block_end();
            std::string end;
            s->bodies.push_back(parse_body({"elif", "else", "endif"}, end));
            if (end == "elif") continue;
            if (end == "else") {
                expect_block_end();
                s->bodies.push_back(parse_body({"endif"}, end));
            }
            expect_block_end();
            return s;
        }
    }

    StmtPtr parse_for(StmtPtr s) {
        s->kind = StmtKind::for_;
        next();  // for
        bool paren = skip_op("(");
        do {
            s->targets.push_back(expect_name());
        } while (skip_op(","));
        if (paren) expect_op(")");
        if (!skip_name("in")) unexpected("'in'");
        s->expr = parse_tuple(false);
        if (skip_name("if")) s->cond = parse_expression(true);
        if (skip_name("recursive")) s->recursive = true;
        expect_block_end();
        ++loop_depth_;
        std::string end;
        s->bodies.push_back(parse_body({"else", "endfor"}, end));
        --loop_depth_;
        if (end == "else") {
            expect_block_end();
            s->bodies.push_back(parse_body({"endfor"}, end));
        }
        expect_block_end();
        return s;
    }

    StmtPtr parse_set(StmtPtr s) {
        next();  // set
        s->targets.push_back(expect_name());
        if (skip_op(".")) {
            s->attr = expect_name();
        } else {
            while (skip_op(",")) s->targets.push_back(expect_name());
        }
        if (skip_op("=")) {
            s->kind = StmtKind::set;
            s->expr = parse_tuple(true);
            expect_block_end();
            return s;
        }
        if (s->targets.size() != 1 || !s->attr.empty()) unexpected("'='");
        s->kind = StmtKind::set_block;
        s->expr = parse_filter_chain_on_block();
        expect_block_end();
        std::string end;
        s->bodies.push_back(parse_body({"endset"}, end));
        expect_block_end();
        return s;
    }

    // `| f(args) | g` applied to the rendered block (null when there is no filter).
    ExprPtr parse_filter_chain_on_block() {
        if (!is_op("|")) return nullptr;
        auto input = make_expr(ExprKind::name, cur().offset);
        input->name = k_block_input;
        return parse_filter_or_test(std::move(input));
    }

    std::vector<MacroParam> parse_params() {
        std::vector<MacroParam> params;
        expect_op("(");
        while (!is_op(")")) {
            if (!params.empty()) expect_op(",");
            if (is_op(")")) break;
            MacroParam p;
            p.name = expect_name();
            if (skip_op("=")) p.default_value = parse_expression(true);
            params.push_back(std::move(p));
        }
        expect_op(")");
        return params;
    }

    StmtPtr parse_macro(StmtPtr s) {
        s->kind = StmtKind::macro;
        next();  // macro
        s->name = expect_name();
        s->params = parse_params();
        expect_block_end();
        int saved = loop_depth_;
        loop_depth_ = 0;  // break/continue cannot cross a macro boundary
        std::string end;
        s->bodies.push_back(parse_body({"endmacro"}, end));
        loop_depth_ = saved;
        if (cur().type == Tok::name) next();  // {% endmacro name %}
        expect_block_end();
        return s;
    }

    StmtPtr parse_call_block(StmtPtr s) {
        s->kind = StmtKind::call_block;
        size_t at = cur().offset;
        next();  // call
        if (is_op("(")) s->params = parse_params();
        s->expr = parse_expression(true);
        if (s->expr->kind != ExprKind::call) error_at(at, "expected a macro call after 'call'");
        expect_block_end();
        int saved = loop_depth_;
        loop_depth_ = 0;
        std::string end;
        s->bodies.push_back(parse_body({"endcall"}, end));
        loop_depth_ = saved;
        expect_block_end();
        return s;
    }

    StmtPtr parse_filter_block(StmtPtr s) {
        s->kind = StmtKind::filter;
        next();  // filter
        auto input = make_expr(ExprKind::name, cur().offset);
        input->name = k_block_input;
        s->expr = parse_filter_body(std::move(input));
        while (skip_op("|")) s->expr = parse_filter_body(std::move(s->expr));
        expect_block_end();
        std::string end;
        s->bodies.push_back(parse_body({"endfilter"}, end));
        expect_block_end();
        return s;
    }

    // ---- expressions ----

    ExprPtr make_expr(ExprKind k, size_t offset) {
        auto e = std::make_unique<Expr>();
        e->kind = k;
        e->offset = offset;
        return e;
    }
    ExprPtr make_binary(ExprKind k, size_t offset, ExprPtr a, ExprPtr b, std::string op = {}) {
        auto e = make_expr(k, offset);
        e->name = std::move(op);
        add_arg(*e, std::move(a));
        add_arg(*e, std::move(b));
        return e;
    }
    // Every child is attached here, so that no tree taller than max_depth_ is ever built: a long
    // flat chain (`1 + 1 + ...`, `x|upper|upper...`, `a.b.c...`, `x[0][0]...`) is parsed by a
    // loop, not by recursion, but makes a left-deep tree that evaluation would walk recursively.
    void add_arg(Expr& e, ExprPtr child) {
        if (child) grow(e, *child);
        e.args.push_back(std::move(child));
    }
    void add_kwarg(Expr& e, std::string key, ExprPtr child) {
        grow(e, *child);
        e.kwargs.emplace_back(std::move(key), std::move(child));
    }
    void grow(Expr& e, const Expr& child) {
        e.height = std::max(e.height, child.height + 1);
        if (e.height > max_depth_)
            error_at(e.offset, fmt::format("template exceeded the nesting limit: expression nested deeper than {} "
                                           "levels (a chain of operators, filters, attributes or subscripts, or "
                                           "nested brackets)",
                                           max_depth_));
    }
    // Parser recursion (parentheses, unary operators, nested literals) is bounded the same way;
    // `((((x))))` makes no node per level, so the tree height alone would not bound it.
    void enter() {
        if (++depth_ > max_depth_)
            error_at(cur().offset,
                     fmt::format("template exceeded the nesting limit: expression nested deeper than {} levels",
                                 max_depth_));
    }

    // `a, b` without brackets is a tuple where Jinja allows it ({{ }}, set values, for iterables).
    ExprPtr parse_tuple(bool with_cond) {
        size_t at = cur().offset;
        ExprPtr first = parse_expression(with_cond);
        if (!is_op(",")) return first;
        auto t = make_expr(ExprKind::tuple, at);
        add_arg(*t, std::move(first));
        while (skip_op(",")) {
            if (cur().type == Tok::block_end || cur().type == Tok::var_end || is_name("if")) break;
            add_arg(*t, parse_expression(with_cond));
        }
        return t;
    }

    ExprPtr parse_expression(bool with_cond) {
        enter();
        ExprPtr e = with_cond ? parse_condexpr() : parse_or();
        --depth_;
        return e;
    }

    ExprPtr parse_condexpr() {
        size_t at = cur().offset;
        ExprPtr e = parse_or();
        while (skip_name("if")) {
            auto c = make_expr(ExprKind::cond, at);
            add_arg(*c, parse_or());
            add_arg(*c, std::move(e));
            if (skip_name("else")) {
                enter();
                add_arg(*c, parse_condexpr());
                --depth_;
            } else {
                add_arg(*c, nullptr);
            }
            e = std::move(c);
        }
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr e = parse_and();
        while (is_name("or")) {
            size_t at = next().offset;
            e = make_binary(ExprKind::or_, at, std::move(e), parse_and());
        }
        return e;
    }

    ExprPtr parse_and() {
        ExprPtr e = parse_not();
        while (is_name("and")) {
            size_t at = next().offset;
            e = make_binary(ExprKind::and_, at, std::move(e), parse_not());
        }
        return e;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            enter();
            auto e = make_expr(ExprKind::not_, next().offset);
            add_arg(*e, parse_not());
            --depth_;
            return e;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        size_t at = cur().offset;
        ExprPtr first = parse_math1();
        ExprPtr cmp;
        for (;;) {
            std::string op;
            if (cur().type == Tok::op &&
                (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
                 cur().text == ">" || cur().text == ">=")) {
                op = next().text;
            } else if (is_name("in")) {
                next();
                op = "in";
            } else if (is_name("not") && peek().type == Tok::name && peek().text == "in") {
                next();
                next();
                op = "not in";
            } else {
                break;
            }
            if (!cmp) {
                cmp = make_expr(ExprKind::compare, at);
                add_arg(*cmp, std::move(first));
            }
            cmp->ops.push_back(op);
            add_arg(*cmp, parse_math1());
        }
        return cmp ? std::move(cmp) : std::move(first);
    }

    ExprPtr parse_math1() {
        ExprPtr e = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Token& t = next();
            e = make_binary(ExprKind::binary, t.offset, std::move(e), parse_concat(), t.text);
        }
        return e;
    }

    ExprPtr parse_concat() {
        ExprPtr e = parse_math2();
        while (is_op("~")) {
            size_t at = next().offset;
            e = make_binary(ExprKind::binary, at, std::move(e), parse_math2(), "~");
        }
        return e;
    }

    ExprPtr parse_math2() {
        ExprPtr e = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token& t = next();
            e = make_binary(ExprKind::binary, t.offset, std::move(e), parse_pow(), t.text);
        }
        return e;
    }

    ExprPtr parse_pow() {
        ExprPtr e = parse_unary(true);
        while (is_op("**")) {
            size_t at = next().offset;
            e = make_binary(ExprKind::binary, at, std::move(e), parse_unary(true), "**");
        }
        return e;
    }

    ExprPtr parse_unary(bool with_filter) {
        enter();
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            const Token& t = next();
            e = make_expr(t.text == "-" ? ExprKind::neg : ExprKind::pos, t.offset);
            add_arg(*e, parse_unary(false));
        } else {
            e = parse_postfix(parse_primary());
        }
        if (with_filter) e = parse_filter_or_test(std::move(e));
        --depth_;
        return e;
    }

    ExprPtr parse_primary() {
        const Token& t = cur();
        size_t at = t.offset;
        switch (t.type) {
            case Tok::name: {
                next();
                auto e = make_expr(ExprKind::literal, at);
                if (t.text == "true" || t.text == "True") e->value = Value(true);
                else if (t.text == "false" || t.text == "False") e->value = Value(false);
                else if (t.text == "none" || t.text == "None") e->value = Value::none();
                else {
                    e->kind = ExprKind::name;
                    e->name = t.text;
                }
                return e;
            }
            case Tok::string: {
                std::string s;
                while (cur().type == Tok::string) s += next().text;  // adjacent literals concatenate
                auto e = make_expr(ExprKind::literal, at);
                e->value = Value(std::move(s));
                return e;
            }
            case Tok::integer: {
                auto e = make_expr(ExprKind::literal, at);
                e->value = Value(next().int_value);
                return e;
            }
            case Tok::floating: {
                auto e = make_expr(ExprKind::literal, at);
                e->value = Value(next().float_value);
                return e;
            }
            case Tok::op:
                if (t.text == "(") {
                    next();
                    if (skip_op(")")) return make_expr(ExprKind::tuple, at);
                    ExprPtr first = parse_expression(true);
                    if (skip_op(")")) return first;
                    auto tup = make_expr(ExprKind::tuple, at);
                    add_arg(*tup, std::move(first));
                    while (skip_op(",")) {
                        if (is_op(")")) break;
                        add_arg(*tup, parse_expression(true));
                    }
                    expect_op(")");
                    return tup;
                }
                if (t.text == "[") {
                    next();
                    auto list = make_expr(ExprKind::list, at);
                    while (!is_op("]")) {
                        if (!list->args.empty()) expect_op(",");
                        if (is_op("]")) break;
                        add_arg(*list, parse_expression(true));
                    }
                    expect_op("]");
                    return list;
                }
                if (t.text == "{") {
                    next();
                    auto dict = make_expr(ExprKind::dict, at);
                    while (!is_op("}")) {
                        if (!dict->args.empty()) expect_op(",");
                        if (is_op("}")) break;
                        add_arg(*dict, parse_expression(true));
                        expect_op(":");
                        add_arg(*dict, parse_expression(true));
                    }
                    expect_op("}");
                    return dict;
                }
                break;
            default: break;
        }
        unexpected("an expression");
    }

    ExprPtr parse_postfix(ExprPtr e) {
        for (;;) {
            if (is_op(".")) {
                size_t at = next().offset;
                if (cur().type == Tok::name) {
                    auto g = make_expr(ExprKind::getattr, at);
                    g->name = next().text;
                    add_arg(*g, std::move(e));
                    e = std::move(g);
                } else if (cur().type == Tok::integer) {  // foo.0 is foo[0]
                    auto g = make_expr(ExprKind::getitem, at);
                    auto idx = make_expr(ExprKind::literal, cur().offset);
                    idx->value = Value(next().int_value);
                    add_arg(*g, std::move(e));
                    add_arg(*g, std::move(idx));
                    e = std::move(g);
                } else {
                    unexpected("an attribute name");
                }
            } else if (is_op("[")) {
                e = parse_subscript(std::move(e));
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr e) {
        size_t at = next().offset;  // [
        ExprPtr parts[3];
        int n_colons = 0;
        bool any = false;
        while (!is_op("]")) {
            if (skip_op(":")) {
                if (++n_colons > 2) unexpected("']'");
                continue;
            }
            if (parts[n_colons]) unexpected("':' or ']'");
            parts[n_colons] = parse_expression(true);
            any = true;
        }
        next();  // ]
        if (n_colons == 0) {
            if (!any) error_at(at, "empty subscript");
            return make_binary(ExprKind::getitem, at, std::move(e), std::move(parts[0]));
        }
        auto s = make_expr(ExprKind::slice, at);
        add_arg(*s, std::move(e));
        for (auto& p : parts) add_arg(*s, std::move(p));
        return s;
    }

    // Parses `(args, kw=value)` into e's args (after those it has) and kwargs.
    void parse_call_args(Expr& e) {
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (is_op(")")) break;
            if (cur().type == Tok::name && peek().type == Tok::op && peek().text == "=") {
                std::string key = next().text;
                next();
                add_kwarg(e, std::move(key), parse_expression(true));
            } else {
                if (!e.kwargs.empty()) unexpected("a keyword argument (positional after keyword)");
                add_arg(e, parse_expression(true));
            }
        }
        expect_op(")");
    }

    ExprPtr parse_call(ExprPtr callee) {
        auto c = make_expr(ExprKind::call, callee->offset);
        add_arg(*c, std::move(callee));
        parse_call_args(*c);
        return c;
    }

    ExprPtr parse_filter_body(ExprPtr operand) {
        size_t at = cur().offset;
        std::string name = expect_name();
        while (is_op(".") && peek().type == Tok::name) {  // dotted filter names
            next();
            name += "." + next().text;
        }
        if (!has_filter(name)) error_at(at, fmt::format("no filter named '{}'", name));
        auto f = make_expr(ExprKind::filter, at);
        f->name = std::move(name);
        add_arg(*f, std::move(operand));
        if (is_op("(")) parse_call_args(*f);
        return f;
    }

    ExprPtr parse_filter_or_test(ExprPtr e) {
        for (;;) {
            if (skip_op("|")) {
                e = parse_filter_body(std::move(e));
            } else if (is_name("is")) {
                size_t at = next().offset;
                auto t = make_expr(ExprKind::test, at);
                t->negated = skip_name("not");
                size_t name_at = cur().offset;
                t->name = expect_name();
                if (!has_test(t->name)) error_at(name_at, fmt::format("no test named '{}'", t->name));
                add_arg(*t, std::move(e));
                if (is_op("(")) {
                    parse_call_args(*t);
                } else if ((cur().type == Tok::name && cur().text != "else" && cur().text != "or" &&
                            cur().text != "and" && cur().text != "if" && cur().text != "is" &&
                            cur().text != "in" && cur().text != "not" && cur().text != "recursive") ||
                           cur().type == Tok::string || cur().type == Tok::integer ||
                           cur().type == Tok::floating || is_op("[") || is_op("{")) {
                    // `x is divisibleby 3`, `x is sameas none`: one bare argument
                    add_arg(*t, parse_postfix(parse_primary()));
                }
                e = std::move(t);
            } else if (is_op("(")) {
                e = parse_call(std::move(e));
            } else {
                return e;
            }
        }
    }

    std::vector<Token> toks_;
    size_t pos_ = 0;
    LineTable lines_;
    const std::string& context_;
    int loop_depth_ = 0;
    int max_depth_;
    int depth_ = 0;    // expression recursion, bounded so hostile templates cannot overflow the stack
    int nesting_ = 0;  // block recursion, likewise
};

}  // namespace

Body parse(const std::string& normalized_source, const std::string& context, int max_depth) {
    return Parser(tokenize(normalized_source, context), normalized_source, context, max_depth).parse_template();
}

}  // namespace tt::jinja
