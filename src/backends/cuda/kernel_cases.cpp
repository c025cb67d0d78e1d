// The kernel-check table (see kernel_cases.h). Each family is one function from its shape to the
// measured outputs; the table at the bottom lists every (op, shape, dtype, tolerance) once. Each
// case rounds its inputs to the case's dtype (kernel_check.h's store) so that CPU and GPU read
// identical values; then both accumulate in f32 and only the summation order differs, and an
// output stored in bf16/f16 carries its own rounding (2^-9 / 2^-11 relative) on top.
//
// Two kinds of rows: the doctor's quick cases (small shapes, f32 and bf16, answering "does this
// GPU + driver + build run every kernel right" in a fraction of a second) and the sweep over many
// shapes, odd ones included, and f16 (run by tests/gpu on the GPU machine).
#include "backends/cuda/kernel_cases.h"

#include "backends/cpu/delta_net.h"
#include "backends/cpu/moe.h"
#include "backends/cpu/ops.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_check.h"
#include "backends/cuda/kernels/kernels.h"
#include "core/error.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "runtime/device_buffers.h"
#include "runtime/kv_cache_type.h"
#include "runtime/rope.h"

#include <cublas_v2.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <tuple>
#include <utility>

namespace tt::cuda {

namespace {

using Floats = std::vector<float>;

Floats randn(std::mt19937& g, size_t n, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    Floats v(n);
    for (auto& x : v) x = d(g);
    return v;
}

TensorView view(const std::vector<uint8_t>& bytes, DType dt, Shape shape) {
    return TensorView{"kernel_case", dt, std::move(shape), bytes.data(), bytes.size()};
}

const char* act_name(GateAct a) { return a == GateAct::silu ? "silu" : "gelu_tanh"; }
float act_ref(GateAct a, float g) { return a == GateAct::silu ? cpu::silu(g) : cpu::gelu_tanh(g); }

// ---- the families ----

struct GemvShape {
    int rows, cols;
    bool prenorm, accumulate, bias;
    int n_seg;  // segments sharing the input (q, k, v); segment s has rows / (s + 1) rows
};

// What every segmented GEMV case starts from: x and its pre-norm weight on the device, x as the
// CPU reference reads it (normalized on the host when the norm is fused), and the GemvArgs they
// fill in.
struct GemvInput {
    Floats xn;
    std::unique_ptr<Dev> dx, dnw;
    GemvArgs a{};
};

GemvInput gemv_input(CaseEnv& e, DType dt, int cols, bool prenorm, bool accumulate, int n_seg) {
    GemvInput in;
    auto x = randn(e.rng, size_t(cols)), nw = randn(e.rng, size_t(cols), 0.5f);
    auto nwb = store(nw, dt);
    in.xn.resize(size_t(cols));
    if (prenorm) cpu::rmsnorm_f32(x.data(), nw.data(), 1.0f, 1e-6f, in.xn.data(), cols);
    else in.xn = x;
    in.dx = std::make_unique<Dev>(x);
    in.dnw = std::make_unique<Dev>(nwb);
    in.a.n_seg = n_seg;
    in.a.cols = cols;
    in.a.wdt = dt;
    in.a.x = in.dx->as<float>();
    in.a.norm_w = prenorm ? in.dnw->p : nullptr;
    in.a.norm_offset = 1.0f;
    in.a.norm_eps = 1e-6f;
    in.a.accumulate = accumulate;
    return in;
}

std::vector<Measured> gemv_case(CaseEnv& e, DType dt, const GemvShape& c, double tol) {
    GemvInput in = gemv_input(e, dt, c.cols, c.prenorm, c.accumulate, c.n_seg);
    GemvArgs& a = in.a;
    const Floats& xn = in.xn;
    std::vector<Floats> ref(3);
    std::vector<std::unique_ptr<Dev>> keep, dy(3);
    for (int s = 0; s < c.n_seg; ++s) {
        const int seg_rows = c.rows / (s + 1);
        auto w = randn(e.rng, size_t(seg_rows) * c.cols, 0.05f), b = randn(e.rng, size_t(seg_rows));
        auto y0 = randn(e.rng, size_t(seg_rows));
        auto wb = store(w, dt), bb = store(b, dt);
        ref[size_t(s)].resize(size_t(seg_rows));
        const TensorView wv = view(wb, dt, {seg_rows, c.cols}), bv = view(bb, dt, {seg_rows});
        cpu::linear(e.pool, xn.data(), 1, wv, c.bias ? &bv : nullptr, ref[size_t(s)].data());
        if (c.accumulate)
            for (int i = 0; i < seg_rows; ++i) ref[size_t(s)][size_t(i)] += y0[size_t(i)];
        keep.push_back(std::make_unique<Dev>(wb));
        const void* wp = keep.back()->p;
        keep.push_back(std::make_unique<Dev>(bb));
        const void* bp = keep.back()->p;
        dy[size_t(s)] = std::make_unique<Dev>(y0);
        a.seg[s] = {wp, c.bias ? bp : nullptr, dy[size_t(s)]->as<float>(), seg_rows};
    }
    gemv(a, nullptr);
    std::vector<Measured> out;
    for (int s = 0; s < c.n_seg; ++s)
        out.push_back({fmt::format("segment {}", s), rel_err(dy[size_t(s)]->get(ref[size_t(s)].size()), ref[size_t(s)]), tol});
    return out;
}

// The decode GEMV's fused epilogues of Gemma: the post-norm (y normalized by the last block and
// added to a residual, then the layer scalar) and Gemma 4's gated per-layer input (y = act(W x) * m).
struct GemvFusedShape {
    int rows, cols;
    bool post, scale;  // post-norm into a residual (and the row scale); else the gated output
    int reps;          // launches on the same counter: it must reset itself (graph replay)
};

std::vector<Measured> gemv_fused_case(CaseEnv& e, DType dt, const GemvFusedShape& c, double tol) {
    auto x = randn(e.rng, size_t(c.cols)), w = randn(e.rng, size_t(c.rows) * c.cols, 0.05f);
    auto pw = randn(e.rng, size_t(c.rows), 0.5f), mul = randn(e.rng, size_t(c.rows)), res = randn(e.rng, size_t(c.rows));
    Floats sc = {0.6f};
    auto wb = store(w, dt), pwb = store(pw, dt), scb = store(sc, dt);
    const TensorView wv = view(wb, dt, {c.rows, c.cols});
    Floats y(static_cast<size_t>(c.rows)), ref = res, tmp(static_cast<size_t>(c.rows));
    cpu::linear(e.pool, x.data(), 1, wv, nullptr, y.data());
    Dev dx(x), dw(wb), dpw(pwb), dmul(mul), dres(res), dsc(scb), dy(size_t(c.rows) * 4), count(std::vector<int>{0});
    GemvArgs a{};
    a.seg[0] = {dw.p, nullptr, dy.as<float>(), c.rows};
    a.n_seg = 1;
    a.cols = c.cols;
    a.wdt = dt;
    a.x = dx.as<float>();
    a.norm_offset = 1.0f;
    a.norm_eps = 1e-6f;
    if (c.post) {
        a.post_norm = dpw.p;
        a.residual = dres.as<float>();
        a.row_scale = c.scale ? dsc.p : nullptr;
        a.post_arrivals = count.as<int>();
    } else {
        a.y_mul = dmul.as<float>();
        a.y_act = GateAct::gelu_tanh;
    }
    std::vector<Measured> out;
    for (int rep = 0; rep < c.reps; ++rep) {
        if (c.post) {  // each launch adds once more to the residual
            cpu::rmsnorm_f32(y.data(), pw.data(), 1.0f, 1e-6f, tmp.data(), c.rows);
            for (int i = 0; i < c.rows; ++i) ref[size_t(i)] = (ref[size_t(i)] + tmp[size_t(i)]) * (c.scale ? sc[0] : 1.0f);
        } else {
            for (int i = 0; i < c.rows; ++i) ref[size_t(i)] = cpu::gelu_tanh(y[size_t(i)]) * mul[size_t(i)];
        }
        gemv(a, nullptr);
        out.push_back({fmt::format("launch {}: {}", rep + 1, c.post ? "residual" : "gated output"),
                       rel_err((c.post ? dres : dy).get(ref.size()), ref), tol});
    }
    return out;
}

// The pending residual as a decode GEMV's input (GemvArgs::pending): the previous projection's
// output y, post-normed, joins the residual (then the layer scalar), formed by every block and
// stored by block 0; then the pre-norm when there is one, and Gemma 4's gated per-layer output
// (act(W x) * m) when asked.
struct GemvPendingShape {
    int rows, cols;
    bool scale, prenorm, mul;
};

std::vector<Measured> gemv_pending_case(CaseEnv& e, DType dt, const GemvPendingShape& c, double tol) {
    const size_t nr = size_t(c.rows), nc = size_t(c.cols);
    auto x = randn(e.rng, nc), y = randn(e.rng, nc, 3.0f), pw = randn(e.rng, nc, 0.5f), nw = randn(e.rng, nc, 0.5f);
    auto w = randn(e.rng, nr * nc, 0.05f), mul = randn(e.rng, nr);
    Floats sc = {0.6f};
    auto wb = store(w, dt), pwb = store(pw, dt), nwb = store(nw, dt), scb = store(sc, dt);
    // the reference: h = (x + rmsnorm(y) * pw) * scale, xn = rmsnorm(h) * (1 + nw), out = W xn
    Floats h(nc), yn(nc), xn(nc), out(nr);
    cpu::rmsnorm_f32(y.data(), pw.data(), 0.0f, 1e-5f, yn.data(), c.cols);
    for (size_t i = 0; i < nc; ++i) h[i] = (x[i] + yn[i]) * (c.scale ? sc[0] : 1.0f);
    if (c.prenorm) cpu::rmsnorm_f32(h.data(), nw.data(), 1.0f, 1e-6f, xn.data(), c.cols);
    else xn = h;
    cpu::linear(e.pool, xn.data(), 1, view(wb, dt, {c.rows, c.cols}), nullptr, out.data());
    if (c.mul)
        for (size_t i = 0; i < nr; ++i) out[i] = cpu::gelu_tanh(out[i]) * mul[i];
    Dev dx(x), dy_in(y), dw(wb), dpw(pwb), dnw(nwb), dmul(mul), dsc(scb), dy(nr * 4), dh(nc * 4);
    GemvArgs a{};
    a.seg[0] = {dw.p, nullptr, dy.as<float>(), c.rows};
    a.n_seg = 1;
    a.cols = c.cols;
    a.wdt = dt;
    a.norm_w = c.prenorm ? dnw.p : nullptr;
    a.norm_offset = 1.0f;
    a.norm_eps = 1e-6f;
    // The post-norm's own offset and eps, unlike the pre-norm's: the per-layer gate has no pre-norm.
    a.pending = {dy_in.as<float>(), dx.as<float>(), dpw.p, c.scale ? dsc.p : nullptr, dh.as<float>(), 0.0f, 1e-5f};
    if (c.mul) {
        a.y_mul = dmul.as<float>();
        a.y_act = GateAct::gelu_tanh;
    }
    gemv(a, nullptr);
    return {{"output", rel_err(dy.get(nr), out), tol}, {"residual stored", rel_err(dh.get(nc), h), 1e-6}};
}

std::vector<Measured> gemv_gated_case(CaseEnv& e, DType dt, int rows, int cols, double tol) {
    std::vector<Measured> out;
    for (GateAct act : {GateAct::silu, GateAct::gelu_tanh}) {
        auto x = randn(e.rng, size_t(cols)), nw = randn(e.rng, size_t(cols), 0.3f);
        auto wg = randn(e.rng, size_t(rows) * cols, 0.05f), wu = randn(e.rng, size_t(rows) * cols, 0.05f);
        auto bg = randn(e.rng, size_t(rows)), bu = randn(e.rng, size_t(rows));
        auto nwb = store(nw, dt), wgb = store(wg, dt), wub = store(wu, dt), bgb = store(bg, dt), bub = store(bu, dt);
        const size_t nr = static_cast<size_t>(rows);
        Floats xn(static_cast<size_t>(cols)), g(nr), u(nr), ref(nr);
        cpu::rmsnorm_f32(x.data(), nw.data(), 0.0f, 1e-5f, xn.data(), cols);
        const auto gv = view(wgb, dt, {rows, cols}), uv = view(wub, dt, {rows, cols});
        const auto bgv = view(bgb, dt, {rows}), buv = view(bub, dt, {rows});
        cpu::linear(e.pool, xn.data(), 1, gv, &bgv, g.data());
        cpu::linear(e.pool, xn.data(), 1, uv, &buv, u.data());
        for (size_t i = 0; i < ref.size(); ++i) ref[i] = act_ref(act, g[i]) * u[i];
        Dev dx(x), dnw(nwb), dwg(wgb), dwu(wub), dbg(bgb), dbu(bub), dy(nr * 4);
        gemv_gated(dwg.p, dwu.p, dbg.p, dbu.p, dt, rows, cols, dx.as<float>(), dnw.p, 0.0f, 1e-5f, act, dy.as<float>(),
                   nullptr);
        out.push_back({act_name(act), rel_err(dy.get(ref.size()), ref), tol});
    }
    return out;
}

// ---- quantized weights (quant.cu): the GEMVs against cpu::linear on the same quantized views
// (read_row dequantizes as core/quant.h defines), the dequantization bit for bit.

struct QuantShape {
    QuantScheme q;
    int group;  // int4
    int rows, cols;
    bool prenorm, accumulate, bias;
    int n_seg;
};

struct QuantMatrix {
    QuantizedMatrix m;
    TensorView view;
};

// A random [rows, cols] matrix quantized on the host, its view as cpu::linear reads it.
std::unique_ptr<QuantMatrix> random_quant(std::mt19937& g, QuantScheme q, int group, int rows, int cols, ThreadPool& pool) {
    auto w = randn(g, size_t(rows) * cols, 0.05f);
    auto out = std::make_unique<QuantMatrix>();
    out->m = quantize_matrix(pool, w.data(), DType::f32, rows, cols, q, group, "kernel_case");
    out->view = TensorView{"kernel_case", q == QuantScheme::int8 ? DType::i8 : DType::u8, Shape{rows, cols}, out->m.q.data(),
                           out->m.q.size()};
    out->view.quant = q;
    out->view.group_size = q == QuantScheme::int4 ? group : 0;
    out->view.scales = out->m.scales.data();
    return out;
}

// The quantized GEMVs' bound against the CPU reference. The tensor-core GEMV holds x to 15 signed
// bits of each group of 32 columns' largest element (quant.cu: two digits), an error of at most
// 2^-14 of that element per column, which the cases' random x puts at up to 1.7e-4 of the output
// (INT4, H100, 2026-12-06): 5e-4. (Prefill's bf16 activations round each element by up to 2^-8.)
// The scalar INT8 GEMV, which takes rows that are not whole 16-byte pieces, forms its products
// exactly: only the f32 sums' order differs from the CPU's, 2e-5.
constexpr double k_quant_mma_tol = 5e-4, k_quant_exact_tol = 2e-5;
double quant_tol(QuantScheme q, int cols) { return q == QuantScheme::int8 && cols % 16 != 0 ? k_quant_exact_tol : k_quant_mma_tol; }

std::vector<Measured> gemv_quant_case(CaseEnv& e, DType dt, const QuantShape& c, double tol) {
    GemvInput in = gemv_input(e, dt, c.cols, c.prenorm, c.accumulate, c.n_seg);
    GemvArgs& a = in.a;
    const Floats& xn = in.xn;
    a.quant = c.q;
    a.group_size = c.group;
    std::vector<Floats> ref(3);
    std::vector<std::unique_ptr<Dev>> keep, dy(3);
    std::vector<std::unique_ptr<QuantMatrix>> mats;
    for (int s = 0; s < c.n_seg; ++s) {
        const int seg_rows = c.rows / (s + 1);
        mats.push_back(random_quant(e.rng, c.q, c.group, seg_rows, c.cols, e.pool));
        auto b = randn(e.rng, size_t(seg_rows)), y0 = randn(e.rng, size_t(seg_rows));
        auto bb = store(b, dt);
        const TensorView bv = view(bb, dt, {seg_rows});
        ref[size_t(s)].resize(size_t(seg_rows));
        cpu::linear(e.pool, xn.data(), 1, mats.back()->view, c.bias ? &bv : nullptr, ref[size_t(s)].data());
        if (c.accumulate)
            for (int i = 0; i < seg_rows; ++i) ref[size_t(s)][size_t(i)] += y0[size_t(i)];
        keep.push_back(std::make_unique<Dev>(mats.back()->m.q));
        const void* wp = keep.back()->p;
        keep.push_back(std::make_unique<Dev>(mats.back()->m.scales));
        const float* sp = keep.back()->as<float>();
        keep.push_back(std::make_unique<Dev>(bb));
        const void* bp = keep.back()->p;
        dy[size_t(s)] = std::make_unique<Dev>(y0);
        a.seg[s] = {wp, c.bias ? bp : nullptr, dy[size_t(s)]->as<float>(), seg_rows, sp};
    }
    gemv(a, nullptr);
    std::vector<Measured> out;
    for (int s = 0; s < c.n_seg; ++s)
        out.push_back({fmt::format("segment {}", s), rel_err(dy[size_t(s)]->get(ref[size_t(s)].size()), ref[size_t(s)]), tol});
    return out;
}

std::vector<Measured> gemv_gated_quant_case(CaseEnv& e, DType dt, QuantScheme q, int group, int rows, int cols, double tol) {
    std::vector<Measured> out;
    for (GateAct act : {GateAct::silu, GateAct::gelu_tanh}) {
        auto x = randn(e.rng, size_t(cols)), nw = randn(e.rng, size_t(cols), 0.3f);
        auto wg = random_quant(e.rng, q, group, rows, cols, e.pool), wu = random_quant(e.rng, q, group, rows, cols, e.pool);
        auto bg = randn(e.rng, size_t(rows)), bu = randn(e.rng, size_t(rows));
        auto nwb = store(nw, dt), bgb = store(bg, dt), bub = store(bu, dt);
        const size_t nr = static_cast<size_t>(rows);
        Floats xn(static_cast<size_t>(cols)), gv(nr), uv(nr), ref(nr);
        cpu::rmsnorm_f32(x.data(), nw.data(), 0.0f, 1e-5f, xn.data(), cols);
        const auto bgv = view(bgb, dt, {rows}), buv = view(bub, dt, {rows});
        cpu::linear(e.pool, xn.data(), 1, wg->view, &bgv, gv.data());
        cpu::linear(e.pool, xn.data(), 1, wu->view, &buv, uv.data());
        for (size_t i = 0; i < ref.size(); ++i) ref[i] = act_ref(act, gv[i]) * uv[i];
        Dev dx(x), dnw(nwb), dwg(wg->m.q), dwu(wu->m.q), dsg(wg->m.scales), dsu(wu->m.scales), dbg(bgb), dbu(bub), dy(nr * 4);
        gemv_gated(dwg.p, dwu.p, dbg.p, dbu.p, dt, rows, cols, dx.as<float>(), dnw.p, 0.0f, 1e-5f, act, dy.as<float>(), nullptr,
                   q, dsg.as<float>(), dsu.as<float>(), group);
        out.push_back({act_name(act), rel_err(dy.get(ref.size()), ref), tol});
    }
    return out;
}

// Exact: both sides compute float(q) * scale in f32 and round it to the output dtype to nearest even.
std::vector<Measured> dequantize_case(CaseEnv& e, DType dt, QuantScheme q, int group, int rows, int cols) {
    auto m = random_quant(e.rng, q, group, rows, cols, e.pool);
    Floats ref(size_t(rows) * cols);
    for (int r = 0; r < rows; ++r) cpu::read_row(m->view, r, ref.data() + size_t(r) * cols);
    store(ref, dt);
    Dev dq(m->m.q), ds(m->m.scales), dout(ref.size() * dtype_size(dt));
    dequantize(dq.p, ds.as<float>(), q, group, rows, cols, dout.p, dt, nullptr);
    return {{"values", rel_err(dout.get(ref.size(), dt), ref), 0.0}};
}

struct NormShape {
    int n, hidden;
    bool post;     // Gemma-style: the added branch is RMS-normalized first
    DType out_dt;  // the normalized output's dtype (f32, or the case's dtype)
    bool scale = false;  // Gemma 4's layer_scalar: x *= s after the add, before the norm
};

std::vector<Measured> residual_rmsnorm_case(CaseEnv& e, DType dt, const NormShape& c, double x_tol, double out_tol) {
    const int n = c.n, hidden = c.hidden;
    auto x = randn(e.rng, size_t(n) * hidden), add = randn(e.rng, size_t(n) * hidden);
    auto w = randn(e.rng, size_t(hidden), 0.3f), pw = randn(e.rng, size_t(hidden), 0.3f);
    auto wb = store(w, dt), pwb = store(pw, dt);
    Floats sc = {0.37f};
    auto scb = store(sc, dt);
    Floats ref_x = x, ref_out(static_cast<size_t>(n) * hidden), tmp(static_cast<size_t>(hidden));
    for (int t = 0; t < n; ++t) {
        float* xr = &ref_x[size_t(t) * hidden];
        const float* ar = &add[size_t(t) * hidden];
        if (c.post) cpu::rmsnorm_f32(ar, pw.data(), 1.0f, 1e-6f, tmp.data(), hidden);
        else std::copy_n(ar, hidden, tmp.data());
        for (int i = 0; i < hidden; ++i) xr[i] += tmp[size_t(i)];
        if (c.scale)
            for (int i = 0; i < hidden; ++i) xr[i] *= sc[0];
        cpu::rmsnorm_f32(xr, w.data(), 1.0f, 1e-6f, &ref_out[size_t(t) * hidden], hidden);
    }
    Dev dx(x), dadd(add), dw(wb), dpw(pwb), dsc(scb), dout(ref_out.size() * dtype_size(c.out_dt));
    residual_rmsnorm(dx.as<float>(), dadd.as<float>(), c.post ? dpw.p : nullptr, dw.p, dt, 1.0f, 1e-6f, n, hidden, dout.p,
                     c.out_dt, nullptr, c.scale ? dsc.p : nullptr);
    return {{"residual", rel_err(dx.get(ref_x.size()), ref_x), x_tol},
            {"normalized", rel_err(dout.get(ref_out.size(), c.out_dt), ref_out), out_tol}};
}

// The 8-bit KV cache (runtime/kv_cache_type.h) of x ([rows, n_heads * hd]): its INT8 bytes, and its
// row scales in *scales; x becomes the values the CPU reads back (round_kv_row_int8's).
std::vector<uint8_t> store_kv_int8(Floats& x, int hd, Floats& scales) {
    const size_t n_rows = x.size() / size_t(hd);
    std::vector<uint8_t> q(x.size());
    scales.assign(n_rows, 0.0f);
    for (size_t r = 0; r < n_rows; ++r) {
        quantize_row(QuantScheme::int8, 0, &x[r * hd], hd, &q[r * hd], &scales[r]);
        dequantize_row(QuantScheme::int8, 0, &q[r * hd], &scales[r], hd, &x[r * hd]);
    }
    return q;
}

// Rows [row0, row0 + n) of a device 8-bit cache (values q, scales s; kv_dim = n_kv * hd), dequantized.
Floats load_kv_int8(Dev& q, Dev& s, int row0, int n, int n_kv, int hd) {
    const size_t kv = size_t(n_kv) * hd, total = size_t(row0 + n);
    const auto b = q.get<uint8_t>(total * kv);
    const auto sc = s.get<float>(total * n_kv);
    Floats x(size_t(n) * kv);
    for (size_t r = 0; r < size_t(n) * n_kv; ++r)
        dequantize_row(QuantScheme::int8, 0, &b[size_t(row0) * kv + r * hd], &sc[size_t(row0) * n_kv + r], hd, &x[r * hd]);
    return x;
}

struct RopeShape {
    int n_heads, n_kv, hd, rotary, n, pos0;
    bool norm, bias;
    RopeScaling scaling;
    bool caches_in_dt;  // caches and q_out in the case's dtype (else f32)
    // Gemma 4: the unweighted v-norm; a KV-shared layer (k null: q only, the caches untouched);
    // attention_k_eq_v (v is the raw k); proportional RoPE rotates the first rotated_pairs pairs.
    bool v_norm = false, shared = false, k_eq_v = false;
    int rotated_pairs = 0;
    bool q8 = false;  // the 8-bit KV cache (q_out in the case's dtype)
};
struct RopeTols {
    double q, q_out, k, v;
};

std::vector<Measured> rope_case(CaseEnv& e, DType dt, const RopeShape& c, const RopeTols& tol) {
    RopeSpec rs;
    rs.theta = 500000;
    rs.rotary_dim = c.rotary;
    rs.scaling = c.scaling;
    rs.factor = 8;
    rs.original_max_position = 8192;
    rs.attention_factor = c.scaling == RopeScaling::yarn ? 1.2f : 1.0f;
    if (c.scaling == RopeScaling::proportional) rs.factor = 1;
    rs.rotated_pairs = c.rotated_pairs;
    const RopeTable table = make_rope_table(rs);
    const int Q = c.n_heads * c.hd, KV = c.n_kv * c.hd, n_ctx = c.pos0 + c.n;
    auto q = randn(e.rng, size_t(c.n) * Q), k = randn(e.rng, size_t(c.n) * KV), v = randn(e.rng, size_t(c.n) * KV);
    auto bq = randn(e.rng, size_t(Q)), bk = randn(e.rng, size_t(KV)), bv = randn(e.rng, size_t(KV));
    auto qn = randn(e.rng, size_t(c.hd), 0.3f), kn = randn(e.rng, size_t(c.hd), 0.3f);
    auto bqb = store(bq, dt), bkb = store(bk, dt), bvb = store(bv, dt), qnb = store(qn, dt), knb = store(kn, dt);
    Floats rq = q, rk = k, rv = c.k_eq_v ? k : v;
    for (int t = 0; t < c.n; ++t) {
        for (int h = 0; h < c.n_heads + c.n_kv; ++h) {
            const bool isq = h < c.n_heads;
            const int head = isq ? h : h - c.n_heads;
            float* p = isq ? &rq[size_t(t) * Q + size_t(head) * c.hd] : &rk[size_t(t) * KV + size_t(head) * c.hd];
            const Floats& bias = isq ? bq : bk;
            if (c.bias)
                for (int d = 0; d < c.hd; ++d) p[d] += bias[size_t(head * c.hd + d)];
            if (c.norm) cpu::rmsnorm_f32(p, (isq ? qn : kn).data(), 0.0f, 1e-6f, p, c.hd);
            apply_rope(p, c.pos0 + t, table);
        }
        if (c.bias)
            for (int i = 0; i < KV; ++i) rv[size_t(t) * KV + size_t(i)] += bv[size_t(i)];
        if (c.v_norm)
            for (int h = 0; h < c.n_kv; ++h) {
                float* vh = &rv[size_t(t) * KV + size_t(h) * c.hd];
                cpu::rmsnorm_unweighted(vh, 1e-6f, vh, c.hd);
            }
    }
    const DType cdt = c.q8 ? DType::i8 : c.caches_in_dt ? dt : DType::f32, qdt = c.q8 ? dt : cdt;
    const size_t es = dtype_size(cdt);
    if (c.q8) {  // the rows as the CPU's 8-bit cache holds them
        round_kv_row_int8(rk.data(), c.n * c.n_kv, c.hd);
        round_kv_row_int8(rv.data(), c.n * c.n_kv, c.hd);
    }
    Dev dq(q), dk(k), dv(v), dbq(bqb), dbk(bkb), dbv(bvb), dqn(qnb), dkn(knb), dinv(table.inv_freq);
    Dev kc(size_t(n_ctx) * KV * es), vc(size_t(n_ctx) * KV * es), qo(size_t(c.n) * Q * dtype_size(qdt));
    Dev ks(size_t(n_ctx) * c.n_kv * 4), vs(size_t(n_ctx) * c.n_kv * 4);
    Dev dpos(std::vector<int>{c.pos0});
    RopeArgs a{};
    a.q = dq.as<float>();
    a.k = c.shared ? nullptr : dk.as<float>();
    a.v = c.k_eq_v ? dk.as<float>() : dv.as<float>();
    a.v_norm = c.v_norm;
    a.q_stride = Q;
    a.k_stride = KV;
    a.v_stride = KV;
    a.bq = c.bias ? dbq.p : nullptr;
    a.bk = c.bias ? dbk.p : nullptr;
    a.bv = c.bias ? dbv.p : nullptr;
    a.q_norm = c.norm ? dqn.p : nullptr;
    a.k_norm = c.norm ? dkn.p : nullptr;
    a.wdt = dt;
    a.norm_offset = 0;
    a.norm_eps = 1e-6f;
    a.inv_freq = dinv.as<float>();
    a.attention_factor = table.attention_factor;
    a.rotary_dim = c.rotary;
    a.n_heads = c.n_heads;
    a.n_kv_heads = c.n_kv;
    a.head_dim = c.hd;
    a.n = c.n;
    a.d_pos0 = dpos.as<int>();
    a.k_cache = kc.p;
    a.v_cache = vc.p;
    a.kv_dt = cdt;
    a.k_scale = c.q8 ? ks.as<float>() : nullptr;
    a.v_scale = c.q8 ? vs.as<float>() : nullptr;
    a.q_out = qo.p;
    a.q_out_dt = qdt;
    rope_qkv(a, nullptr);
    if (c.shared) {
        // A KV-shared layer leaves both caches as they were (poisoned: every byte 0xff).
        const auto kb = kc.get<uint8_t>(size_t(n_ctx) * KV * es), vb = vc.get<uint8_t>(size_t(n_ctx) * KV * es);
        const auto untouched = [](const std::vector<uint8_t>& b) { return std::all_of(b.begin(), b.end(), [](uint8_t x) { return x == 0xff; }); };
        return {{"q in place", rel_err(dq.get(rq.size()), rq), tol.q},
                {"q out", rel_err(qo.get(rq.size(), qdt), rq), tol.q_out},
                {"caches untouched", untouched(kb) && untouched(vb) ? 0.0 : 1.0, 0.0}};
    }
    // Only the rows at positions pos0.. were written; the poisoned rows before them are not compared.
    Floats kgot, vgot;
    if (c.q8) {
        kgot = load_kv_int8(kc, ks, c.pos0, c.n, c.n_kv, c.hd);
        vgot = load_kv_int8(vc, vs, c.pos0, c.n, c.n_kv, c.hd);
    } else {
        const Floats kcache = kc.get(size_t(n_ctx) * KV, cdt), vcache = vc.get(size_t(n_ctx) * KV, cdt);
        kgot.assign(kcache.begin() + ptrdiff_t(size_t(c.pos0) * KV), kcache.end());
        vgot.assign(vcache.begin() + ptrdiff_t(size_t(c.pos0) * KV), vcache.end());
    }
    return {{"q in place", rel_err(dq.get(rq.size()), rq), tol.q},
            {"q out", rel_err(qo.get(rq.size(), qdt), rq), tol.q_out},
            {"k cache", rel_err(kgot, rk), tol.k},
            {"v cache", rel_err(vgot, rv), tol.v}};
}

struct DecodeShape {
    int n_heads, n_kv, hd, len, window;
    float softcap;
    int reps;  // launches on the same buffers: the arrival counters must reset themselves (graph replay)
};

std::vector<Measured> decode_attention_case(CaseEnv& e, DType kv_dt, const DecodeShape& c, bool cuda_cores_only, double tol) {
    const int KV = c.n_kv * c.hd, group = c.n_heads / c.n_kv, n_ctx = c.len + 5;
    auto q = randn(e.rng, size_t(c.n_heads) * c.hd), k = randn(e.rng, size_t(n_ctx) * KV), v = randn(e.rng, size_t(n_ctx) * KV);
    const bool q8 = kv_dt == DType::i8;  // the 8-bit cache: INT8 rows and their scales
    Floats ksc, vsc;
    auto kb = q8 ? store_kv_int8(k, c.hd, ksc) : store(k, kv_dt), vb = q8 ? store_kv_int8(v, c.hd, vsc) : store(v, kv_dt);
    const float scale = 1.0f / std::sqrt(float(c.hd));
    Floats ref(static_cast<size_t>(c.n_heads) * c.hd), scores(static_cast<size_t>(c.len));
    const int pos = c.len - 1, first = c.window > 0 ? std::max(0, pos - c.window + 1) : 0;
    for (int h = 0; h < c.n_heads; ++h)
        cpu::attend_head(&q[size_t(h) * c.hd], k.data(), v.data(), KV, (h / group) * c.hd, c.hd, first, pos, scale, c.softcap,
                         scores.data(), &ref[size_t(h) * c.hd]);
    const int splits = decode_attention_splits(c.n_kv, e.n_sms);
    Dev dq(q), dk(kb), dv(vb), dout(ref.size() * 4), dks(ksc), dvs(vsc);
    Dev part(decode_attention_partial_floats(c.n_heads, c.hd, splits) * 4);
    Dev dpos(std::vector<int>{pos});
    Dev arrivals(std::vector<int>(size_t(c.n_kv), 0));
    DecodeAttnArgs a{};
    a.q = dq.as<float>();
    a.k_cache = dk.p;
    a.v_cache = dv.p;
    a.kv_dt = kv_dt;
    a.k_scale = q8 ? dks.as<float>() : nullptr;
    a.v_scale = q8 ? dvs.as<float>() : nullptr;
    a.out = dout.as<float>();
    a.partial = part.as<float>();
    a.arrivals = arrivals.as<int>();
    a.d_pos = dpos.as<int>();
    a.n_heads = c.n_heads;
    a.n_kv_heads = c.n_kv;
    a.head_dim = c.hd;
    a.n_ctx = n_ctx;
    a.n_splits = splits;
    a.window = c.window;
    a.scale = scale;
    a.softcap = c.softcap;
    a.cuda_cores_only = cuda_cores_only;
    std::vector<Measured> out;
    for (int rep = 0; rep < c.reps; ++rep) {
        decode_attention(a, nullptr);
        out.push_back({fmt::format("launch {}", rep + 1), rel_err(dout.get(ref.size()), ref), tol});
    }
    return out;
}

struct FusedShape {
    int n_heads, n_kv, hd, rotary, len, window;
    bool norm, bias;
    // Gemma 4 (as RopeShape): v-norm, a KV-shared layer (no new row: it attends over the cache as
    // its source layer left it), attention_k_eq_v, proportional RoPE with rotated_pairs pairs.
    bool v_norm = false, shared = false, k_eq_v = false;
    int rotated_pairs = 0;
    bool q8 = false;  // the 8-bit KV cache beside weights of the case's dtype
};

// The decode attention with RoPE fused: raw q/k/v of the newest token in, the cache row written
// and the attention output equal to rope_qkv on the CPU followed by attention.
std::vector<Measured> decode_attention_rope_case(CaseEnv& e, DType dt, const FusedShape& c, bool cuda_cores_only, double tol) {
    RopeSpec rs;
    rs.theta = c.rotated_pairs > 0 ? 1000000 : 10000;
    rs.rotary_dim = c.rotary;
    if (c.rotated_pairs > 0) {
        rs.scaling = RopeScaling::proportional;
        rs.rotated_pairs = c.rotated_pairs;
    }
    const RopeTable table = make_rope_table(rs);
    const int Q = c.n_heads * c.hd, KV = c.n_kv * c.hd, group = c.n_heads / c.n_kv, n_ctx = c.len + 3;
    const int pos = c.len - 1;
    auto q = randn(e.rng, size_t(Q)), knew = randn(e.rng, size_t(KV)), vnew = randn(e.rng, size_t(KV));
    auto k = randn(e.rng, size_t(n_ctx) * KV), v = randn(e.rng, size_t(n_ctx) * KV);
    auto bq = randn(e.rng, size_t(Q)), bk = randn(e.rng, size_t(KV)), bv = randn(e.rng, size_t(KV));
    auto qn = randn(e.rng, size_t(c.hd), 0.3f), kn = randn(e.rng, size_t(c.hd), 0.3f);
    auto bqb = store(bq, dt), bkb = store(bk, dt), bvb = store(bv, dt), qnb = store(qn, dt), knb = store(kn, dt);
    Floats ksc, vsc;  // the 8-bit cache's row scales
    // The cache holds the weights' dtype, or the 8-bit rows.
    auto kb = c.q8 ? store_kv_int8(k, c.hd, ksc) : store(k, dt), vb = c.q8 ? store_kv_int8(v, c.hd, vsc) : store(v, dt);
    // CPU: prepare q heads and the new k, write k/v at pos (rounded as the cache stores them), attend.
    Floats rq = q, rk = knew, rv = c.k_eq_v ? knew : vnew;
    for (int h = 0; h < c.n_heads + c.n_kv; ++h) {
        const bool isq = h < c.n_heads;
        const int head = isq ? h : h - c.n_heads;
        float* p = isq ? &rq[size_t(head) * c.hd] : &rk[size_t(head) * c.hd];
        if (c.bias)
            for (int d = 0; d < c.hd; ++d) p[d] += (isq ? bq : bk)[size_t(head * c.hd + d)];
        if (c.norm) cpu::rmsnorm_f32(p, (isq ? qn : kn).data(), 0.0f, 1e-6f, p, c.hd);
        apply_rope(p, pos, table);
    }
    if (c.bias)
        for (int i = 0; i < KV; ++i) rv[size_t(i)] += bv[size_t(i)];
    if (c.v_norm)
        for (int h = 0; h < c.n_kv; ++h) cpu::rmsnorm_unweighted(&rv[size_t(h) * c.hd], 1e-6f, &rv[size_t(h) * c.hd], c.hd);
    auto rk_st = rk, rv_st = rv;
    if (c.q8) {
        round_kv_row_int8(rk_st.data(), c.n_kv, c.hd);
        round_kv_row_int8(rv_st.data(), c.n_kv, c.hd);
    } else {
        store(rk_st, dt);
        store(rv_st, dt);
    }
    Floats kref = k, vref = v;
    if (!c.shared) {
        std::copy(rk_st.begin(), rk_st.end(), kref.begin() + ptrdiff_t(size_t(pos) * KV));
        std::copy(rv_st.begin(), rv_st.end(), vref.begin() + ptrdiff_t(size_t(pos) * KV));
    }
    const float scale = 1.0f / std::sqrt(float(c.hd));
    const int first = c.window > 0 ? std::max(0, pos - c.window + 1) : 0;
    Floats ref(static_cast<size_t>(Q)), scores(static_cast<size_t>(c.len));
    for (int h = 0; h < c.n_heads; ++h)
        cpu::attend_head(&rq[size_t(h) * c.hd], kref.data(), vref.data(), KV, (h / group) * c.hd, c.hd, first, pos, scale,
                         0.0f, scores.data(), &ref[size_t(h) * c.hd]);
    const int splits = decode_attention_splits(c.n_kv, e.n_sms);
    Dev dq(q), dkn(knew), dvn(vnew), dk(kb), dv(vb), dout(ref.size() * 4), dks(ksc), dvs(vsc);
    const DType kv_dt = c.q8 ? DType::i8 : dt;
    Dev dbq(bqb), dbk(bkb), dbv(bvb), dqn(qnb), dknorm(knb), dinv(table.inv_freq);
    Dev part(decode_attention_partial_floats(c.n_heads, c.hd, splits) * 4);
    Dev arrivals(std::vector<int>(size_t(c.n_kv), 0));
    Dev dpos(std::vector<int>{pos});
    DecodeAttnArgs a{};
    a.k_cache = dk.p;
    a.v_cache = dv.p;
    a.kv_dt = kv_dt;
    a.k_scale = c.q8 ? dks.as<float>() : nullptr;
    a.v_scale = c.q8 ? dvs.as<float>() : nullptr;
    a.out = dout.as<float>();
    a.partial = part.as<float>();
    a.arrivals = arrivals.as<int>();
    a.d_pos = dpos.as<int>();
    a.n_heads = c.n_heads;
    a.n_kv_heads = c.n_kv;
    a.head_dim = c.hd;
    a.n_ctx = n_ctx;
    a.n_splits = splits;
    a.window = c.window;
    a.scale = scale;
    a.softcap = 0;
    a.rope_fused = true;
    RopeArgs& r = a.rope;
    r.q = dq.as<float>();
    r.k = c.shared ? nullptr : dkn.as<float>();
    r.v = c.k_eq_v ? dkn.as<float>() : dvn.as<float>();
    r.v_norm = c.v_norm;
    r.bq = c.bias ? dbq.p : nullptr;
    r.bk = c.bias ? dbk.p : nullptr;
    r.bv = c.bias ? dbv.p : nullptr;
    r.q_norm = c.norm ? dqn.p : nullptr;
    r.k_norm = c.norm ? dknorm.p : nullptr;
    r.wdt = dt;
    r.norm_offset = 0;
    r.norm_eps = 1e-6f;
    r.inv_freq = dinv.as<float>();
    r.attention_factor = table.attention_factor;
    r.rotary_dim = c.rotary;
    r.n_heads = c.n_heads;
    r.n_kv_heads = c.n_kv;
    r.head_dim = c.hd;
    r.n = 1;
    r.d_pos0 = dpos.as<int>();
    r.k_cache = dk.p;
    r.v_cache = dv.p;
    r.kv_dt = kv_dt;
    r.k_scale = c.q8 ? dks.as<float>() : nullptr;
    r.v_scale = c.q8 ? dvs.as<float>() : nullptr;
    a.cuda_cores_only = cuda_cores_only;
    decode_attention(a, nullptr);
    const Floats got = dout.get(ref.size());
    Floats kgot(static_cast<size_t>(KV)), vgot(static_cast<size_t>(KV));
    if (c.q8) {
        kgot = load_kv_int8(dk, dks, pos, 1, c.n_kv, c.hd);
        vgot = load_kv_int8(dv, dvs, pos, 1, c.n_kv, c.hd);
    } else {
        const size_t es = dtype_size(dt);
        std::vector<uint8_t> row(size_t(KV) * es);
        TT_CUDA_CHECK(cudaMemcpy(row.data(), static_cast<uint8_t*>(dk.p) + size_t(pos) * KV * es, row.size(), cudaMemcpyDeviceToHost));
        to_f32(row.data(), dt, kgot.data(), kgot.size());
        TT_CUDA_CHECK(cudaMemcpy(row.data(), static_cast<uint8_t*>(dv.p) + size_t(pos) * KV * es, row.size(), cudaMemcpyDeviceToHost));
        to_f32(row.data(), dt, vgot.data(), vgot.size());
    }
    const Floats kwant(kref.begin() + ptrdiff_t(size_t(pos) * KV), kref.begin() + ptrdiff_t(size_t(pos + 1) * KV));
    const Floats vwant(vref.begin() + ptrdiff_t(size_t(pos) * KV), vref.begin() + ptrdiff_t(size_t(pos + 1) * KV));
    // (A KV-shared layer must leave the row as the cache had it: the same comparison, exactly.)
    return {{"attention output", rel_err(got, ref), tol},
            {"k cache row", rel_err(kgot, kwant), c.shared ? 0.0 : tol},
            {"v cache row", rel_err(vgot, vwant), c.shared ? 0.0 : tol}};
}

struct PrefillShape {
    int n_q, q_pos0, n_heads, n_kv, hd, window;
    float softcap, q_scale;
    int row_step;     // reference rows: every row_step-th and the last two (keeps large cases fast)
    bool fused_rows;  // q as the first part of a fused QKV row (stride q + 2 kv), else stride q
};

// The flash prefill kernel against attention computed in double on the CPU from the same rounded
// inputs. The kernel rounds the (unnormalized) probabilities to the input dtype before the P V
// product and rounds the output to it (2^-9 relative for bf16, 2^-11 for f16, each term
// independently), so ||err|| / ||ref|| sits near 3e-3 for bf16 and 1e-3 for f16; a wrong mask,
// fragment or tile bound gives errors of order 1. The row after the last must stay untouched.
std::vector<Measured> prefill_attention_case(CaseEnv& e, DType dt, const PrefillShape& c, double tol) {
    if (!prefill_attention_supported(dt, c.hd))
        fail("prefill_attention_supported({}, {}) is false for a case of the table", dtype_name(dt), c.hd);
    const int Q = c.n_heads * c.hd, KV = c.n_kv * c.hd, group = c.n_heads / c.n_kv;
    const int n_keys = c.q_pos0 + c.n_q, n_ctx = n_keys + 3;
    const int q_stride = c.fused_rows ? Q + 2 * KV : Q;
    auto q = randn(e.rng, size_t(c.n_q) * q_stride, c.q_scale), k = randn(e.rng, size_t(n_ctx) * KV);
    auto v = randn(e.rng, size_t(n_ctx) * KV);
    auto qb = store(q, dt), kb = store(k, dt), vb = store(v, dt);
    const float scale = 1.0f / std::sqrt(float(c.hd));
    const size_t es = dtype_size(dt);
    Dev dq(qb), dk(kb), dv(vb), dout(size_t(c.n_q + 1) * Q * es);
    PrefillAttnArgs a{};
    a.q = dq.p;
    a.q_stride = q_stride;
    a.k_cache = dk.p;
    a.v_cache = dv.p;
    a.out = dout.p;
    a.out_stride = Q;
    a.dt = dt;
    a.n_q = c.n_q;
    a.n_heads = c.n_heads;
    a.n_kv_heads = c.n_kv;
    a.head_dim = c.hd;
    a.q_pos0 = c.q_pos0;
    a.window = c.window;
    a.scale = scale;
    a.softcap = c.softcap;
    prefill_attention(a, nullptr);
    const Floats out = dout.get(size_t(c.n_q + 1) * Q, dt);
    Floats ref, got;
    std::vector<double> sc, acc(size_t(c.hd));
    for (int i = 0; i < c.n_q; ++i) {
        if (i % c.row_step != 0 && i < c.n_q - 2) continue;
        const int pos = c.q_pos0 + i, lo = c.window > 0 ? std::max(0, pos - c.window + 1) : 0;
        for (int h = 0; h < c.n_heads; ++h) {
            const float* qh = &q[size_t(i) * q_stride + size_t(h) * c.hd];
            const size_t koff = size_t(h / group) * c.hd;
            sc.assign(size_t(pos - lo + 1), 0.0);
            double m = -INFINITY, l = 0;
            for (int j = lo; j <= pos; ++j) {
                double d = 0;
                for (int x = 0; x < c.hd; ++x) d += double(qh[x]) * k[size_t(j) * KV + koff + size_t(x)];
                double s = d * scale;
                if (c.softcap > 0) s = c.softcap * std::tanh(s / c.softcap);
                sc[size_t(j - lo)] = s;
                m = std::max(m, s);
            }
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int j = lo; j <= pos; ++j) {
                const double p = std::exp(sc[size_t(j - lo)] - m);
                l += p;
                for (int x = 0; x < c.hd; ++x) acc[size_t(x)] += p * v[size_t(j) * KV + koff + size_t(x)];
            }
            for (int x = 0; x < c.hd; ++x) {
                ref.push_back(float(acc[size_t(x)] / l));
                got.push_back(out[size_t(i) * Q + size_t(h) * c.hd + size_t(x)]);
            }
        }
    }
    // The poisoned row past n_q (0xff bytes: NaN) must be untouched.
    bool untouched = true;
    for (int x = 0; x < Q; ++x) untouched = untouched && std::isnan(out[size_t(c.n_q) * Q + size_t(x)]);
    return {{"attention output", rel_err(got, ref), tol}, {"row past n_q untouched", untouched ? 0.0 : 1.0, 0.0}};
}

struct SoftmaxShape {
    int heads, nq, nk, q0, window;
};

std::vector<Measured> masked_softmax_case(CaseEnv& e, DType out_dt, const SoftmaxShape& c, double tol) {
    const float scale = 0.37f;
    auto s = randn(e.rng, size_t(c.heads) * c.nq * c.nk, 3.0f);
    Floats ref(s.size());
    for (int h = 0; h < c.heads; ++h)
        for (int i = 0; i < c.nq; ++i) {
            const int qp = c.q0 + i, lo = c.window > 0 ? std::max(0, qp - c.window + 1) : 0;
            const float* row = &s[(size_t(h) * c.nq + size_t(i)) * c.nk];
            float* o = &ref[(size_t(h) * c.nq + size_t(i)) * c.nk];
            float m = -INFINITY, l = 0;
            for (int j = lo; j <= qp; ++j) m = std::max(m, row[j] * scale);
            for (int j = lo; j <= qp; ++j) l += std::exp(row[j] * scale - m);
            for (int j = 0; j < c.nk; ++j) o[j] = (j >= lo && j <= qp) ? std::exp(row[j] * scale - m) / l : 0.0f;
        }
    Dev ds(s), dp(s.size() * dtype_size(out_dt));
    masked_softmax(ds.as<float>(), dp.p, out_dt, c.heads, c.nq, c.nk, c.q0, c.window, scale, 0.0f, nullptr);
    return {{"probabilities", rel_err(dp.get(ref.size(), out_dt), ref), tol}};
}

std::vector<Measured> embedding_case(CaseEnv& e, DType dt, double tol) {
    const int vocab = 301, hidden = 72;
    const float scale = 2.5f;
    auto emb = randn(e.rng, size_t(vocab) * hidden);
    auto eb = store(emb, dt);
    const std::vector<int32_t> ids = {0, 300, 17, 17, 250};
    Floats ref(ids.size() * hidden);
    for (size_t t = 0; t < ids.size(); ++t)
        for (int i = 0; i < hidden; ++i) ref[t * hidden + size_t(i)] = emb[size_t(ids[t]) * hidden + size_t(i)] * scale;
    Dev de(eb), di(ids), dx(ref.size() * 4);
    embedding(de.p, dt, di.as<int32_t>(), int(ids.size()), hidden, scale, dx.as<float>(), nullptr);
    return {{"rows", rel_err(dx.get(ref.size()), ref), tol}};  // a copy and one multiply: exact
}

// n > 0: a random vector of n; n == 0: ties (the lowest index wins, as std::max_element on the CPU).
std::vector<Measured> argmax_case(CaseEnv& e, int n) {
    Floats x;
    if (n > 0) {
        x = randn(e.rng, size_t(n));
    } else {
        x.assign(1000, 1.0f);
        x[700] = x[123] = 5.0f;
    }
    const int want = int(std::max_element(x.begin(), x.end()) - x.begin());
    Dev dx(x), dout(4);
    argmax(dx.as<float>(), int(x.size()), dout.as<int32_t>(), nullptr);
    const int got = dout.get<int32_t>(1)[0];
    return {{fmt::format("index (want {}, got {})", want, got), got == want ? 0.0 : 1.0, 0.0}};  // right or wrong
}

struct ActShape {
    DType in_dt;  // gate/up input dtype (f32, or bf16 as the prefill's gate/up GEMM writes it)
    bool bias;    // biases in the case's dtype
    bool out_in_dt;  // output in the case's dtype (else f32)
};

std::vector<Measured> gated_act_case(CaseEnv& e, DType dt, const ActShape& c, double tol) {
    const int n = 3, f = 100;
    std::vector<Measured> out;
    for (GateAct act : {GateAct::silu, GateAct::gelu_tanh}) {
        auto g = randn(e.rng, size_t(n) * f), u = randn(e.rng, size_t(n) * f);
        auto bg = randn(e.rng, size_t(f)), bu = randn(e.rng, size_t(f));
        auto gb = store(g, c.in_dt), ub = store(u, c.in_dt);  // the kernel reads the rounded values
        auto bgb = store(bg, dt), bub = store(bu, dt);
        Floats ref(g.size());
        for (size_t i = 0; i < g.size(); ++i) {
            const float gv = g[i] + (c.bias ? bg[i % f] : 0.0f), uv = u[i] + (c.bias ? bu[i % f] : 0.0f);
            ref[i] = act_ref(act, gv) * uv;
        }
        const DType odt = c.out_in_dt ? dt : DType::f32;
        Dev dg(gb), du(ub), dbg(bgb), dbu(bub), dout(g.size() * dtype_size(odt));
        gated_act(dg.p, du.p, c.in_dt, f, c.bias ? dbg.p : nullptr, c.bias ? dbu.p : nullptr, dt, n, f, act, dout.p, odt,
                  nullptr);
        out.push_back({act_name(act), rel_err(dout.get(ref.size(), odt), ref), tol});
    }
    return out;
}

// cuBLAS GEMM y[n, rows] = x[n, cols] W^T as the CUDA backend's prefill issues it.
std::vector<Measured> cublas_gemm_case(CaseEnv& e, DType dt, double tol) {
    const int rows = 96, cols = 192, n = 5;
    auto w = randn(e.rng, size_t(rows) * cols, 0.05f), x = randn(e.rng, size_t(n) * cols);
    auto wb = store(w, dt), xb = store(x, dt);
    Floats ref(static_cast<size_t>(n) * rows);
    cpu::linear(e.pool, x.data(), n, view(wb, dt, {rows, cols}), nullptr, ref.data());
    Dev dw(wb), dx(xb), dy(ref.size() * 4);
    cublasHandle_t h = nullptr;
    TT_CUBLAS_CHECK(cublasCreate(&h));
    const std::unique_ptr<cublasContext, decltype(&cublasDestroy)> guard(h, &cublasDestroy);
    // As the backend: f32 weights in pedantic (true f32, no TF32) math, bf16 with tensor cores.
    TT_CUBLAS_CHECK(cublasSetMathMode(h, dt == DType::f32 ? CUBLAS_PEDANTIC_MATH : CUBLAS_DEFAULT_MATH));
    const cudaDataType_t t = dt == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
    const float alpha = 1.0f, beta = 0.0f;
    // Row-major y[n, rows] = x[n, cols] W[rows, cols]^T is column-major y^T = W^T(op T) x^T.
    TT_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, cols, &alpha, dw.p, t, cols, dx.p, t, cols, &beta, dy.p,
                                 CUDA_R_32F, rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return {{"y", rel_err(dy.get(ref.size()), ref), tol}};
}

// ---- mixture of experts ----

struct RouteShape {
    int n, n_experts, top_k;
    bool norm_topk;
    bool ties;   // logits from {0, 0.5, 1, 1.5}: many exact ties, which torch.topk breaks lowest index first
    bool table;  // also the pointer lookup
};

// The router against cpu::moe_route row by row: the picks must be the same experts in the same
// order, the weights equal to rounding (expf against std::exp, the softmax sum's order).
std::vector<Measured> moe_route_case(CaseEnv& e, const RouteShape& c) {
    const size_t nk = size_t(c.n) * c.top_k;
    Floats logits = randn(e.rng, size_t(c.n) * c.n_experts, 2.0f);
    if (c.ties) {
        std::uniform_int_distribution<int> level(0, 3);
        for (float& v : logits) v = 0.5f * float(level(e.rng));
    }
    std::vector<int32_t> ref_ids(nk);
    Floats ref_w(nk);
    for (int t = 0; t < c.n; ++t)
        cpu::moe_route(&logits[size_t(t) * c.n_experts], c.n_experts, c.top_k, c.norm_topk, &ref_ids[size_t(t) * c.top_k],
                       &ref_w[size_t(t) * c.top_k]);
    // The table's entries are never dereferenced: distinct made-up addresses do.
    std::vector<const void*> table(static_cast<size_t>(c.n_experts));
    for (size_t i = 0; i < table.size(); ++i) table[i] = reinterpret_cast<const void*>(uintptr_t(0x10000) + 64 * i);
    Dev dl(logits), dtable(table), dids(nk * 4), dw(nk * 4), dptrs(nk * sizeof(void*));
    moe_route(dl.as<float>(), c.n, c.n_experts, c.top_k, c.norm_topk, dids.as<int32_t>(), dw.as<float>(),
              c.table ? dtable.as<const void*>() : nullptr, c.table ? static_cast<const void**>(dptrs.p) : nullptr, nullptr);
    const auto ids = dids.get<int32_t>(nk);
    const auto ptrs = dptrs.get<const void*>(nk);
    size_t wrong_ids = 0, wrong_ptrs = 0;
    for (size_t i = 0; i < nk; ++i) {
        wrong_ids += ids[i] != ref_ids[i];
        wrong_ptrs += ptrs[i] != table[size_t(ref_ids[i])];
    }
    std::vector<Measured> out = {{fmt::format("ids ({} of {} differ)", wrong_ids, nk), wrong_ids ? 1.0 : 0.0, 0.0},
                                 {"weights", rel_err(dw.get(nk), ref_w), 1e-5}};
    if (c.table) out.push_back({fmt::format("pointers ({} of {} differ)", wrong_ptrs, nk), wrong_ptrs ? 1.0 : 0.0, 0.0});
    return out;
}

struct MoeShape {
    int hidden, ffn, n_experts, top_k;
    bool norm_topk;
    GateAct act;
};

// One decode MoE FFN as the backend chains it: the router picks the experts and writes their
// block pointers (from a table of E blocks in one device buffer, laid out as the archive's
// per-expert block: gate, up, down), the gated GEMV, the down GEMV, the combine into the residual.
// Each stage is checked against the CPU ops on its own: the down GEMV and the combine get the
// reference of the stage before, so an error points at one kernel. note: only the selected
// experts' blocks hold weights; the rest stay poisoned (NaN), so reading a wrong expert shows as
// a non-finite output. Two selections on the same buffers, as two replays of one graph see.
// Quantized (q): each matrix's values then its f32 scales, 16-byte aligned, as the archive lays
// out an expert block; the reference is cpu::linear on the same quantized views.
std::vector<Measured> moe_ffn_case(CaseEnv& e, DType dt, const MoeShape& c, double tol, QuantScheme q = QuantScheme::none,
                                   int group = 0) {
    const int k = c.top_k, E = c.n_experts;
    const size_t es = dtype_size(dt), mat = size_t(c.ffn) * c.hidden;
    // Offsets of gate, up, down and (quantized) their scales in a block.
    auto a16 = [](size_t n) { return (n + 15) / 16 * 16; };
    const size_t gate_q = q == QuantScheme::none ? mat * es : size_t(c.ffn) * quant_row_bytes(q, c.hidden);
    const size_t down_q = q == QuantScheme::none ? mat * es : size_t(c.hidden) * quant_row_bytes(q, c.ffn);
    const size_t gate_s = size_t(c.ffn) * quant_row_scales(q == QuantScheme::none ? QuantScheme::int8 : q, c.hidden, group) * 4;
    const size_t down_s = size_t(c.hidden) * quant_row_scales(q == QuantScheme::none ? QuantScheme::int8 : q, c.ffn, group) * 4;
    const bool quant = q != QuantScheme::none;
    const size_t gate_s_off = a16(gate_q), up_off = quant ? a16(gate_s_off + gate_s) : gate_q;
    const size_t up_s_off = up_off + a16(gate_q), down_off = quant ? a16(up_s_off + gate_s) : 2 * gate_q;
    const size_t down_s_off = down_off + a16(down_q);
    const size_t block = ((quant ? down_s_off + down_s : down_off + down_q) + 4095) / 4096 * 4096;
    Dev blocks(block * size_t(E));
    std::vector<const void*> table(static_cast<size_t>(E));
    for (int i = 0; i < E; ++i) table[size_t(i)] = static_cast<const uint8_t*>(blocks.p) + size_t(i) * block;
    auto x = randn(e.rng, size_t(c.hidden)), nw = randn(e.rng, size_t(c.hidden), 0.3f);
    auto nwb = store(nw, dt);
    Floats xn(static_cast<size_t>(c.hidden));
    cpu::rmsnorm_f32(x.data(), nw.data(), 0.0f, 1e-5f, xn.data(), c.hidden);
    Dev dtable(table), dptrs(size_t(k) * sizeof(void*)), dids(size_t(k) * 4), dw(size_t(k) * 4);
    Dev dx(x), dnw(nwb), dact(size_t(k) * c.ffn * 4), dpart(size_t(k) * c.hidden * 4);
    MoeGemvArgs a{};
    a.experts = static_cast<const void* const*>(dptrs.p);
    a.up_offset = up_off;
    a.down_offset = down_off;
    a.quant = q;
    a.group_size = group;
    a.gate_scales = gate_s_off;
    a.up_scales = up_s_off;
    a.down_scales = down_s_off;
    a.wdt = dt;
    a.top_k = k;
    a.ffn = c.ffn;
    a.hidden = c.hidden;
    a.x = dx.as<float>();
    a.norm_w = dnw.p;
    a.norm_offset = 0.0f;
    a.norm_eps = 1e-5f;
    a.act = c.act;
    a.act_out = dact.as<float>();
    a.partial = dpart.as<float>();
    std::vector<Measured> out;
    for (int sel = 1; sel <= 2; ++sel) {
        const auto logits = randn(e.rng, size_t(E), 2.0f);
        std::vector<int32_t> ids(static_cast<size_t>(k));
        Floats w(static_cast<size_t>(k));
        cpu::moe_route(logits.data(), E, k, c.norm_topk, ids.data(), w.data());
        Floats ref_act(size_t(k) * c.ffn), ref_part(size_t(k) * c.hidden), g(size_t(c.ffn)), u(size_t(c.ffn));
        for (int j = 0; j < k; ++j) {
            uint8_t* base = static_cast<uint8_t*>(blocks.p) + size_t(ids[size_t(j)]) * block;
            auto put = [&](size_t off, const void* p, size_t n) { TT_CUDA_CHECK(cudaMemcpy(base + off, p, n, cudaMemcpyHostToDevice)); };
            float* act = &ref_act[size_t(j) * c.ffn];
            if (quant) {
                const auto gm = random_quant(e.rng, q, group, c.ffn, c.hidden, e.pool);
                const auto um = random_quant(e.rng, q, group, c.ffn, c.hidden, e.pool);
                const auto dm = random_quant(e.rng, q, group, c.hidden, c.ffn, e.pool);
                for (auto [m, off, soff] : {std::tuple{gm.get(), size_t(0), gate_s_off}, {um.get(), up_off, up_s_off},
                                            {dm.get(), down_off, down_s_off}}) {
                    put(off, m->m.q.data(), m->m.q.size());
                    put(soff, m->m.scales.data(), m->m.scales.size() * 4);
                }
                cpu::linear(e.pool, xn.data(), 1, gm->view, nullptr, g.data());
                cpu::linear(e.pool, xn.data(), 1, um->view, nullptr, u.data());
                for (int i = 0; i < c.ffn; ++i) act[i] = act_ref(c.act, g[size_t(i)]) * u[size_t(i)];
                cpu::linear(e.pool, act, 1, dm->view, nullptr, &ref_part[size_t(j) * c.hidden]);
                continue;
            }
            auto gw = randn(e.rng, mat, 0.05f), uw = randn(e.rng, mat, 0.05f), downw = randn(e.rng, mat, 0.05f);
            const auto gb = store(gw, dt), ub = store(uw, dt), db = store(downw, dt);
            put(0, gb.data(), gb.size());
            put(up_off, ub.data(), ub.size());
            put(down_off, db.data(), db.size());
            // act_out[j] = act(G_j xn) * (U_j xn); partial[j] = D_j act_out[j]
            cpu::linear(e.pool, xn.data(), 1, view(gb, dt, {c.ffn, c.hidden}), nullptr, g.data());
            cpu::linear(e.pool, xn.data(), 1, view(ub, dt, {c.ffn, c.hidden}), nullptr, u.data());
            for (int i = 0; i < c.ffn; ++i) act[i] = act_ref(c.act, g[size_t(i)]) * u[size_t(i)];
            cpu::linear(e.pool, act, 1, view(db, dt, {c.hidden, c.ffn}), nullptr, &ref_part[size_t(j) * c.hidden]);
        }
        Floats ref_x = x;
        for (int i = 0; i < c.hidden; ++i) {
            float acc = 0;
            for (int j = 0; j < k; ++j) acc += w[size_t(j)] * ref_part[size_t(j) * c.hidden + size_t(i)];
            ref_x[size_t(i)] += acc;
        }
        Dev dlogits(logits), dres(x);
        moe_route(dlogits.as<float>(), 1, E, k, c.norm_topk, dids.as<int32_t>(), dw.as<float>(), dtable.as<const void*>(),
                  static_cast<const void**>(dptrs.p), nullptr);
        moe_gemv_gated(a, nullptr);
        const bool same_ids = dids.get<int32_t>(size_t(k)) == ids;
        out.push_back({fmt::format("selection {}: ids", sel), same_ids ? 0.0 : 1.0, 0.0});
        out.push_back({fmt::format("selection {}: act_out", sel), rel_err(dact.get(ref_act.size()), ref_act), tol});
        TT_CUDA_CHECK(cudaMemcpy(dact.p, ref_act.data(), ref_act.size() * 4, cudaMemcpyHostToDevice));
        moe_gemv_down(a, nullptr);
        out.push_back({fmt::format("selection {}: partial", sel), rel_err(dpart.get(ref_part.size()), ref_part), tol});
        TT_CUDA_CHECK(cudaMemcpy(dpart.p, ref_part.data(), ref_part.size() * 4, cudaMemcpyHostToDevice));
        moe_combine(dres.as<float>(), dpart.as<float>(), nullptr, dw.as<float>(), 1, k, c.hidden, nullptr, nullptr, nullptr);
        out.push_back({fmt::format("selection {}: residual", sel), rel_err(dres.get(ref_x.size()), ref_x), 1e-5});
    }
    return out;
}

// A shared expert's term in the combine: none, its output as is, or scaled by sigmoid(gate logit).
enum class SharedTerm { none, ungated, gated };

const char* shared_term_name(SharedTerm t) {
    return t == SharedTerm::none ? "" : t == SharedTerm::ungated ? ", shared expert" : ", gated shared expert";
}

struct CombineShape {
    int n, top_k, hidden;
    bool rows;  // through a row index (the prefill's expert-sorted outputs), else y row t * top_k + j
    SharedTerm shared;
};

std::vector<Measured> moe_combine_case(CaseEnv& e, const CombineShape& c) {
    const size_t nk = size_t(c.n) * c.top_k, n_y = c.rows ? nk + 5 : nk;
    auto x = randn(e.rng, size_t(c.n) * c.hidden), y = randn(e.rng, n_y * c.hidden);
    // The shared expert's output [n, hidden] and its gate's logits [n] (spread over both tails of
    // the sigmoid).
    auto shared = randn(e.rng, size_t(c.n) * c.hidden), logit = randn(e.rng, size_t(c.n), 3.0f);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    std::uniform_int_distribution<int32_t> any_row(0, int32_t(n_y) - 1);
    Floats w(nk);
    std::vector<int32_t> rows(nk);
    for (size_t i = 0; i < nk; ++i) {
        w[i] = unit(e.rng);
        rows[i] = c.rows ? any_row(e.rng) : int32_t(i);
    }
    Floats ref = x;
    for (int t = 0; t < c.n; ++t) {
        const float g = c.shared == SharedTerm::gated ? cpu::sigmoid(logit[size_t(t)]) : 1.0f;
        for (int h = 0; h < c.hidden; ++h) {
            float acc = 0;
            for (int j = 0; j < c.top_k; ++j) {
                const size_t i = size_t(t) * c.top_k + size_t(j);
                acc += w[i] * y[size_t(rows[i]) * c.hidden + size_t(h)];
            }
            if (c.shared != SharedTerm::none) acc += g * shared[size_t(t) * c.hidden + size_t(h)];
            ref[size_t(t) * c.hidden + size_t(h)] += acc;
        }
    }
    Dev dx(x), dy(y), dw(w), drows(rows), dshared(shared), dlogit(logit);
    moe_combine(dx.as<float>(), dy.as<float>(), c.rows ? drows.as<int32_t>() : nullptr, dw.as<float>(), c.n, c.top_k,
                c.hidden, c.shared != SharedTerm::none ? dshared.as<float>() : nullptr,
                c.shared == SharedTerm::gated ? dlogit.as<float>() : nullptr, nullptr);
    return {{"residual", rel_err(dx.get(ref.size()), ref), 1e-6}};
}

struct SharedExpertShape {
    int hidden, shared_ffn, n_experts, top_k;
    bool gated;  // a shared_expert_gate row (Qwen2-MoE, Qwen3.5-MoE)
    GateAct act;
};

// A shared expert's decode chain as the backend runs it: its gate row as one more row of the
// router's GEMV (a segment of one row beside the router's n_experts, the pre-FFN norm fused),
// the gated GEMV of its gate and up, the down GEMV, then the combine with routed outputs (random
// here: moe_ffn checks how they are made). Each stage against the CPU ops, fed the reference of
// the stage before, so an error points at one kernel.
std::vector<Measured> moe_shared_expert_case(CaseEnv& e, DType dt, const SharedExpertShape& c, double tol) {
    const int H = c.hidden, SF = c.shared_ffn, E = c.n_experts, k = c.top_k;
    auto x = randn(e.rng, size_t(H)), nw = randn(e.rng, size_t(H), 0.3f);
    auto router = randn(e.rng, size_t(E) * H, 0.05f), gate_row = randn(e.rng, size_t(H), 0.2f);
    auto wg = randn(e.rng, size_t(SF) * H, 0.05f), wu = randn(e.rng, size_t(SF) * H, 0.05f);
    auto wd = randn(e.rng, size_t(H) * SF, 0.05f);
    auto nwb = store(nw, dt), rb = store(router, dt), grb = store(gate_row, dt);
    auto wgb = store(wg, dt), wub = store(wu, dt), wdb = store(wd, dt);
    Floats xn(static_cast<size_t>(H));
    cpu::rmsnorm_f32(x.data(), nw.data(), 0.0f, 1e-6f, xn.data(), H);
    // router_logits = self.gate(xn); the gate logit = self.shared_expert_gate(xn)
    Floats ref_logits(static_cast<size_t>(E)), ref_gate(1);
    cpu::linear(e.pool, xn.data(), 1, view(rb, dt, {E, H}), nullptr, ref_logits.data());
    cpu::linear(e.pool, xn.data(), 1, view(grb, dt, {1, H}), nullptr, ref_gate.data());
    // shared_expert(xn) = down(act(gate(xn)) * up(xn))
    Floats g(static_cast<size_t>(SF)), u(static_cast<size_t>(SF)), ref_act(static_cast<size_t>(SF)), ref_out(static_cast<size_t>(H));
    cpu::linear(e.pool, xn.data(), 1, view(wgb, dt, {SF, H}), nullptr, g.data());
    cpu::linear(e.pool, xn.data(), 1, view(wub, dt, {SF, H}), nullptr, u.data());
    for (int i = 0; i < SF; ++i) ref_act[size_t(i)] = act_ref(c.act, g[size_t(i)]) * u[size_t(i)];
    cpu::linear(e.pool, ref_act.data(), 1, view(wdb, dt, {H, SF}), nullptr, ref_out.data());
    // x + sum_j w_j partial_j + sigmoid(gate logit) * shared_expert(xn)
    auto partial = randn(e.rng, size_t(k) * H);
    Floats w(static_cast<size_t>(k));
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    for (float& v : w) v = unit(e.rng);
    const float gate = c.gated ? cpu::sigmoid(ref_gate[0]) : 1.0f;
    Floats ref_x = x;
    for (int h = 0; h < H; ++h) {
        float acc = 0;
        for (int j = 0; j < k; ++j) acc += w[size_t(j)] * partial[size_t(j) * H + size_t(h)];
        ref_x[size_t(h)] += acc + gate * ref_out[size_t(h)];
    }

    Dev dx(x), dnw(nwb), drouter(rb), dgate_row(grb), dwg(wgb), dwu(wub), dwd(wdb);
    Dev dlogits(size_t(E) * 4), dgate(4), dact(size_t(SF) * 4), dout(size_t(H) * 4), dpart(partial), dw(w);
    GemvArgs r{};
    r.seg[0] = {drouter.p, nullptr, dlogits.as<float>(), E};
    r.n_seg = 1;
    if (c.gated) r.seg[r.n_seg++] = {dgate_row.p, nullptr, dgate.as<float>(), 1};
    r.cols = H; r.wdt = dt; r.x = dx.as<float>();
    r.norm_w = dnw.p; r.norm_offset = 0.0f; r.norm_eps = 1e-6f;
    gemv(r, nullptr);
    gemv_gated(dwg.p, dwu.p, nullptr, nullptr, dt, SF, H, dx.as<float>(), dnw.p, 0.0f, 1e-6f, c.act, dact.as<float>(), nullptr);
    std::vector<Measured> out;
    // note: the gate logit is measured beside the router's (one vector): alone, a logit near 0
    // would turn rounding into a large relative error.
    Floats got_logits = dlogits.get(ref_logits.size()), ref_rg = ref_logits;
    if (c.gated) {
        got_logits.push_back(dgate.get(1)[0]);
        ref_rg.push_back(ref_gate[0]);
    }
    out.push_back({c.gated ? "router and gate logits" : "router logits", rel_err(got_logits, ref_rg), tol});
    out.push_back({"shared act", rel_err(dact.get(ref_act.size()), ref_act), tol});
    TT_CUDA_CHECK(cudaMemcpy(dact.p, ref_act.data(), ref_act.size() * 4, cudaMemcpyHostToDevice));
    GemvArgs d{};
    d.seg[0] = {dwd.p, nullptr, dout.as<float>(), H};
    d.n_seg = 1; d.cols = SF; d.wdt = dt; d.x = dact.as<float>();
    gemv(d, nullptr);
    out.push_back({"shared output", rel_err(dout.get(ref_out.size()), ref_out), tol});
    TT_CUDA_CHECK(cudaMemcpy(dout.p, ref_out.data(), ref_out.size() * 4, cudaMemcpyHostToDevice));
    TT_CUDA_CHECK(cudaMemcpy(dgate.p, ref_gate.data(), 4, cudaMemcpyHostToDevice));
    moe_combine(dx.as<float>(), dpart.as<float>(), nullptr, dw.as<float>(), 1, k, H, dout.as<float>(),
                c.gated ? dgate.as<float>() : nullptr, nullptr);
    out.push_back({"residual", rel_err(dx.get(ref_x.size()), ref_x), 1e-5});
    return out;
}

// A copy: exact. Row lengths of 16-byte multiples take the vector path, others the narrower units.
std::vector<Measured> gather_rows_case(CaseEnv& e, DType dt, int cols) {
    const int n_src = 50;
    auto src = randn(e.rng, size_t(n_src) * cols);
    const auto sb = store(src, dt);
    const std::vector<int32_t> idx = {3, 49, 0, 3, 17, 17, 42, 1, 30};
    Floats ref(idx.size() * size_t(cols));
    for (size_t i = 0; i < idx.size(); ++i)
        std::copy_n(&src[size_t(idx[i]) * cols], cols, &ref[i * size_t(cols)]);
    Dev ds(sb), di(idx), dd(ref.size() * dtype_size(dt));
    gather_rows(ds.p, di.as<int32_t>(), int(idx.size()), cols, dt, dd.p, nullptr);
    return {{"rows", rel_err(dd.get(ref.size(), dt), ref), 0.0}};
}

// ---- gated DeltaNet ----

struct DeltaNetShape {
    int n_k_heads, n_v_heads, dk, dv;
    int n;         // tokens: the prompt (prefill) or the decode steps, one launch each
    DType out_dt;  // f32, or the case's dtype
};

// The mixer between its projections, from a random non-zero state and conv state, against the CPU
// chain of cpu/delta_net.h token by token (conv, q/k norm, gates, the recurrent rule, the gated
// norm): delta_net_decode once per token (from the second launch on, the arrival counters must
// have reset themselves, as graph replays need), or delta_net_prefill over all n tokens (the
// chunked rule against the recurrence). A_log spans exp(-7)..1, so some heads keep the state over
// many chunks and others forget it within a few tokens. The conv state is a copy: exact.
std::vector<Measured> delta_net_case(CaseEnv& e, DType dt, const DeltaNetShape& c, bool prefill, double tol) {
    cpu::DeltaNetDims d;
    d.n_k_heads = c.n_k_heads;
    d.n_v_heads = c.n_v_heads;
    d.k_head_dim = c.dk;
    d.v_head_dim = c.dv;
    d.conv_kernel = 4;
    const int n = c.n, hv = c.n_v_heads, conv_dim = d.conv_dim(), vdim = d.value_dim();
    auto qkv = randn(e.rng, size_t(n) * conv_dim), z = randn(e.rng, size_t(n) * vdim);
    auto a = randn(e.rng, size_t(n) * hv), b = randn(e.rng, size_t(n) * hv);
    auto cw = randn(e.rng, size_t(conv_dim) * d.conv_kernel, 0.5f), dt_bias = randn(e.rng, size_t(hv), 0.5f);
    auto nw = randn(e.rng, size_t(c.dv), 0.3f);
    for (float& w : nw) w += 1.0f;
    Floats a_log(static_cast<size_t>(hv));
    std::uniform_real_distribution<float> log_a(-7.0f, 0.0f);
    for (float& v : a_log) v = log_a(e.rng);
    auto state = randn(e.rng, d.state_floats(), 0.5f), conv_state = randn(e.rng, d.conv_state_floats());
    const auto cwb = store(cw, dt), alb = store(a_log, dt), dtb = store(dt_bias, dt), nwb = store(nw, dt);
    const float eps = 1e-6f;

    Floats ref_state = state, ref_conv = conv_state, y(qkv.size()), g(a.size()), beta(b.size());
    Floats o(static_cast<size_t>(n) * vdim), ref(o.size());
    cpu::causal_conv1d_silu(qkv.data(), n, cw.data(), conv_dim, d.conv_kernel, ref_conv.data(), y.data());
    cpu::delta_net_qk_norm(d, y.data(), n);
    cpu::delta_net_gates(a.data(), b.data(), a_log.data(), dt_bias.data(), hv, n, g.data(), beta.data());
    cpu::gated_delta_rule_recurrent(d, y.data(), g.data(), beta.data(), n, ref_state.data(), o.data(), &e.pool);
    for (size_t r = 0; r < size_t(n) * hv; ++r)
        cpu::gated_rmsnorm(&o[r * c.dv], &z[r * c.dv], nw.data(), eps, &ref[r * c.dv], c.dv);

    const size_t es = dtype_size(c.out_dt);
    Dev dqkv(qkv), dz(z), da(a), db(b), dcw(cwb), dal(alb), ddt(dtb), dnw(nwb), dstate(state), dconv(conv_state);
    Dev dout(ref.size() * es);
    Dev scratch((prefill ? delta_net_prefill_scratch_floats(c.n_k_heads, hv, c.dk, c.dv, n)
                         : delta_net_decode_scratch_floats(hv, c.dv)) * sizeof(float));
    Dev arrivals(std::vector<int>(size_t(c.n_k_heads + hv), 0));
    DeltaNetArgs args{};
    args.conv_w = dcw.p;
    args.a_log = dal.p;
    args.dt_bias = ddt.p;
    args.norm_w = dnw.p;
    args.wdt = dt;
    args.norm_eps = eps;
    args.state = dstate.as<float>();
    args.conv_state = dconv.as<float>();
    args.out_dt = c.out_dt;
    args.n_k_heads = c.n_k_heads;
    args.n_v_heads = hv;
    args.k_head_dim = c.dk;
    args.v_head_dim = c.dv;
    args.conv_kernel = d.conv_kernel;
    args.scratch = scratch.as<float>();
    args.arrivals = arrivals.as<int>();
    for (int t = 0; t < (prefill ? 1 : n); ++t) {
        args.qkv = dqkv.as<float>() + size_t(t) * conv_dim;
        args.z = dz.as<float>() + size_t(t) * vdim;
        args.a = da.as<float>() + size_t(t) * hv;
        args.b = db.as<float>() + size_t(t) * hv;
        args.out = static_cast<uint8_t*>(dout.p) + size_t(t) * vdim * es;
        args.n = prefill ? n : 1;
        if (prefill) delta_net_prefill(args, nullptr);
        else delta_net_decode(args, nullptr);
    }
    return {{"output", rel_err(dout.get(ref.size(), c.out_dt), ref), c.out_dt == DType::f32 ? tol : 1e-2},
            {"state", rel_err(dstate.get(ref_state.size()), ref_state), tol},
            {"conv state", rel_err(dconv.get(ref_conv.size()), ref_conv), 0.0}};
}

struct PerLayerShape {
    int n, n_layers, P, vocab;
    bool host_table;  // the table in mapped pinned host memory (as the backend keeps it), else device memory
};

// Gemma 4's per-layer inputs: the projection's slices scaled, RMS-normed and combined with the
// table's rows (CpuBackend::per_layer_inputs, step by step).
std::vector<Measured> per_layer_inputs_case(CaseEnv& e, DType dt, const PerLayerShape& c, double tol) {
    const int LP = c.n_layers * c.P;
    auto proj = randn(e.rng, size_t(c.n) * LP, 3.0f), table = randn(e.rng, size_t(c.vocab) * LP);
    auto nw = randn(e.rng, size_t(c.P), 0.3f);
    auto tb = store(table, dt), nwb = store(nw, dt);
    std::vector<int32_t> ids(static_cast<size_t>(c.n));
    for (int t = 0; t < c.n; ++t) ids[size_t(t)] = int32_t((uint32_t(t) * 2654435761u + 7u) % uint32_t(c.vocab));
    const float proj_scale = 1.0f / std::sqrt(1536.0f), table_scale = 16.0f, input_scale = float(1.0 / std::sqrt(2.0));
    Floats ref = proj;
    for (int t = 0; t < c.n; ++t)
        for (int l = 0; l < c.n_layers; ++l) {
            float* p = &ref[size_t(t) * LP + size_t(l) * c.P];
            for (int i = 0; i < c.P; ++i) p[i] *= proj_scale;
            cpu::rmsnorm_f32(p, nw.data(), 0.0f, 1e-6f, p, c.P);
            for (int i = 0; i < c.P; ++i)
                p[i] = (p[i] + table[size_t(ids[size_t(t)]) * LP + size_t(l) * c.P + size_t(i)] * table_scale) * input_scale;
        }
    Dev dproj(proj), dnw(nwb), dids(ids);
    std::unique_ptr<Dev> dtable;
    void* host = nullptr;
    const void* table_ptr = nullptr;
    if (c.host_table) {
        TT_CUDA_CHECK(cudaHostAlloc(&host, tb.size(), cudaHostAllocMapped));
        std::copy(tb.begin(), tb.end(), static_cast<uint8_t*>(host));
        void* d = nullptr;
        TT_CUDA_CHECK(cudaHostGetDevicePointer(&d, host, 0));
        table_ptr = d;
    } else {
        dtable = std::make_unique<Dev>(tb);
        table_ptr = dtable->p;
    }
    PerLayerInputArgs a{};
    a.proj = dproj.as<float>();
    a.table = table_ptr;
    a.ids = dids.as<int32_t>();
    a.norm_w = dnw.p;
    a.wdt = dt;
    a.norm_offset = 0;
    a.norm_eps = 1e-6f;
    a.proj_scale = proj_scale;
    a.table_scale = table_scale;
    a.input_scale = input_scale;
    a.n = c.n;
    a.n_layers = c.n_layers;
    a.per_layer_dim = c.P;
    per_layer_inputs(a, nullptr);
    const Floats got = dproj.get(ref.size());
    if (host) TT_CUDA_CHECK(cudaFreeHost(host));
    return {{"per-layer inputs", rel_err(got, ref), tol}};
}

// act(g) * the layer's slice of the per-layer inputs (rows ld_pli apart), out in the case's dtype.
std::vector<Measured> per_layer_gate_act_case(CaseEnv& e, DType dt, int n, int P, int n_layers, int layer, GateAct act, double tol) {
    const int LP = n_layers * P;
    auto g = randn(e.rng, size_t(n) * P, 2.0f), pli = randn(e.rng, size_t(n) * LP);
    Floats ref(static_cast<size_t>(n) * P);
    for (int t = 0; t < n; ++t)
        for (int i = 0; i < P; ++i)
            ref[size_t(t) * P + size_t(i)] = act_ref(act, g[size_t(t) * P + size_t(i)]) * pli[size_t(t) * LP + size_t(layer) * P + size_t(i)];
    Dev dg(g), dpli(pli), dout(ref.size() * dtype_size(dt));
    per_layer_gate_act(dg.as<float>(), dpli.as<float>() + size_t(layer) * P, LP, n, P, act, dout.p, dt, nullptr);
    return {{act_name(act), rel_err(dout.get(ref.size(), dt), ref), tol}};
}

std::vector<Measured> to_dtype_case(CaseEnv& e, DType dt, int64_t n) {
    auto x = randn(e.rng, size_t(n));
    Floats ref = x;
    store(ref, dt);
    Dev dx(x), dout(size_t(n) * dtype_size(dt));
    to_dtype(dx.as<float>(), n, dout.p, dt, nullptr);
    return {{"rounded", rel_err(dout.get(size_t(n), dt), ref), 0.0}};  // round to nearest even on both sides: exact
}

// ---- the table ----

constexpr DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16, i8 = DType::i8;

// The doctor's tolerance: f32 outputs 1e-4 (summation order only), bf16 outputs 1e-2 (their own
// rounding on top).
double quick_tol(DType out) { return out == f32 ? 1e-4 : 1e-2; }

const char* scaling_name(RopeScaling s) {
    switch (s) {
    case RopeScaling::none: return "none";
    case RopeScaling::linear: return "linear";
    case RopeScaling::llama3: return "llama3";
    case RopeScaling::yarn: return "yarn";
    default: return "other";
    }
}

std::vector<KernelCase> build_table() {
    std::vector<KernelCase> t;
    auto add = [&](std::string op, DType dt, std::string shape, bool quick, std::function<std::vector<Measured>(CaseEnv&)> fn) {
        t.push_back({std::move(op), dt, std::move(shape), quick, std::move(fn)});
    };

    for (DType dt : {f32, bf16})
        add("cublas gemm", dt, "rows 96 cols 192 n 5", true, [=](CaseEnv& e) { return cublas_gemm_case(e, dt, 1e-4); });

    auto gemv_shape = [](const GemvShape& g) {
        return fmt::format("rows {} cols {}, {} segment(s){}{}", g.rows, g.cols, g.n_seg, g.accumulate ? ", accumulate" : "",
                           g.bias ? ", bias" : "");
    };
    auto add_gemv = [&](DType dt, const GemvShape& g, bool quick, double tol) {
        add(g.prenorm ? "gemv prenorm" : "gemv", dt, gemv_shape(g), quick, [=](CaseEnv& e) { return gemv_case(e, dt, g, tol); });
    };
    for (DType dt : {f32, bf16}) add_gemv(dt, {257, 200, false, false, true, 1}, true, 1e-4);
    // prenorm: three segments sharing the normalized input (q, k, v), biases, accumulate into y.
    for (DType dt : {f32, bf16}) add_gemv(dt, {257, 200, true, true, true, 3}, true, 1e-4);
    const GemvShape gemv_sweep[] = {{64, 64, false, false, false, 1},   {4096, 1024, true, false, false, 3},
                                    {333, 172, true, true, true, 1},    {1000, 4096, false, true, false, 2},
                                    {257, 24, true, false, true, 3},    {2048, 14336 / 4, false, false, true, 1},
                                    // few rows, long columns: several warps share a row (column slices)
                                    {64, 8192, true, true, true, 1},    {24, 2048, false, false, false, 1},
                                    {96, 4096, false, true, true, 3}};
    for (DType dt : {f32, f16, bf16})
        for (const GemvShape& g : gemv_sweep) add_gemv(dt, g, false, 2e-5);
    // Gemma's fused post-norm (hidden 1536: E2B; 4096 from 14336 columns: a sliced launch) and
    // Gemma 4's gated per-layer input (256 rows).
    for (DType dt : {f32, bf16})
        for (const GemvFusedShape& c : {GemvFusedShape{1536, 2048, true, false, 3}, {1536, 256, true, true, 3},
                                        {4096, 14336, true, true, 2}, {256, 1536, false, false, 2}, {33, 72, true, true, 2}})
            add("gemv fused", dt, fmt::format("rows {} cols {}, {}, {} launches", c.rows, c.cols,
                                              c.post ? (c.scale ? "post-norm + row scale" : "post-norm") : "gated output", c.reps),
                dt == f32 && c.rows == 33, [=](CaseEnv& e) { return gemv_fused_case(e, dt, c, 1e-5); });

    // Gemma's deferred post-norm as the next GEMV's input (hidden 1536: E2B's q/k/v with the layer
    // scalar, its per-layer gate; 5376: the 31B, three staged rows over 48 KB of shared memory;
    // 64 rows of 8192: several warps a row; 72 columns: the scalar path).
    for (DType dt : {f32, bf16})
        for (const GemvPendingShape& c : {GemvPendingShape{2560, 1536, true, true, false}, {256, 1536, false, false, true},
                                          {1024, 5376, true, true, false}, {64, 8192, false, true, false},
                                          {33, 72, true, true, false}, {20, 72, false, false, true}})
            add("gemv pending", dt,
                fmt::format("rows {} cols {}{}{}{}", c.rows, c.cols, c.scale ? ", row scale" : "", c.prenorm ? ", pre-norm" : "",
                            c.mul ? ", gated output" : ""),
                dt == f32 && c.rows == 33, [=](CaseEnv& e) { return gemv_pending_case(e, dt, c, 1e-5); });

    // Quantized weights: INT8 rows (odd lengths take the scalar path), INT4 in groups of 32/64/128,
    // with the pre-norm, biases, accumulate and three segments; the 8B shapes (4096, 14336); rows
    // that end inside a tensor-core tile and within a step (208 INT8, 160 INT4 columns).
    for (DType dt : {f32, bf16})
        for (const QuantShape& c : {QuantShape{QuantScheme::int8, 0, 257, 200, false, false, true, 1},
                                    {QuantScheme::int8, 0, 333, 172, true, true, true, 3},
                                    {QuantScheme::int8, 0, 4096, 4096, true, false, false, 3},
                                    {QuantScheme::int8, 0, 4096, 14336, false, true, false, 1},
                                    {QuantScheme::int4, 32, 257, 192, true, true, true, 3},
                                    {QuantScheme::int4, 64, 1000, 4096, false, true, true, 2},
                                    {QuantScheme::int4, 128, 4096, 14336, false, true, false, 1},
                                    {QuantScheme::int4, 32, 6144, 4096, true, false, false, 3},
                                    {QuantScheme::int4, 32, 1, 64, false, false, false, 1},
                                    {QuantScheme::int8, 0, 37, 208, true, true, true, 2},
                                    {QuantScheme::int4, 32, 45, 160, true, false, true, 1},
                                    // x's digits near CUDA's 48 KiB default with the static partial sums
                                    // beside them (launch.cuh, allow_dynamic_smem): Qwen2.5-3B's and
                                    // Qwen3-8B's down (11008, 12288 columns)
                                    {QuantScheme::int4, 32, 40, 11008, false, true, false, 1},
                                    {QuantScheme::int4, 128, 40, 12288, false, false, false, 1},
                                    {QuantScheme::int8, 0, 40, 12288, false, true, false, 1}})
            add(fmt::format("gemv {}", quant_scheme_name(c.q)), dt,
                fmt::format("rows {} cols {}{}, {} segment(s){}{}{}", c.rows, c.cols, c.q == QuantScheme::int4 ? fmt::format(" group {}", c.group) : "",
                            c.n_seg, c.prenorm ? ", pre-norm" : "", c.accumulate ? ", accumulate" : "", c.bias ? ", bias" : ""),
                dt == f32 && c.rows == 257, [=](CaseEnv& e) { return gemv_quant_case(e, dt, c, quant_tol(c.q, c.cols)); });
    for (DType dt : {f32, bf16})
        for (auto [q, group, rows, cols] : {std::tuple{QuantScheme::int8, 0, 172, 136}, {QuantScheme::int8, 0, 3072, 1024},
                                            {QuantScheme::int4, 32, 509, 128}, {QuantScheme::int4, 32, 14336, 4096},
                                            {QuantScheme::int4, 128, 40, 8192}, {QuantScheme::int8, 0, 100, 208},
                                            {QuantScheme::int4, 32, 77, 160}})
            add(fmt::format("gemv_gated {}", quant_scheme_name(q)), dt, fmt::format("rows {} cols {}, silu and gelu_tanh", rows, cols),
                dt == f32 && (rows == 172 || rows == 509), [=, q = q, group = group, rows = rows, cols = cols](CaseEnv& e) {
                    return gemv_gated_quant_case(e, dt, q, group, rows, cols, quant_tol(q, cols));
                });
    for (DType dt : {f32, f16, bf16})
        for (auto [q, group, rows, cols] : {std::tuple{QuantScheme::int8, 0, 37, 200}, {QuantScheme::int4, 32, 37, 192},
                                            {QuantScheme::int4, 128, 300, 4096}})
            add(fmt::format("dequantize {}", quant_scheme_name(q)), dt, fmt::format("rows {} cols {}", rows, cols), dt == bf16 && rows == 37,
                [=, q = q, group = group, rows = rows, cols = cols](CaseEnv& e) { return dequantize_case(e, dt, q, group, rows, cols); });

    auto add_gated = [&](DType dt, int rows, int cols, bool quick, double tol) {
        add("gemv_gated", dt, fmt::format("rows {} cols {}, silu and gelu_tanh", rows, cols), quick,
            [=](CaseEnv& e) { return gemv_gated_case(e, dt, rows, cols, tol); });
    };
    for (DType dt : {f32, bf16}) add_gated(dt, 172, 136, true, 1e-4);
    for (DType dt : {f32, f16, bf16})
        for (auto [rows, cols] : {std::pair{128, 64}, {3072, 1024}, {172, 64}, {509, 136}, {40, 8192}})
            add_gated(dt, rows, cols, false, 1e-4);

    auto add_norm = [&](DType dt, const NormShape& c, bool quick, double x_tol, double out_tol) {
        add("residual_rmsnorm", dt,
            fmt::format("n {} hidden {}{}, output {}", c.n, c.hidden, c.post ? ", post-norm" : "", dtype_name(c.out_dt)), quick,
            [=](CaseEnv& e) { return residual_rmsnorm_case(e, dt, c, x_tol, out_tol); });
    };
    // Gemma-style post-norm, the output in the case's dtype.
    for (DType dt : {f32, bf16}) add_norm(dt, {3, 200, true, dt}, true, 1e-5, quick_tol(dt));
    for (DType dt : {f32, f16, bf16})
        for (int hidden : {64, 172, 4096, 5000})
            for (bool post : {false, true}) add_norm(dt, {7, hidden, post, f32}, false, 1e-6, 1e-5);
    // Gemma 4's layer_scalar after the post-normed add (and alone, with no add: the MoE-free, PLE-free case).
    auto add_norm_scaled = [&](DType dt, const NormShape& c) {
        add("residual_rmsnorm", dt, fmt::format("n {} hidden {}{}, row scale, output {}", c.n, c.hidden, c.post ? ", post-norm" : "",
                                                dtype_name(c.out_dt)),
            false, [=](CaseEnv& e) { return residual_rmsnorm_case(e, dt, c, 1e-6, 1e-5); });
    };
    for (DType dt : {f32, bf16})
        for (bool post : {false, true}) add_norm_scaled(dt, {5, 1536, post, f32, true});

    auto add_rope = [&](DType dt, const RopeShape& c, bool quick, const RopeTols& tol) {
        add("rope_qkv", dt,
            fmt::format("heads {}/{} head_dim {} rotary {} n {} pos {}{}{}, {} scaling, caches {}", c.n_heads, c.n_kv, c.hd,
                        c.rotary, c.n, c.pos0, c.norm ? ", q/k norm" : "", c.bias ? ", bias" : "", scaling_name(c.scaling),
                        dtype_name(c.q8 ? i8 : c.caches_in_dt ? dt : f32)),
            quick, [=](CaseEnv& e) { return rope_case(e, dt, c, tol); });
    };
    // q/k norm, biases, llama3 scaling, positions past the start; caches and q_out in the case's dtype.
    for (DType dt : {f32, bf16})
        add_rope(dt, {8, 2, 64, 64, 3, 100, true, true, RopeScaling::llama3, true}, true,
                 {quick_tol(f32), quick_tol(dt), quick_tol(dt), quick_tol(dt)});
    const RopeShape rope_sweep[] = {{4, 2, 16, 16, 5, 0, false, false, RopeScaling::none, false},
                                    {16, 8, 128, 128, 3, 100, true, true, RopeScaling::llama3, false},
                                    {8, 1, 64, 32, 9, 7, false, true, RopeScaling::yarn, false},
                                    {32, 8, 128, 128, 1, 4000, true, false, RopeScaling::linear, false}};
    for (DType dt : {f32, f16, bf16})
        for (const RopeShape& c : rope_sweep) add_rope(dt, c, false, {1e-5, 1e-5, 1e-5, 1e-6});
    // The 8-bit KV cache (rows and scales read back and dequantized against the CPU's rounding; a
    // row element on a rounding tie of its own f32 value may land one step over, so 1e-2).
    for (DType dt : {f32, bf16}) {
        RopeShape c8{16, 8, 128, 128, 3, 100, true, true, RopeScaling::llama3, false};
        c8.q8 = true;
        add_rope(dt, c8, false, {1e-5, quick_tol(dt), 1e-2, 1e-2});
    }
    // Gemma 4: the full layers' head_dim 512 with proportional RoPE (64 of 256 pairs rotate) and
    // the v-norm; a KV-shared layer (q only); attention_k_eq_v; sliding layers' head_dim 256.
    auto add_rope_g4 = [&](DType dt, const RopeShape& c) {
        add("rope_qkv", dt,
            fmt::format("Gemma 4: heads {}/{} head_dim {} n {} pos {}, {} ({} pairs rotated){}{}{}", c.n_heads, c.n_kv, c.hd, c.n, c.pos0,
                        c.scaling == RopeScaling::proportional ? "proportional" : "default", c.rotated_pairs, c.v_norm ? ", v-norm" : "",
                        c.shared ? ", KV-shared (q only)" : "", c.k_eq_v ? ", k_eq_v" : ""),
            false, [=](CaseEnv& e) { return rope_case(e, dt, c, {1e-5, 1e-5, 1e-5, 1e-5}); });
    };
    for (DType dt : {f32, bf16}) {
        add_rope_g4(dt, {8, 1, 512, 512, 5, 700, true, false, RopeScaling::proportional, false, true, false, false, 64});
        add_rope_g4(dt, {8, 1, 256, 256, 7, 3, true, false, RopeScaling::none, false, true, false, false, 0});
        add_rope_g4(dt, {8, 1, 512, 512, 5, 700, true, false, RopeScaling::proportional, false, false, true, false, 64});
        add_rope_g4(dt, {8, 2, 512, 512, 3, 9, true, false, RopeScaling::proportional, false, true, false, true, 64});
    }

    // Where the tensor-core kernel applies (16-bit caches, head_dim 64/128) each shape runs on both
    // kernels: the CUDA-core one keeps q and the probabilities in f32 (exact up to the sums' order),
    // the tensor-core one rounds them to the cache's dtype, as prefill does (prefill's bounds).
    const auto mma_tol = [](DType dt) { return dt == bf16 ? 1e-2 : 4e-3; };
    auto add_decode = [&](DType kv, const DecodeShape& c, bool quick, double tol) {
        const std::string shape = fmt::format("heads {}/{} head_dim {} len {} window {} softcap {:g}, {} launch(es)", c.n_heads,
                                              c.n_kv, c.hd, c.len, c.window, c.softcap, c.reps);
        if (decode_attention_tensor_cores(kv, c.hd, c.n_heads / c.n_kv)) {
            add("decode_attention", kv, shape + ", tensor cores", quick,
                [=](CaseEnv& e) { return decode_attention_case(e, kv, c, false, mma_tol(kv)); });
            add("decode_attention", kv, shape + ", CUDA cores", false,
                [=](CaseEnv& e) { return decode_attention_case(e, kv, c, true, tol); });
        } else {
            add("decode_attention", kv, shape, quick, [=](CaseEnv& e) { return decode_attention_case(e, kv, c, false, tol); });
        }
    };
    // GQA (4 query heads per KV head), a sequence long enough to be split over blocks, soft-capping.
    for (DType kv : {f32, bf16}) add_decode(kv, {8, 2, 64, 300, 0, 50.0f, 1}, true, 1e-4);
    const DecodeShape decode_sweep[] = {{4, 2, 16, 1, 0, 0, 2},       {4, 2, 16, 37, 8, 0, 2},         {32, 8, 128, 511, 0, 0, 2},
                                        {16, 8, 128, 3000, 0, 0, 2},  {8, 1, 64, 1025, 300, 50.0f, 2}, {12, 4, 256, 77, 0, 0, 2},
                                        {32, 8, 128, 16384, 0, 0, 2},
                                        // the first position; Qwen2.5-0.5B's group of 7 across a split edge
                                        {32, 8, 128, 1, 0, 0, 2},     {14, 2, 64, 129, 0, 0, 2},
                                        // Gemma 4: head_dim 512 (full layers), one KV head; with a window and soft-capping
                                        {8, 1, 512, 700, 0, 0, 2},    {8, 1, 512, 3000, 512, 30.0f, 2},
                                        // head_dim 96 (Phi-3), and the largest GQA group (16 query heads per KV head)
                                        {32, 32, 96, 200, 0, 0, 2},   {16, 1, 128, 70, 0, 0, 2}};
    for (DType kv : {f32, f16, bf16, i8})
        for (const DecodeShape& c : decode_sweep) add_decode(kv, c, false, 1e-5);

    // The last: a split whose newest row lies past the stages the tensor-core kernel issues before
    // pdl_wait (8 chunks of 16 keys), so that row is fenced and read back from the cache.
    const FusedShape fused_sweep[] = {{4, 2, 16, 16, 1, 0, false, false},   {16, 8, 128, 128, 300, 0, true, true},
                                      {8, 1, 64, 32, 1025, 100, false, true}, {32, 8, 128, 128, 17, 0, true, false},
                                      {32, 8, 128, 128, 5000, 0, true, false}};
    for (DType dt : {f32, f16, bf16})
        for (const FusedShape& c : fused_sweep) {
            const std::string shape = fmt::format("heads {}/{} head_dim {} rotary {} len {} window {}{}{}", c.n_heads, c.n_kv, c.hd,
                                                  c.rotary, c.len, c.window, c.norm ? ", q/k norm" : "", c.bias ? ", bias" : "");
            const double tol = dt == f32 ? 1e-5 : 1e-2;
            const bool mma = decode_attention_tensor_cores(dt, c.hd, c.n_heads / c.n_kv);
            add("decode_attention rope", dt, shape + (mma ? ", tensor cores" : ""), false,
                [=](CaseEnv& e) { return decode_attention_rope_case(e, dt, c, false, tol); });
            if (mma)
                add("decode_attention rope", dt, shape + ", CUDA cores", false,
                    [=](CaseEnv& e) { return decode_attention_rope_case(e, dt, c, true, tol); });
        }
    // Gemma 4 (E2B's heads: 8 query heads, 1 KV head): the full layers' head_dim 512 with
    // proportional RoPE and the v-norm; a KV-shared layer reading the cache as its source left it;
    // attention_k_eq_v; the sliding layers' head_dim 256 with a window.
    const FusedShape g4_fused[] = {{8, 1, 512, 512, 600, 0, true, false, true, false, false, 64},
                                   {8, 1, 512, 512, 600, 0, true, false, true, true, false, 64},
                                   {8, 1, 512, 512, 40, 0, true, false, true, false, true, 64},
                                   {8, 1, 256, 256, 900, 512, true, false, true, false, false, 0},
                                   {8, 1, 256, 256, 900, 512, true, false, true, true, false, 0}};
    // The 8-bit KV cache beside f32 / bf16 weights (the new row quantized in the kernel).
    for (DType dt : {f32, bf16})
        for (FusedShape c : {fused_sweep[1], fused_sweep[2], g4_fused[0], g4_fused[1]}) {
            c.q8 = true;
            const std::string shape = fmt::format("8-bit KV cache: heads {}/{} head_dim {} len {} window {}{}{}", c.n_heads, c.n_kv,
                                                  c.hd, c.len, c.window, c.v_norm ? ", v-norm" : "", c.shared ? ", KV-shared" : "");
            const bool mma = decode_attention_tensor_cores(i8, c.hd, c.n_heads / c.n_kv);
            add("decode_attention rope", dt, shape + (mma ? ", tensor cores" : ""), false,
                [=](CaseEnv& e) { return decode_attention_rope_case(e, dt, c, false, 1e-2); });
            if (mma)
                add("decode_attention rope", dt, shape + ", CUDA cores", false,
                    [=](CaseEnv& e) { return decode_attention_rope_case(e, dt, c, true, 1e-2); });
        }
    for (DType dt : {f32, bf16})
        for (const FusedShape& c : g4_fused)
            add("decode_attention rope", dt,
                fmt::format("Gemma 4: heads {}/{} head_dim {} len {} window {}{}{}{}", c.n_heads, c.n_kv, c.hd, c.len, c.window,
                            c.rotated_pairs ? ", proportional" : "", c.shared ? ", KV-shared" : "", c.k_eq_v ? ", k_eq_v" : ""),
                false, [=](CaseEnv& e) { return decode_attention_rope_case(e, dt, c, false, dt == f32 ? 1e-5 : 1e-2); });

    auto add_prefill = [&](DType dt, const PrefillShape& c, bool quick, double tol) {
        add("prefill_attention", dt,
            fmt::format("n_q {} q_pos0 {} heads {}/{} head_dim {} window {} softcap {:g} q scale {:g}{}", c.n_q, c.q_pos0,
                        c.n_heads, c.n_kv, c.hd, c.window, c.softcap, c.q_scale, c.fused_rows ? ", fused qkv rows" : ""),
            quick, [=](CaseEnv& e) { return prefill_attention_case(e, dt, c, tol); });
    };
    // GQA, 40 new queries after 13 cached positions (a partial tile and a prefix), soft-capping;
    // bf16/f16 only (the dtypes the flash kernel runs).
    for (DType dt : {f16, bf16}) add_prefill(dt, {40, 13, 4, 2, 64, 0, 30.0f, 1, 1, false}, true, 1e-2);
    const PrefillShape prefill_sweep[] = {
        {1, 0, 4, 2, 64, 0, 0, 1, 1, true},          {1, 300, 8, 2, 128, 0, 0, 1, 1, true},      // one query, with and without a prefix
        {37, 0, 4, 4, 64, 0, 0, 1, 1, true},         {200, 91, 16, 2, 128, 0, 0, 1, 1, true},    // group 1; group 8, chunked prefill
        {200, 91, 8, 4, 128, 16, 0, 1, 1, true},     {333, 700, 8, 1, 64, 100, 50, 4, 1, true},  // window; window + softcap, group 8
        {130, 0, 8, 8, 256, 0, 10, 4, 1, true},      {300, 45, 8, 4, 256, 40, 0, 1, 1, true},    // head_dim 256: softcap, window
        {512, 0, 32, 8, 128, 0, 0, 1, 3, true},      {1000, 1048, 8, 2, 128, 0, 0, 1, 5, true},
        {2048, 0, 32, 8, 128, 0, 0, 1, 9, true},     {129, 0, 4, 2, 128, 64, 0, 1, 1, true},     // the 8B shape; tile edges
    };
    for (DType dt : {bf16, f16})
        for (const PrefillShape& c : prefill_sweep) add_prefill(dt, c, false, dt == bf16 ? 1e-2 : 4e-3);

    auto add_softmax = [&](DType out, const SoftmaxShape& c, bool quick, double tol) {
        add("masked_softmax", out,
            fmt::format("heads {} queries {} keys {} q0 {} window {}, output {}", c.heads, c.nq, c.nk, c.q0, c.window,
                        dtype_name(out)),
            quick, [=](CaseEnv& e) { return masked_softmax_case(e, out, c, tol); });
    };
    // Causal mask with queries starting at position 11, and a sliding window of 6.
    for (DType out : {f32, bf16}) add_softmax(out, {2, 9, 20, 11, 6}, true, quick_tol(out));
    for (const SoftmaxShape& c : {SoftmaxShape{2, 5, 5, 0, 0}, {4, 64, 100, 36, 0}, {3, 17, 40, 23, 8}, {1, 1, 9, 8, 3}})
        add_softmax(f32, c, false, 1e-5);

    // A copy and one multiply: exact. (The doctor allowed 1e-6, the GPU tests 0 on this same
    // shape; one row per dtype now holds both to 0.)
    for (DType dt : {f32, f16, bf16})
        add("embedding", dt, "vocab 301 hidden 72, 5 ids, scale 2.5", dt != f16, [=](CaseEnv& e) { return embedding_case(e, dt, 0.0); });

    for (int n : {1, 2048, 151936, 0})
        add("argmax", f32, n > 0 ? fmt::format("n {}", n) : "n 1000, ties", n == 151936 || n == 0,
            [=](CaseEnv& e) { return argmax_case(e, n); });

    auto add_act = [&](DType dt, const ActShape& c, bool quick, double tol) {
        add("gated_act", dt,
            fmt::format("n 3 ffn 100, input {}{}, output {}, silu and gelu_tanh", dtype_name(c.in_dt), c.bias ? ", bias" : "",
                        dtype_name(c.out_in_dt ? dt : f32)),
            quick, [=](CaseEnv& e) { return gated_act_case(e, dt, c, tol); });
    };
    for (DType dt : {f32, bf16}) add_act(dt, {f32, true, true}, true, dt == f32 ? 1e-5 : quick_tol(dt));
    add_act(f32, {f32, false, false}, false, 1e-6);
    add_act(bf16, {bf16, false, false}, false, 1e-6);  // bf16 inputs (the prefill's gate/up GEMM output)

    auto add_route = [&](const RouteShape& c, bool quick) {
        add("moe_route", f32,
            fmt::format("n {} experts {} top {}{}{}{}", c.n, c.n_experts, c.top_k, c.norm_topk ? ", renormalised" : "",
                        c.ties ? ", tied logits" : "", c.table ? ", pointer lookup" : ""),
            quick, [=](CaseEnv& e) { return moe_route_case(e, c); });
    };
    add_route({5, 8, 2, true, false, true}, true);  // Mixtral's 8 experts, top 2
    const RouteShape route_sweep[] = {{3, 128, 8, true, false, true},  {3, 128, 8, false, false, false},  // Qwen3-30B-A3B
                                      {4, 8, 2, true, true, true},     {4, 64, 6, false, true, true},     // ties
                                      {6, 128, 8, true, true, false},  {2, 256, 16, true, false, true},
                                      {37, 60, 4, false, false, true}, {1, 1, 1, true, false, true}};
    for (const RouteShape& c : route_sweep) add_route(c, false);

    auto add_moe = [&](DType dt, const MoeShape& c, bool quick, double tol) {
        add("moe_ffn", dt,
            fmt::format("hidden {} ffn {}, top {} of {} experts{}, {}: route, gated, down, combine", c.hidden, c.ffn, c.top_k,
                        c.n_experts, c.norm_topk ? " renormalised" : "", act_name(c.act)),
            quick, [=](CaseEnv& e) { return moe_ffn_case(e, dt, c, tol); });
    };
    // The tiny test fixture's shape (hidden 64, ffn 32, top 2 of 8).
    for (DType dt : {f32, bf16}) add_moe(dt, {64, 32, 8, 2, true, GateAct::silu}, true, 1e-4);
    const MoeShape moe_sweep[] = {
        {64, 96, 4, 2, true, GateAct::silu},          // the other fixture
        {66, 34, 6, 3, false, GateAct::silu},         // rows of odd lengths: the scalar path (f32, f16, bf16 alike)
        {200, 72, 16, 4, false, GateAct::gelu_tanh},  // short rows, a partial vector tail
        {4096, 64, 4, 2, false, GateAct::silu},       // few gated rows, long ones: warps share a row (kslices)
        {1024, 2816, 8, 2, true, GateAct::silu},      // long down rows: the unrolled loop, kslices
        {63, 64, 4, 2, true, GateAct::silu},          // odd hidden: one down row per warp
    };
    for (DType dt : {f32, f16, bf16})
        for (const MoeShape& c : moe_sweep) add_moe(dt, c, false, 1e-4);
    add_moe(bf16, {2048, 768, 128, 8, true, GateAct::silu}, false, 1e-4);  // Qwen3-30B-A3B
    // Quantized experts (quant.cu's tensor-core GEMV through the routed bases): the fixtures'
    // shapes, groups of 32/64/128, gelu, rows ending inside a step (48 INT8 weights), several
    // blocks sharing one expert's down rows, and Qwen3-30B-A3B.
    auto add_moe_quant = [&](DType dt, const MoeShape& c, QuantScheme q, int group, bool quick) {
        add(fmt::format("moe_ffn {}", quant_scheme_name(q)), dt,
            fmt::format("hidden {} ffn {}, top {} of {} experts{}, {}{}: route, gated, down, combine", c.hidden, c.ffn, c.top_k,
                        c.n_experts, c.norm_topk ? " renormalised" : "", act_name(c.act),
                        q == QuantScheme::int4 ? fmt::format(", groups of {}", group) : ""),
            quick, [=](CaseEnv& e) { return moe_ffn_case(e, dt, c, k_quant_mma_tol, q, group); });  // (experts: tensor cores always)
    };
    for (DType dt : {f32, bf16}) {
        add_moe_quant(dt, {64, 32, 8, 2, true, GateAct::silu}, QuantScheme::int8, 0, dt == bf16);
        add_moe_quant(dt, {64, 32, 8, 2, true, GateAct::silu}, QuantScheme::int4, 32, dt == bf16);
        add_moe_quant(dt, {64, 96, 4, 2, true, GateAct::gelu_tanh}, QuantScheme::int4, 32, false);
        add_moe_quant(dt, {256, 48, 6, 3, false, GateAct::silu}, QuantScheme::int8, 0, false);
        add_moe_quant(dt, {4096, 64, 4, 2, false, GateAct::silu}, QuantScheme::int8, 0, false);
        add_moe_quant(dt, {1024, 2816, 8, 2, true, GateAct::silu}, QuantScheme::int4, 128, false);
        add_moe_quant(dt, {512, 256, 16, 4, true, GateAct::silu}, QuantScheme::int4, 64, false);
    }
    add_moe_quant(bf16, {2048, 768, 128, 8, true, GateAct::silu}, QuantScheme::int8, 0, false);
    add_moe_quant(bf16, {2048, 768, 128, 8, true, GateAct::silu}, QuantScheme::int4, 32, false);

    auto add_combine = [&](const CombineShape& c, bool quick) {
        add("moe_combine", f32,
            fmt::format("n {} top {} hidden {}{}{}", c.n, c.top_k, c.hidden, c.rows ? ", row index" : "", shared_term_name(c.shared)),
            quick, [=](CaseEnv& e) { return moe_combine_case(e, c); });
    };
    add_combine({3, 2, 64, true, SharedTerm::none}, true);
    add_combine({3, 2, 64, true, SharedTerm::gated}, true);
    for (const CombineShape& c :
         {CombineShape{1, 8, 2048, false, SharedTerm::none}, {7, 2, 100, true, SharedTerm::none}, {5, 4, 33, false, SharedTerm::none},
          {300, 8, 300, true, SharedTerm::none}, {1, 8, 2048, false, SharedTerm::gated}, {1, 4, 3584, false, SharedTerm::ungated},
          {7, 2, 100, true, SharedTerm::ungated}, {300, 8, 300, true, SharedTerm::gated}})
        add_combine(c, false);

    auto add_shared = [&](DType dt, const SharedExpertShape& c, bool quick, double tol) {
        add("moe_shared_expert", dt,
            fmt::format("hidden {} shared ffn {}, router of {} experts, top {}{}, {}: router + gate GEMV, gated, down, combine",
                        c.hidden, c.shared_ffn, c.n_experts, c.top_k, c.gated ? ", sigmoid gate" : ", no gate", act_name(c.act)),
            quick, [=](CaseEnv& e) { return moe_shared_expert_case(e, dt, c, tol); });
    };
    // The Qwen3.5-MoE fixture's shape (hidden 64, shared ffn 32, top 2 of 8).
    for (DType dt : {f32, bf16}) add_shared(dt, {64, 32, 8, 2, true, GateAct::silu}, true, 1e-4);
    const SharedExpertShape shared_sweep[] = {
        {64, 32, 8, 2, false, GateAct::silu},          // no gate: the router's GEMV alone
        {66, 34, 6, 3, true, GateAct::silu},           // rows of odd lengths: the scalar path
        {200, 72, 16, 4, true, GateAct::gelu_tanh},    // a partial vector tail
        {2048, 512, 256, 8, true, GateAct::silu},      // Qwen3.5-35B-A3B
        {2048, 5632, 60, 4, true, GateAct::silu},      // Qwen1.5-MoE-A2.7B (Qwen2-MoE)
    };
    for (DType dt : {f32, f16, bf16})
        for (const SharedExpertShape& c : shared_sweep) add_shared(dt, c, false, 1e-4);

    // Gemma 4's per-layer inputs: E2B's 35 layers of 256 (decode, one token, the table in mapped
    // host memory as the backend keeps it; a prefill chunk), and a tiny odd shape.
    for (DType dt : {f32, bf16}) {
        for (const PerLayerShape& c : {PerLayerShape{1, 35, 256, 3000, true}, {300, 35, 256, 3000, true}, {9, 6, 8, 256, false}})
            add("per_layer_inputs", dt, fmt::format("n {} layers {} P {}{}", c.n, c.n_layers, c.P, c.host_table ? ", table in host memory" : ""),
                dt == f32 && c.n == 9, [=](CaseEnv& e) { return per_layer_inputs_case(e, dt, c, 1e-5); });
        for (GateAct act : {GateAct::gelu_tanh, GateAct::silu})
            add("per_layer_gate_act", dt, fmt::format("n 37 P 256 layer 12 of 35, {}", act_name(act)), dt == f32 && act == GateAct::gelu_tanh,
                [=](CaseEnv& e) { return per_layer_gate_act_case(e, dt, 37, 256, 35, 12, act, dt == f32 ? 1e-6 : 1e-2); });
    }
    for (DType dt : {f16, bf16})
        add("to_dtype", dt, "1000003 values", dt == bf16, [=](CaseEnv& e) { return to_dtype_case(e, dt, 1000003); });

    for (DType dt : {f32, f16, bf16})
        for (int cols : {72, 37})
            add("gather_rows", dt, fmt::format("50 rows of {}, 9 picks with repeats", cols), dt == f32 && cols == 72,
                [=](CaseEnv& e) { return gather_rows_case(e, dt, cols); });

    auto add_delta_net = [&](bool prefill, DType dt, const DeltaNetShape& c, bool quick, double tol) {
        add(prefill ? "delta_net_prefill" : "delta_net_decode", dt,
            fmt::format("heads {}/{} dk {} dv {}, {} {}, output {}", c.n_k_heads, c.n_v_heads, c.dk, c.dv, c.n,
                        prefill ? "tokens" : "steps", dtype_name(c.out_dt)),
            quick, [=](CaseEnv& e) { return delta_net_case(e, dt, c, prefill, tol); });
    };
    // Decode: Qwen3.5-0.8B (16/16 heads of 128) and the 9B class (16/32), a tiny shape and an odd
    // one (3 value heads per q/k head, dk and dv not multiples of 32: a partial column slice).
    add_delta_net(false, f32, {2, 4, 16, 16, 3, f32}, true, 1e-4);
    add_delta_net(false, bf16, {2, 4, 16, 16, 3, bf16}, false, 1e-4);
    for (DType dt : {f32, bf16})
        for (const DeltaNetShape& c : {DeltaNetShape{16, 16, 128, 128, 2, f32}, {16, 32, 128, 128, 2, dt}, {3, 9, 24, 40, 3, f32}})
            add_delta_net(false, dt, c, false, 1e-4);
    // Prefill: within one chunk, exactly one, one and a token, several with a remainder, and a long
    // prompt (2048 tokens, 32 chunks: where a drifting state would show). bf16 archives scan on the
    // tensor cores (TF32 operands, 2^-11 relative rounding each; measured at most 5.8e-4 on the
    // H200, 3.1e-4 output and 3.7e-4 state after 2048 tokens): 2e-3 for their f32 results;
    // the odd shape (dk 24, dv 40) keeps the f32 FMA scan in both dtypes.
    const auto scan_tol = [](DType dt) { return dt == f32 ? 1e-4 : 2e-3; };
    add_delta_net(true, f32, {2, 4, 16, 16, 65, f32}, true, 1e-4);
    for (DType dt : {f32, bf16})
        for (int n : {1, 63, 64, 65, 200}) {
            if (dt == bf16 || n != 65) add_delta_net(true, dt, {2, 4, 16, 16, n, f32}, false, scan_tol(dt));
            add_delta_net(true, dt, {16, 16, 128, 128, n, dt}, false, scan_tol(dt));
        }
    for (DType dt : {f32, bf16}) {
        add_delta_net(true, dt, {16, 32, 128, 128, 200, dt}, false, scan_tol(dt));
        add_delta_net(true, dt, {16, 16, 128, 128, 2048, f32}, false, scan_tol(dt));
        add_delta_net(true, dt, {3, 9, 24, 40, 130, f32}, false, 1e-4);
    }
    return t;
}

// FNV-1a: a seed that depends on the case alone, not on its place in the table.
uint32_t seed_of(const KernelCase& c) {
    uint32_t h = 2166136261u;
    for (char ch : c.op + "|" + std::string(dtype_name(c.dtype)) + "|" + c.shape) h = (h ^ uint8_t(ch)) * 16777619u;
    return h;
}

}  // namespace

const std::vector<KernelCase>& kernel_cases() {
    static const std::vector<KernelCase> table = build_table();
    return table;
}

std::string kernel_case_id(size_t index) {
    const KernelCase& c = kernel_cases().at(index);
    std::string id;
    for (char ch : c.op) id += std::isalnum(uint8_t(ch)) ? ch : '_';
    return fmt::format("{}_{}_{}", id, dtype_name(c.dtype), index);
}

KernelCheck run_kernel_case(const KernelCase& c, int device) {
    KernelCheck r;
    r.kernel = c.op;
    r.dtype = std::string(dtype_name(c.dtype));
    r.shape = c.shape;
    try {
        TT_CUDA_CHECK(cudaSetDevice(device));
        int n_sms = 0;
        TT_CUDA_CHECK(cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, device));
        std::mt19937 rng(seed_of(c));
        ThreadPool pool(2);
        CaseEnv env{rng, pool, n_sms};
        r.outputs = c.run(env);
        r.passed = !r.outputs.empty();
        double worst = -1;
        for (const Measured& m : r.outputs) {
            r.passed = r.passed && m.err <= m.tol;  // false for NaN
            const double ratio = !std::isfinite(m.err) ? INFINITY : m.tol > 0 ? m.err / m.tol : (m.err > 0 ? INFINITY : 0.0);
            if (ratio > worst) {
                worst = ratio;
                r.rel_err = m.err;
                r.tolerance = m.tol;
            }
        }
    } catch (const Error& e) {
        r.passed = false;
        r.rel_err = INFINITY;
        r.error = e.what();
    }
    return r;
}

}  // namespace tt::cuda
