// The doctor's kernel self-test (see self_test.h). Each case builds random inputs, rounds the
// weights to the case's dtype so that CPU and GPU read identical values, runs the kernel and the
// CPU reference, and compares. The checks follow tests/gpu/test_kernels.cpp on smaller shapes; that
// test sweeps many shapes on the GPU machine, this one answers "does this GPU + driver + build run
// every kernel right" in a fraction of a second on any machine.
#include "backends/cuda/self_test.h"

#include "backends/cpu/ops.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_check.h"
#include "backends/cuda/kernels/kernels.h"
#include "core/dtype.h"
#include "runtime/rope.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <utility>
#include <vector>

namespace tt::cuda {

namespace {

using Floats = std::vector<float>;

struct Rng {
    std::mt19937 g{20240607};
    Floats randn(size_t n, float scale = 1.0f) {
        std::normal_distribution<float> d(0.0f, scale);
        Floats v(n);
        for (auto& x : v) x = d(g);
        return v;
    }
};

// Both sides accumulate the same rounded inputs in f32; only the summation order differs. An output
// stored in bf16 carries its rounding (2^-9 relative) on top.
double tol(DType out) { return out == DType::f32 ? 1e-4 : 1e-2; }

TensorView view(const std::vector<uint8_t>& bytes, DType dt, Shape shape) {
    return TensorView{"self_test", dt, std::move(shape), bytes.data(), bytes.size()};
}

// One output of a case: its relative error and the tolerance it must meet.
struct Measured {
    double err, tol;
};
using CaseFn = std::function<std::vector<Measured>()>;

void run_case(std::vector<KernelCheck>& out, int device, const char* kernel, DType dt, const CaseFn& body) {
    KernelCheck c;
    c.kernel = kernel;
    c.dtype = std::string(dtype_name(dt));
    try {
        TT_CUDA_CHECK(cudaSetDevice(device));
        const std::vector<Measured> ms = body();
        c.passed = !ms.empty();
        double worst = -1;
        for (const Measured& m : ms) {
            const bool ok = m.err <= m.tol;  // false for NaN / inf
            c.passed = c.passed && ok;
            const double ratio = !std::isfinite(m.err) ? INFINITY : m.tol > 0 ? m.err / m.tol : (m.err > 0 ? INFINITY : 0.0);
            if (ratio > worst) {
                worst = ratio;
                c.rel_err = m.err;
                c.tolerance = m.tol;
            }
        }
    } catch (const Error& e) {
        c.passed = false;
        c.rel_err = INFINITY;
        c.error = e.what();
    }
    out.push_back(std::move(c));
}

constexpr DType k_dtypes[] = {DType::f32, DType::bf16};

// ---- the cases, one per kernel family ----

std::vector<Measured> gemv_case(Rng& r, ThreadPool& pool, DType dt, bool prenorm) {
    // prenorm: three segments sharing the normalized input (q, k, v), biases, accumulate into y.
    const int rows = 257, cols = 200, n_seg = prenorm ? 3 : 1;
    const bool accumulate = prenorm, bias = true;
    auto x = r.randn(size_t(cols)), nw = r.randn(size_t(cols), 0.5f);
    auto nwb = store(nw, dt);
    Floats xn(static_cast<size_t>(cols), 0.0f);
    if (prenorm) cpu::rmsnorm_f32(x.data(), nw.data(), 1.0f, 1e-6f, xn.data(), cols);
    else xn = x;
    Dev dx(x), dnw(nwb);
    GemvArgs a{};
    a.n_seg = n_seg;
    a.cols = cols;
    a.wdt = dt;
    a.x = dx.as<float>();
    a.norm_w = prenorm ? dnw.p : nullptr;
    a.norm_offset = 1.0f;
    a.norm_eps = 1e-6f;
    a.accumulate = accumulate;
    std::vector<Floats> ref(3);
    std::vector<std::unique_ptr<Dev>> keep, dy(3);
    for (int s = 0; s < n_seg; ++s) {
        const int seg_rows = rows / (s + 1);
        auto w = r.randn(size_t(seg_rows) * cols, 0.05f), b = r.randn(size_t(seg_rows)), y0 = r.randn(size_t(seg_rows));
        auto wb = store(w, dt), bb = store(b, dt);
        ref[size_t(s)].resize(size_t(seg_rows));
        const TensorView wv = view(wb, dt, {seg_rows, cols}), bv = view(bb, dt, {seg_rows});
        cpu::linear(pool, xn.data(), 1, wv, bias ? &bv : nullptr, ref[size_t(s)].data());
        if (accumulate)
            for (int i = 0; i < seg_rows; ++i) ref[size_t(s)][size_t(i)] += y0[size_t(i)];
        keep.push_back(std::make_unique<Dev>(wb));
        const void* wp = keep.back()->p;
        keep.push_back(std::make_unique<Dev>(bb));
        const void* bp = keep.back()->p;
        dy[size_t(s)] = std::make_unique<Dev>(y0);
        a.seg[s] = {wp, bias ? bp : nullptr, dy[size_t(s)]->as<float>(), seg_rows};
    }
    gemv(a, nullptr);
    std::vector<Measured> out;
    for (int s = 0; s < n_seg; ++s)
        out.push_back({rel_err(dy[size_t(s)]->get(ref[size_t(s)].size()), ref[size_t(s)]), tol(DType::f32)});
    return out;
}

std::vector<Measured> gemv_gated_case(Rng& r, ThreadPool& pool, DType dt) {
    const int rows = 172, cols = 136;
    std::vector<Measured> out;
    for (GateAct act : {GateAct::silu, GateAct::gelu_tanh}) {
        auto x = r.randn(size_t(cols)), nw = r.randn(size_t(cols), 0.3f);
        auto wg = r.randn(size_t(rows) * cols, 0.05f), wu = r.randn(size_t(rows) * cols, 0.05f);
        auto bg = r.randn(size_t(rows)), bu = r.randn(size_t(rows));
        auto nwb = store(nw, dt), wgb = store(wg, dt), wub = store(wu, dt), bgb = store(bg, dt), bub = store(bu, dt);
        const size_t nr = static_cast<size_t>(rows);
        Floats xn(static_cast<size_t>(cols)), g(nr), u(nr), ref(nr);
        cpu::rmsnorm_f32(x.data(), nw.data(), 0.0f, 1e-5f, xn.data(), cols);
        const auto gv = view(wgb, dt, {rows, cols}), uv = view(wub, dt, {rows, cols});
        const auto bgv = view(bgb, dt, {rows}), buv = view(bub, dt, {rows});
        cpu::linear(pool, xn.data(), 1, gv, &bgv, g.data());
        cpu::linear(pool, xn.data(), 1, uv, &buv, u.data());
        for (size_t i = 0; i < ref.size(); ++i)
            ref[i] = (act == GateAct::silu ? cpu::silu(g[i]) : cpu::gelu_tanh(g[i])) * u[i];
        Dev dx(x), dnw(nwb), dwg(wgb), dwu(wub), dbg(bgb), dbu(bub), dy(size_t(rows) * 4);
        gemv_gated(dwg.p, dwu.p, dbg.p, dbu.p, dt, rows, cols, dx.as<float>(), dnw.p, 0.0f, 1e-5f, act, dy.as<float>(),
                   nullptr);
        out.push_back({rel_err(dy.get(ref.size()), ref), tol(DType::f32)});
    }
    return out;
}

std::vector<Measured> residual_rmsnorm_case(Rng& r, DType dt) {
    // Gemma-style: the added branch is RMS-normalized first (post-norm), the output is in dt.
    const int n = 3, hidden = 200;
    auto x = r.randn(size_t(n) * hidden), add = r.randn(size_t(n) * hidden);
    auto w = r.randn(size_t(hidden), 0.3f), pw = r.randn(size_t(hidden), 0.3f);
    auto wb = store(w, dt), pwb = store(pw, dt);
    Floats ref_x = x, ref_out(static_cast<size_t>(n) * hidden), tmp(static_cast<size_t>(hidden));
    for (int t = 0; t < n; ++t) {
        float* xr = &ref_x[size_t(t) * hidden];
        cpu::rmsnorm_f32(&add[size_t(t) * hidden], pw.data(), 1.0f, 1e-6f, tmp.data(), hidden);
        for (int i = 0; i < hidden; ++i) xr[i] += tmp[size_t(i)];
        cpu::rmsnorm_f32(xr, w.data(), 1.0f, 1e-6f, &ref_out[size_t(t) * hidden], hidden);
    }
    Dev dx(x), dadd(add), dw(wb), dpw(pwb), dout(ref_out.size() * dtype_size(dt));
    residual_rmsnorm(dx.as<float>(), dadd.as<float>(), dpw.p, dw.p, dt, 1.0f, 1e-6f, n, hidden, dout.p, dt, nullptr);
    return {{rel_err(dx.get(ref_x.size()), ref_x), 1e-5}, {rel_err(dout.get(ref_out.size(), dt), ref_out), tol(dt)}};
}

std::vector<Measured> rope_case(Rng& r, DType dt) {
    // q/k norm, biases, llama3 scaling, positions past the start; caches and q_out in dt.
    const int n_heads = 8, n_kv = 2, hd = 64, n = 3, pos0 = 100;
    RopeSpec rs;
    rs.theta = 500000;
    rs.rotary_dim = hd;
    rs.scaling = RopeScaling::llama3;
    rs.factor = 8;
    rs.original_max_position = 8192;
    const RopeTable table = make_rope_table(rs);
    const int Q = n_heads * hd, KV = n_kv * hd, n_ctx = pos0 + n;
    auto q = r.randn(size_t(n) * Q), k = r.randn(size_t(n) * KV), v = r.randn(size_t(n) * KV);
    auto bq = r.randn(size_t(Q)), bk = r.randn(size_t(KV)), bv = r.randn(size_t(KV));
    auto qn = r.randn(size_t(hd), 0.3f), kn = r.randn(size_t(hd), 0.3f);
    auto bqb = store(bq, dt), bkb = store(bk, dt), bvb = store(bv, dt), qnb = store(qn, dt), knb = store(kn, dt);
    Floats rq = q, rk = k, rv = v;
    for (int t = 0; t < n; ++t) {
        for (int h = 0; h < n_heads + n_kv; ++h) {
            const bool isq = h < n_heads;
            const int head = isq ? h : h - n_heads;
            float* p = isq ? &rq[size_t(t) * Q + size_t(head) * hd] : &rk[size_t(t) * KV + size_t(head) * hd];
            const Floats& bias = isq ? bq : bk;
            for (int d = 0; d < hd; ++d) p[d] += bias[size_t(head * hd + d)];
            cpu::rmsnorm_f32(p, (isq ? qn : kn).data(), 0.0f, 1e-6f, p, hd);
            apply_rope(p, pos0 + t, table);
        }
        for (int i = 0; i < KV; ++i) rv[size_t(t) * KV + size_t(i)] += bv[size_t(i)];
    }
    const size_t es = dtype_size(dt);
    Dev dq(q), dk(k), dv(v), dbq(bqb), dbk(bkb), dbv(bvb), dqn(qnb), dkn(knb), dinv(table.inv_freq);
    Dev kc(size_t(n_ctx) * KV * es), vc(size_t(n_ctx) * KV * es), qo(size_t(n) * Q * es);
    Dev dpos(std::vector<int>{pos0});
    RopeArgs a{};
    a.q = dq.as<float>();
    a.k = dk.as<float>();
    a.v = dv.as<float>();
    a.q_stride = Q;
    a.k_stride = KV;
    a.v_stride = KV;
    a.bq = dbq.p;
    a.bk = dbk.p;
    a.bv = dbv.p;
    a.q_norm = dqn.p;
    a.k_norm = dkn.p;
    a.wdt = dt;
    a.norm_offset = 0;
    a.norm_eps = 1e-6f;
    a.inv_freq = dinv.as<float>();
    a.attention_factor = table.attention_factor;
    a.rotary_dim = rs.rotary_dim;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv;
    a.head_dim = hd;
    a.n = n;
    a.d_pos0 = dpos.as<int>();
    a.k_cache = kc.p;
    a.v_cache = vc.p;
    a.kv_dt = dt;
    a.q_out = qo.p;
    a.q_out_dt = dt;
    rope_qkv(a, nullptr);
    // Only the rows at positions pos0.. were written; the poisoned rows before them are not compared.
    const Floats kcache = kc.get(size_t(n_ctx) * KV, dt), vcache = vc.get(size_t(n_ctx) * KV, dt);
    const Floats kgot(kcache.begin() + ptrdiff_t(size_t(pos0) * KV), kcache.end());
    const Floats vgot(vcache.begin() + ptrdiff_t(size_t(pos0) * KV), vcache.end());
    return {{rel_err(dq.get(rq.size()), rq), tol(DType::f32)},
            {rel_err(qo.get(rq.size(), dt), rq), tol(dt)},
            {rel_err(kgot, rk), tol(dt)},
            {rel_err(vgot, rv), tol(dt)}};
}

std::vector<Measured> decode_attention_case(Rng& r, DType kv_dt, int n_sms) {
    // GQA (4 query heads per KV head), a sequence long enough to be split over blocks, soft-capping.
    const int n_heads = 8, n_kv = 2, hd = 64, len = 300, n_ctx = len + 5;
    const float softcap = 50.0f;
    const int KV = n_kv * hd, group = n_heads / n_kv;
    auto q = r.randn(size_t(n_heads) * hd), k = r.randn(size_t(n_ctx) * KV), v = r.randn(size_t(n_ctx) * KV);
    auto kb = store(k, kv_dt), vb = store(v, kv_dt);
    const float scale = 1.0f / std::sqrt(float(hd));
    Floats ref(static_cast<size_t>(n_heads) * hd), scores(static_cast<size_t>(len));
    const int pos = len - 1;
    for (int h = 0; h < n_heads; ++h)
        cpu::attend_head(&q[size_t(h) * hd], k.data(), v.data(), KV, (h / group) * hd, hd, 0, pos, scale, softcap,
                         scores.data(), &ref[size_t(h) * hd]);
    const int splits = decode_attention_splits(n_kv, n_sms);
    Dev dq(q), dk(kb), dv(vb), dout(ref.size() * 4);
    Dev part(decode_attention_partial_floats(n_heads, hd, splits) * 4);
    Dev dpos(std::vector<int>{pos});
    Dev arrivals(std::vector<int>(size_t(n_kv), 0));
    DecodeAttnArgs a{};
    a.q = dq.as<float>();
    a.k_cache = dk.p;
    a.v_cache = dv.p;
    a.kv_dt = kv_dt;
    a.out = dout.as<float>();
    a.partial = part.as<float>();
    a.arrivals = arrivals.as<int>();
    a.d_pos = dpos.as<int>();
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv;
    a.head_dim = hd;
    a.n_ctx = n_ctx;
    a.n_splits = splits;
    a.window = 0;
    a.scale = scale;
    a.softcap = softcap;
    decode_attention(a, nullptr);
    return {{rel_err(dout.get(ref.size()), ref), tol(DType::f32)}};
}

std::vector<Measured> prefill_attention_case(Rng& r, DType dt) {
    // The flash kernel: GQA, 40 new queries after 13 cached positions (a partial tile and a
    // prefix), soft-capping; bf16/f16 only (the dtypes it runs).
    const int n_heads = 4, n_kv = 2, hd = 64, n_q = 40, q0 = 13, n_keys = q0 + n_q;
    const float softcap = 30.0f, scale = 1.0f / std::sqrt(float(hd));
    const int Q = n_heads * hd, KV = n_kv * hd, group = n_heads / n_kv;
    auto q = r.randn(size_t(n_q) * Q), k = r.randn(size_t(n_keys) * KV), v = r.randn(size_t(n_keys) * KV);
    auto qb = store(q, dt), kb = store(k, dt), vb = store(v, dt);
    Floats ref(q.size()), scores(static_cast<size_t>(n_keys));
    for (int i = 0; i < n_q; ++i)
        for (int h = 0; h < n_heads; ++h)
            cpu::attend_head(&q[size_t(i) * Q + size_t(h) * hd], k.data(), v.data(), KV, (h / group) * hd, hd, 0, q0 + i, scale,
                             softcap, scores.data(), &ref[size_t(i) * Q + size_t(h) * hd]);
    Dev dq(qb), dk(kb), dv(vb), dout(ref.size() * dtype_size(dt));
    PrefillAttnArgs a{};
    a.q = dq.p; a.q_stride = Q;
    a.k_cache = dk.p; a.v_cache = dv.p;
    a.out = dout.p; a.out_stride = Q;
    a.dt = dt; a.n_q = n_q; a.n_heads = n_heads; a.n_kv_heads = n_kv; a.head_dim = hd;
    a.q_pos0 = q0; a.window = 0; a.scale = scale; a.softcap = softcap;
    prefill_attention(a, nullptr);
    return {{rel_err(dout.get(ref.size(), dt), ref), tol(dt)}};
}

std::vector<Measured> masked_softmax_case(Rng& r, DType out_dt) {
    // Causal mask with queries starting at position 11, and a sliding window of 6.
    const int heads = 2, nq = 9, nk = 20, q0 = 11, window = 6;
    const float scale = 0.37f;
    auto s = r.randn(size_t(heads) * nq * nk, 3.0f);
    Floats ref(s.size());
    for (int h = 0; h < heads; ++h)
        for (int i = 0; i < nq; ++i) {
            const int qp = q0 + i, lo = std::max(0, qp - window + 1);
            const float* row = &s[(size_t(h) * nq + size_t(i)) * nk];
            float* o = &ref[(size_t(h) * nq + size_t(i)) * nk];
            float m = -INFINITY, l = 0;
            for (int j = lo; j <= qp; ++j) m = std::max(m, row[j] * scale);
            for (int j = lo; j <= qp; ++j) l += std::exp(row[j] * scale - m);
            for (int j = 0; j < nk; ++j) o[j] = (j >= lo && j <= qp) ? std::exp(row[j] * scale - m) / l : 0.0f;
        }
    Dev ds(s), dp(s.size() * dtype_size(out_dt));
    masked_softmax(ds.as<float>(), dp.p, out_dt, heads, nq, nk, q0, window, scale, 0.0f, nullptr);
    return {{rel_err(dp.get(ref.size(), out_dt), ref), tol(out_dt)}};
}

std::vector<Measured> embedding_case(Rng& r, DType dt) {
    const int vocab = 301, hidden = 72;
    const float scale = 2.5f;
    auto e = r.randn(size_t(vocab) * hidden);
    auto eb = store(e, dt);
    const std::vector<int32_t> ids = {0, 300, 17, 17, 250};
    Floats ref(ids.size() * hidden);
    for (size_t t = 0; t < ids.size(); ++t)
        for (int i = 0; i < hidden; ++i) ref[t * hidden + size_t(i)] = e[size_t(ids[t]) * hidden + size_t(i)] * scale;
    Dev de(eb), di(ids), dx(ref.size() * 4);
    embedding(de.p, dt, di.as<int32_t>(), int(ids.size()), hidden, scale, dx.as<float>(), nullptr);
    return {{rel_err(dx.get(ref.size()), ref), 1e-6}};  // a copy and one multiply: exact in practice
}

std::vector<Measured> argmax_case(Rng& r) {
    // A random vector of a vocabulary's size, and ties (the lowest index wins, as on the CPU).
    std::vector<Measured> out;
    auto x = r.randn(151936);
    Floats tie(1000, 1.0f);
    tie[700] = tie[123] = 5.0f;
    for (const Floats* v : {&x, &tie}) {
        const int want = int(std::max_element(v->begin(), v->end()) - v->begin());
        Dev dx(*v), dout(4);
        argmax(dx.as<float>(), int(v->size()), dout.as<int32_t>(), nullptr);
        TT_CUDA_CHECK(cudaDeviceSynchronize());
        int32_t got = -1;
        TT_CUDA_CHECK(cudaMemcpy(&got, dout.p, sizeof got, cudaMemcpyDeviceToHost));
        out.push_back({got == want ? 0.0 : 1.0, 0.0});  // an index is right or wrong
    }
    return out;
}

std::vector<Measured> gated_act_case(Rng& r, DType dt) {
    const int n = 3, f = 100;
    std::vector<Measured> out;
    for (GateAct act : {GateAct::silu, GateAct::gelu_tanh}) {
        auto g = r.randn(size_t(n) * f), u = r.randn(size_t(n) * f), bg = r.randn(size_t(f)), bu = r.randn(size_t(f));
        auto bgb = store(bg, dt), bub = store(bu, dt);
        Floats ref(g.size());
        for (size_t i = 0; i < g.size(); ++i) {
            const float gv = g[i] + bg[i % f], uv = u[i] + bu[i % f];
            ref[i] = (act == GateAct::silu ? cpu::silu(gv) : cpu::gelu_tanh(gv)) * uv;
        }
        Dev dg(g), du(u), dbg(bgb), dbu(bub), dout(g.size() * dtype_size(dt));
        gated_act(dg.as<float>(), du.as<float>(), DType::f32, f, dbg.p, dbu.p, dt, n, f, act, dout.p, dt, nullptr);
        out.push_back({rel_err(dout.get(ref.size(), dt), ref), dt == DType::f32 ? 1e-5 : tol(dt)});
    }
    return out;
}

}  // namespace

std::vector<KernelCheck> self_test_kernels(int device) {
    std::vector<KernelCheck> out;
    Rng r;
    ThreadPool pool(2);
    int n_sms = 0;
    try {
        TT_CUDA_CHECK(cudaSetDevice(device));
        TT_CUDA_CHECK(cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, device));
    } catch (const Error&) {
        n_sms = 1;  // the cases below fail with the error themselves
    }
    for (DType dt : k_dtypes) run_case(out, device, "gemv", dt, [&] { return gemv_case(r, pool, dt, false); });
    for (DType dt : k_dtypes) run_case(out, device, "gemv prenorm", dt, [&] { return gemv_case(r, pool, dt, true); });
    for (DType dt : k_dtypes) run_case(out, device, "gemv_gated", dt, [&] { return gemv_gated_case(r, pool, dt); });
    for (DType dt : k_dtypes) run_case(out, device, "residual_rmsnorm", dt, [&] { return residual_rmsnorm_case(r, dt); });
    for (DType dt : k_dtypes) run_case(out, device, "rope_qkv", dt, [&] { return rope_case(r, dt); });
    for (DType dt : k_dtypes)
        run_case(out, device, "decode_attention", dt, [&] { return decode_attention_case(r, dt, n_sms); });
    for (DType dt : {DType::f16, DType::bf16})
        run_case(out, device, "prefill_attention", dt, [&] { return prefill_attention_case(r, dt); });
    for (DType dt : k_dtypes) run_case(out, device, "masked_softmax", dt, [&] { return masked_softmax_case(r, dt); });
    for (DType dt : k_dtypes) run_case(out, device, "embedding", dt, [&] { return embedding_case(r, dt); });
    run_case(out, device, "argmax", DType::f32, [&] { return argmax_case(r); });
    for (DType dt : k_dtypes) run_case(out, device, "gated_act", dt, [&] { return gated_act_case(r, dt); });
    return out;
}

std::vector<KernelCheck> self_test_cublas(int device) {
    std::vector<KernelCheck> out;
    Rng r;
    ThreadPool pool(2);
    for (DType dt : k_dtypes) {
        run_case(out, device, "cublas gemm", dt, [&]() -> std::vector<Measured> {
            const int rows = 96, cols = 192, n = 5;
            auto w = r.randn(size_t(rows) * cols, 0.05f), x = r.randn(size_t(n) * cols);
            auto wb = store(w, dt), xb = store(x, dt);
            Floats ref(static_cast<size_t>(n) * rows);
            cpu::linear(pool, x.data(), n, view(wb, dt, {rows, cols}), nullptr, ref.data());
            Dev dw(wb), dx(xb), dy(ref.size() * 4);
            cublasHandle_t h = nullptr;
            TT_CUBLAS_CHECK(cublasCreate(&h));
            const std::unique_ptr<cublasContext, decltype(&cublasDestroy)> guard(h, &cublasDestroy);
            // As the backend: f32 weights in pedantic (true f32, no TF32) math, bf16 with tensor cores.
            TT_CUBLAS_CHECK(cublasSetMathMode(h, dt == DType::f32 ? CUBLAS_PEDANTIC_MATH : CUBLAS_DEFAULT_MATH));
            const cudaDataType_t t = dt == DType::f32 ? CUDA_R_32F : CUDA_R_16BF;
            const float alpha = 1.0f, beta = 0.0f;
            // Row-major y[n, rows] = x[n, cols] W[rows, cols]^T is column-major y^T = W^T(op T) x^T.
            TT_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, rows, n, cols, &alpha, dw.p, t, cols, dx.p, t, cols,
                                         &beta, dy.p, CUDA_R_32F, rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            return {{rel_err(dy.get(ref.size()), ref), tol(DType::f32)}};
        });
    }
    return out;
}

}  // namespace tt::cuda
