// Every CUDA kernel family against the CPU reference operators (src/backends/cpu/ops.h) on random
// inputs, several shapes including odd ones, measured by relative error ||gpu - cpu|| / ||cpu||.
// Runs on the GPU machine (tests/gpu/run.sh); CI only builds it.
#include "backends/cpu/ops.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_check.h"
#include "backends/cuda/kernels/kernels.h"
#include "core/dtype.h"
#include "runtime/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace tt;
using tt::cuda::Dev;
using tt::cuda::rel_err;
using tt::cuda::store;

namespace {

std::mt19937 rng(1234);

std::vector<float> randn(size_t n, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

TensorView view(const std::vector<uint8_t>& bytes, DType dt, Shape shape) {
    return TensorView{"t", dt, std::move(shape), bytes.data(), bytes.size()};
}

const DType k_dtypes[] = {DType::f32, DType::f16, DType::bf16};
double tol(DType) { return 2e-5; }  // both sides accumulate the same rounded values in f32

}  // namespace

TEST(CudaKernels, GemvMatchesCpuLinear) {
    ThreadPool pool(2);
    struct Case { int rows, cols; bool prenorm, accumulate, bias; int n_seg; };
    const Case cases[] = {{64, 64, false, false, false, 1},   {4096, 1024, true, false, false, 3},
                          {333, 172, true, true, true, 1},    {1000, 4096, false, true, false, 2},
                          {257, 24, true, false, true, 3},    {2048, 14336 / 4, false, false, true, 1},
                          // few rows, long columns: several warps share a row (column slices)
                          {64, 8192, true, true, true, 1},    {24, 2048, false, false, false, 1},
                          {96, 4096, false, true, true, 3}};
    for (DType dt : k_dtypes) {
        for (const Case& c : cases) {
            auto x = randn(size_t(c.cols));
            auto nw = randn(size_t(c.cols), 0.5f);
            auto nwb = store(nw, dt);
            std::vector<float> xn(static_cast<size_t>(c.cols));
            if (c.prenorm) cpu::rmsnorm_f32(x.data(), nw.data(), 1.0f, 1e-6f, xn.data(), c.cols);
            else xn = x;
            cuda::GemvArgs a{};
            a.n_seg = c.n_seg; a.cols = c.cols; a.wdt = dt;
            Dev dx(x), dnw(nwb);
            a.x = dx.as<float>();
            a.norm_w = c.prenorm ? dnw.p : nullptr; a.norm_offset = 1.0f; a.norm_eps = 1e-6f;
            a.accumulate = c.accumulate;
            std::vector<std::vector<float>> w(3), b(3), y0(3), ref(3);
            std::vector<std::vector<uint8_t>> wb(3), bb(3);
            std::vector<std::unique_ptr<Dev>> dw, db, dy;
            for (int sgi = 0; sgi < c.n_seg; ++sgi) {
                const int rows = c.rows / (sgi + 1);
                w[sgi] = randn(size_t(rows) * c.cols, 0.05f);
                wb[sgi] = store(w[sgi], dt);
                b[sgi] = randn(size_t(rows));
                bb[sgi] = store(b[sgi], dt);
                y0[sgi] = randn(size_t(rows));
                ref[sgi].resize(size_t(rows));
                const TensorView wv = view(wb[sgi], dt, {rows, c.cols}), bv = view(bb[sgi], dt, {rows});
                cpu::linear(pool, xn.data(), 1, wv, c.bias ? &bv : nullptr, ref[sgi].data());
                if (c.accumulate)
                    for (int r = 0; r < rows; ++r) ref[sgi][size_t(r)] += y0[sgi][size_t(r)];
                dw.push_back(std::make_unique<Dev>(wb[sgi]));
                db.push_back(std::make_unique<Dev>(bb[sgi]));
                dy.push_back(std::make_unique<Dev>(y0[sgi]));
                a.seg[sgi] = {dw.back()->p, c.bias ? db.back()->p : nullptr, dy.back()->as<float>(), rows};
            }
            cuda::gemv(a, nullptr);
            for (int sgi = 0; sgi < c.n_seg; ++sgi) {
                const auto got = dy[size_t(sgi)]->get<float>(ref[sgi].size());
                EXPECT_LT(rel_err(got, ref[sgi]), tol(dt))
                    << dtype_name(dt) << " rows " << c.rows << " cols " << c.cols << " seg " << sgi;
            }
        }
    }
}

TEST(CudaKernels, GatedGemvMatchesCpu) {
    ThreadPool pool(2);
    for (DType dt : k_dtypes) {
        for (auto [rows, cols] : {std::pair{128, 64}, {3072, 1024}, {172, 64}, {509, 136}, {40, 8192}}) {
            for (auto act : {cuda::GateAct::silu, cuda::GateAct::gelu_tanh}) {
                auto x = randn(size_t(cols)), nw = randn(size_t(cols), 0.3f);
                auto wg = randn(size_t(rows) * cols, 0.05f), wu = randn(size_t(rows) * cols, 0.05f);
                auto bg = randn(size_t(rows)), bu = randn(size_t(rows));
                auto nwb = store(nw, dt), wgb = store(wg, dt), wub = store(wu, dt), bgb = store(bg, dt), bub = store(bu, dt);
                std::vector<float> xn(static_cast<size_t>(cols)), g(static_cast<size_t>(rows)), u(static_cast<size_t>(rows)), ref(static_cast<size_t>(rows));
                cpu::rmsnorm_f32(x.data(), nw.data(), 0.0f, 1e-5f, xn.data(), cols);
                const auto gv = view(wgb, dt, {rows, cols}), uv = view(wub, dt, {rows, cols});
                const auto bgv = view(bgb, dt, {rows}), buv = view(bub, dt, {rows});
                cpu::linear(pool, xn.data(), 1, gv, &bgv, g.data());
                cpu::linear(pool, xn.data(), 1, uv, &buv, u.data());
                for (int r = 0; r < rows; ++r)
                    ref[size_t(r)] = (act == cuda::GateAct::silu ? cpu::silu(g[size_t(r)]) : cpu::gelu_tanh(g[size_t(r)])) * u[size_t(r)];
                Dev dx(x), dnw(nwb), dwg(wgb), dwu(wub), dbg(bgb), dbu(bub), dy(size_t(rows) * 4);
                cuda::gemv_gated(dwg.p, dwu.p, dbg.p, dbu.p, dt, rows, cols, dx.as<float>(), dnw.p, 0.0f, 1e-5f, act,
                                 dy.as<float>(), nullptr);
                EXPECT_LT(rel_err(dy.get<float>(size_t(rows)), ref), 1e-4) << dtype_name(dt) << " " << rows << "x" << cols;
            }
        }
    }
}

TEST(CudaKernels, ResidualRmsNormMatchesCpu) {
    for (DType dt : k_dtypes) {
        for (int hidden : {64, 172, 4096, 5000}) {
            for (bool post : {false, true}) {
                const int n = 7;
                auto x = randn(size_t(n) * hidden), add = randn(size_t(n) * hidden);
                auto w = randn(size_t(hidden), 0.3f), pw = randn(size_t(hidden), 0.3f);
                auto wb = store(w, dt), pwb = store(pw, dt);
                std::vector<float> ref_x = x, ref_out(static_cast<size_t>(n) * hidden), tmp(static_cast<size_t>(hidden));
                for (int t = 0; t < n; ++t) {
                    float* xr = &ref_x[size_t(t) * hidden];
                    const float* ar = &add[size_t(t) * hidden];
                    if (post) cpu::rmsnorm_f32(ar, pw.data(), 1.0f, 1e-6f, tmp.data(), hidden);
                    else std::copy_n(ar, hidden, tmp.data());
                    for (int i = 0; i < hidden; ++i) xr[i] += tmp[size_t(i)];
                    cpu::rmsnorm_f32(xr, w.data(), 1.0f, 1e-6f, &ref_out[size_t(t) * hidden], hidden);
                }
                Dev dx(x), dadd(add), dw(wb), dpw(pwb), dout(size_t(n) * hidden * 4);
                cuda::residual_rmsnorm(dx.as<float>(), dadd.as<float>(), post ? dpw.p : nullptr, dw.p, dt, 1.0f, 1e-6f, n,
                                       hidden, dout.p, DType::f32, nullptr);
                EXPECT_LT(rel_err(dx.get<float>(ref_x.size()), ref_x), 1e-6) << hidden;
                EXPECT_LT(rel_err(dout.get<float>(ref_out.size()), ref_out), 1e-5) << hidden;
            }
        }
    }
}

TEST(CudaKernels, RopeQkvMatchesCpu) {
    struct Case { int n_heads, n_kv, hd, rotary, n, pos0; bool norm, bias; RopeScaling sc; };
    const Case cases[] = {{4, 2, 16, 16, 5, 0, false, false, RopeScaling::none},
                          {16, 8, 128, 128, 3, 100, true, true, RopeScaling::llama3},
                          {8, 1, 64, 32, 9, 7, false, true, RopeScaling::yarn},
                          {32, 8, 128, 128, 1, 4000, true, false, RopeScaling::linear}};
    for (DType dt : k_dtypes) {
        for (const Case& c : cases) {
            RopeSpec rs;
            rs.theta = 500000;
            rs.rotary_dim = c.rotary;
            rs.scaling = c.sc;
            rs.factor = 8;
            rs.original_max_position = 8192;
            rs.attention_factor = c.sc == RopeScaling::yarn ? 1.2 : 1.0;
            const RopeTable table = make_rope_table(rs);
            const int Q = c.n_heads * c.hd, KV = c.n_kv * c.hd, n_ctx = c.pos0 + c.n;
            auto q = randn(size_t(c.n) * Q), k = randn(size_t(c.n) * KV), v = randn(size_t(c.n) * KV);
            auto bq = randn(size_t(Q)), bk = randn(size_t(KV)), bv = randn(size_t(KV));
            auto qn = randn(size_t(c.hd), 0.3f), kn = randn(size_t(c.hd), 0.3f);
            auto bqb = store(bq, dt), bkb = store(bk, dt), bvb = store(bv, dt), qnb = store(qn, dt), knb = store(kn, dt);
            std::vector<float> rq = q, rk = k, rv = v;
            for (int t = 0; t < c.n; ++t) {
                for (int h = 0; h < c.n_heads + c.n_kv; ++h) {
                    const bool isq = h < c.n_heads;
                    float* p = isq ? &rq[size_t(t) * Q + size_t(h) * c.hd] : &rk[size_t(t) * KV + size_t(h - c.n_heads) * c.hd];
                    const auto& bias = isq ? bq : bk;
                    const int head = isq ? h : h - c.n_heads;
                    if (c.bias) for (int d = 0; d < c.hd; ++d) p[d] += bias[size_t(head * c.hd + d)];
                    if (c.norm) cpu::rmsnorm_f32(p, (isq ? qn : kn).data(), 0.0f, 1e-6f, p, c.hd);
                    apply_rope(p, c.pos0 + t, table);
                }
                if (c.bias) for (int i = 0; i < KV; ++i) rv[size_t(t) * KV + size_t(i)] += bv[size_t(i)];
            }
            Dev dq(q), dk(k), dv(v), dbq(bqb), dbk(bkb), dbv(bvb), dqn(qnb), dkn(knb), dinv(table.inv_freq);
            Dev kc(size_t(n_ctx) * KV * 4), vc(size_t(n_ctx) * KV * 4), qo(size_t(c.n) * Q * 4);
            std::vector<int> pos = {c.pos0};
            Dev dpos(pos);
            cuda::RopeArgs a{};
            a.q = dq.as<float>(); a.k = dk.as<float>(); a.v = dv.as<float>();
            a.q_stride = Q; a.k_stride = KV; a.v_stride = KV;
            a.bq = c.bias ? dbq.p : nullptr; a.bk = c.bias ? dbk.p : nullptr; a.bv = c.bias ? dbv.p : nullptr;
            a.q_norm = c.norm ? dqn.p : nullptr; a.k_norm = c.norm ? dkn.p : nullptr;
            a.wdt = dt; a.norm_offset = 0; a.norm_eps = 1e-6f;
            a.inv_freq = dinv.as<float>(); a.attention_factor = table.attention_factor; a.rotary_dim = c.rotary;
            a.n_heads = c.n_heads; a.n_kv_heads = c.n_kv; a.head_dim = c.hd; a.n = c.n;
            a.d_pos0 = dpos.as<int>();
            a.k_cache = kc.p; a.v_cache = vc.p; a.kv_dt = DType::f32; a.q_out = qo.p; a.q_out_dt = DType::f32;
            cuda::rope_qkv(a, nullptr);
            EXPECT_LT(rel_err(dq.get<float>(rq.size()), rq), 1e-5);
            EXPECT_LT(rel_err(qo.get<float>(rq.size()), rq), 1e-5);
            const auto kcache = kc.get<float>(size_t(n_ctx) * KV), vcache = vc.get<float>(size_t(n_ctx) * KV);
            const std::vector<float> kgot(kcache.begin() + ptrdiff_t(size_t(c.pos0) * KV), kcache.end());
            const std::vector<float> vgot(vcache.begin() + ptrdiff_t(size_t(c.pos0) * KV), vcache.end());
            EXPECT_LT(rel_err(kgot, rk), 1e-5) << "heads " << c.n_heads << " pos " << c.pos0;
            EXPECT_LT(rel_err(vgot, rv), 1e-6);
        }
    }
}

TEST(CudaKernels, DecodeAttentionMatchesCpu) {
    struct Case { int n_heads, n_kv, hd, len, window; float softcap; };
    const Case cases[] = {{4, 2, 16, 1, 0, 0},       {4, 2, 16, 37, 8, 0},       {32, 8, 128, 511, 0, 0},
                          {16, 8, 128, 3000, 0, 0},  {8, 1, 64, 1025, 300, 50.0f}, {12, 4, 256, 77, 0, 0},
                          {32, 8, 128, 16384, 0, 0}};
    int n_sms = 0;
    TT_CUDA_CHECK(cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, 0));
    for (DType kvdt : {DType::f32, DType::bf16}) {
        for (const Case& c : cases) {
            const int KV = c.n_kv * c.hd, group = c.n_heads / c.n_kv, n_ctx = c.len + 5;
            auto q = randn(size_t(c.n_heads) * c.hd), k = randn(size_t(n_ctx) * KV), v = randn(size_t(n_ctx) * KV);
            auto kb = store(k, kvdt), vb = store(v, kvdt);
            const float scale = 1.0f / std::sqrt(float(c.hd));
            std::vector<float> ref(static_cast<size_t>(c.n_heads) * c.hd), scores(static_cast<size_t>(c.len));
            const int pos = c.len - 1, first = c.window > 0 ? std::max(0, pos - c.window + 1) : 0;
            for (int h = 0; h < c.n_heads; ++h)
                cpu::attend_head(&q[size_t(h) * c.hd], k.data(), v.data(), KV, (h / group) * c.hd, c.hd, first, pos, scale,
                                 c.softcap, scores.data(), &ref[size_t(h) * c.hd]);
            const int splits = cuda::decode_attention_splits(c.n_kv, n_sms);
            Dev dq(q), dk(kb), dv(vb), dout(ref.size() * 4);
            Dev part(cuda::decode_attention_partial_floats(c.n_heads, c.hd, splits) * 4);
            Dev arrivals(std::vector<int>(size_t(c.n_kv), 0));
            std::vector<int> p = {pos};
            Dev dpos(p);
            cuda::DecodeAttnArgs a{};
            a.q = dq.as<float>(); a.k_cache = dk.p; a.v_cache = dv.p; a.kv_dt = kvdt; a.out = dout.as<float>();
            a.partial = part.as<float>(); a.arrivals = arrivals.as<int>(); a.d_pos = dpos.as<int>();
            a.n_heads = c.n_heads; a.n_kv_heads = c.n_kv; a.head_dim = c.hd; a.n_ctx = n_ctx; a.n_splits = splits;
            a.window = c.window; a.scale = scale; a.softcap = c.softcap;
            // Twice: the arrival counters must reset themselves for the next launch (graph replay).
            for (int rep = 0; rep < 2; ++rep) {
                cuda::decode_attention(a, nullptr);
                EXPECT_LT(rel_err(dout.get<float>(ref.size()), ref), 1e-5) << "len " << c.len << " heads " << c.n_heads << " rep " << rep;
            }
        }
    }
}

// The decode attention with RoPE fused: raw q/k/v of the newest token in, the cache row written
// and the attention output equal to rope_qkv on the CPU followed by attention.
TEST(CudaKernels, DecodeAttentionRopeFusedMatchesCpu) {
    struct Case { int n_heads, n_kv, hd, rotary, len, window; bool norm, bias; };
    const Case cases[] = {{4, 2, 16, 16, 1, 0, false, false}, {16, 8, 128, 128, 300, 0, true, true},
                          {8, 1, 64, 32, 1025, 100, false, true}, {32, 8, 128, 128, 17, 0, true, false}};
    int n_sms = 0;
    TT_CUDA_CHECK(cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, 0));
    for (DType dt : k_dtypes) {
        for (const Case& c : cases) {
            RopeSpec rs;
            rs.theta = 10000;
            rs.rotary_dim = c.rotary;
            const RopeTable table = make_rope_table(rs);
            const int Q = c.n_heads * c.hd, KV = c.n_kv * c.hd, group = c.n_heads / c.n_kv, n_ctx = c.len + 3;
            const int pos = c.len - 1;
            auto q = randn(size_t(Q)), knew = randn(size_t(KV)), vnew = randn(size_t(KV));
            auto k = randn(size_t(n_ctx) * KV), v = randn(size_t(n_ctx) * KV);
            auto bq = randn(size_t(Q)), bk = randn(size_t(KV)), bv = randn(size_t(KV));
            auto qn = randn(size_t(c.hd), 0.3f), kn = randn(size_t(c.hd), 0.3f);
            auto bqb = store(bq, dt), bkb = store(bk, dt), bvb = store(bv, dt), qnb = store(qn, dt), knb = store(kn, dt);
            auto kb = store(k, dt), vb = store(v, dt);  // the cache holds the weights' dtype
            // CPU: prepare q heads and the new k, write k/v at pos (rounded as the cache stores them), attend.
            std::vector<float> rq = q, rk = knew, rv = vnew;
            for (int h = 0; h < c.n_heads + c.n_kv; ++h) {
                const bool isq = h < c.n_heads;
                const int head = isq ? h : h - c.n_heads;
                float* p = isq ? &rq[size_t(head) * c.hd] : &rk[size_t(head) * c.hd];
                if (c.bias) for (int d = 0; d < c.hd; ++d) p[d] += (isq ? bq : bk)[size_t(head * c.hd + d)];
                if (c.norm) cpu::rmsnorm_f32(p, (isq ? qn : kn).data(), 0.0f, 1e-6f, p, c.hd);
                apply_rope(p, pos, table);
            }
            if (c.bias) for (int i = 0; i < KV; ++i) rv[size_t(i)] += bv[size_t(i)];
            auto rk_st = rk, rv_st = rv;
            store(rk_st, dt);
            store(rv_st, dt);
            std::vector<float> kref = k, vref = v;
            std::copy(rk_st.begin(), rk_st.end(), kref.begin() + ptrdiff_t(size_t(pos) * KV));
            std::copy(rv_st.begin(), rv_st.end(), vref.begin() + ptrdiff_t(size_t(pos) * KV));
            const float scale = 1.0f / std::sqrt(float(c.hd));
            const int first = c.window > 0 ? std::max(0, pos - c.window + 1) : 0;
            std::vector<float> ref(static_cast<size_t>(Q)), scores(static_cast<size_t>(c.len));
            for (int h = 0; h < c.n_heads; ++h)
                cpu::attend_head(&rq[size_t(h) * c.hd], kref.data(), vref.data(), KV, (h / group) * c.hd, c.hd, first, pos,
                                 scale, 0.0f, scores.data(), &ref[size_t(h) * c.hd]);
            const int splits = cuda::decode_attention_splits(c.n_kv, n_sms);
            Dev dq(q), dkn(knew), dvn(vnew), dk(kb), dv(vb), dout(ref.size() * 4);
            Dev dbq(bqb), dbk(bkb), dbv(bvb), dqn(qnb), dknorm(knb), dinv(table.inv_freq);
            Dev part(cuda::decode_attention_partial_floats(c.n_heads, c.hd, splits) * 4);
            Dev arrivals(std::vector<int>(size_t(c.n_kv), 0));
            Dev dpos(std::vector<int>{pos});
            cuda::DecodeAttnArgs a{};
            a.k_cache = dk.p; a.v_cache = dv.p; a.kv_dt = dt; a.out = dout.as<float>();
            a.partial = part.as<float>(); a.arrivals = arrivals.as<int>(); a.d_pos = dpos.as<int>();
            a.n_heads = c.n_heads; a.n_kv_heads = c.n_kv; a.head_dim = c.hd; a.n_ctx = n_ctx; a.n_splits = splits;
            a.window = c.window; a.scale = scale; a.softcap = 0;
            a.rope_fused = true;
            cuda::RopeArgs& r = a.rope;
            r.q = dq.as<float>(); r.k = dkn.as<float>(); r.v = dvn.as<float>();
            r.bq = c.bias ? dbq.p : nullptr; r.bk = c.bias ? dbk.p : nullptr; r.bv = c.bias ? dbv.p : nullptr;
            r.q_norm = c.norm ? dqn.p : nullptr; r.k_norm = c.norm ? dknorm.p : nullptr;
            r.wdt = dt; r.norm_offset = 0; r.norm_eps = 1e-6f;
            r.inv_freq = dinv.as<float>(); r.attention_factor = table.attention_factor; r.rotary_dim = c.rotary;
            r.n_heads = c.n_heads; r.n_kv_heads = c.n_kv; r.head_dim = c.hd; r.n = 1; r.d_pos0 = dpos.as<int>();
            r.k_cache = dk.p; r.v_cache = dv.p; r.kv_dt = dt;
            cuda::decode_attention(a, nullptr);
            const double tol = dt == DType::f32 ? 1e-5 : 1e-2;  // bf16/f16 round the new k/v as stored
            EXPECT_LT(rel_err(dout.get<float>(ref.size()), ref), tol) << "len " << c.len << " heads " << c.n_heads;
            const size_t es = dtype_size(dt);
            std::vector<uint8_t> row(size_t(KV) * es);
            TT_CUDA_CHECK(cudaMemcpy(row.data(), static_cast<uint8_t*>(dk.p) + size_t(pos) * KV * es, row.size(), cudaMemcpyDeviceToHost));
            std::vector<float> kgot(static_cast<size_t>(KV));
            to_f32(row.data(), dt, kgot.data(), kgot.size());
            EXPECT_LT(rel_err(kgot, rk_st), dt == DType::f32 ? 1e-5 : 1e-2) << "k cache row, len " << c.len;
        }
    }
}

TEST(CudaKernels, MaskedSoftmaxMatchesCpu) {
    for (auto [heads, nq, nk, q0, window] : {std::tuple{2, 5, 5, 0, 0}, {4, 64, 100, 36, 0}, {3, 17, 40, 23, 8}, {1, 1, 9, 8, 3}}) {
        auto s = randn(size_t(heads) * nq * nk, 3.0f);
        std::vector<float> ref(s.size());
        const float scale = 0.37f;
        for (int h = 0; h < heads; ++h)
            for (int i = 0; i < nq; ++i) {
                const int qp = q0 + i, lo = window > 0 ? std::max(0, qp - window + 1) : 0;
                const float* row = &s[(size_t(h) * nq + i) * nk];
                float* out = &ref[(size_t(h) * nq + i) * nk];
                float m = -INFINITY, l = 0;
                for (int j = lo; j <= qp; ++j) m = std::max(m, row[j] * scale);
                for (int j = lo; j <= qp; ++j) l += std::exp(row[j] * scale - m);
                for (int j = 0; j < nk; ++j) out[j] = (j >= lo && j <= qp) ? std::exp(row[j] * scale - m) / l : 0.0f;
            }
        Dev ds(s), dp(s.size() * 4);
        cuda::masked_softmax(ds.as<float>(), dp.p, DType::f32, heads, nq, nk, q0, window, scale, 0.0f, nullptr);
        EXPECT_LT(rel_err(dp.get<float>(ref.size()), ref), 1e-5) << nq << "x" << nk;
    }
}

TEST(CudaKernels, EmbeddingArgmaxActivation) {
    for (DType dt : k_dtypes) {
        const int vocab = 301, hidden = 72;
        auto e = randn(size_t(vocab) * hidden);
        auto eb = store(e, dt);
        std::vector<int32_t> ids = {0, 300, 17, 17, 250};
        std::vector<float> ref(ids.size() * hidden);
        for (size_t t = 0; t < ids.size(); ++t)
            for (int i = 0; i < hidden; ++i) ref[t * hidden + size_t(i)] = e[size_t(ids[t]) * hidden + size_t(i)] * 2.5f;
        Dev de(eb), di(ids), dx(ref.size() * 4);
        cuda::embedding(de.p, dt, di.as<int32_t>(), int(ids.size()), hidden, 2.5f, dx.as<float>(), nullptr);
        EXPECT_EQ(rel_err(dx.get<float>(ref.size()), ref), 0.0);
    }
    for (int n : {1, 2048, 151936}) {
        auto x = randn(size_t(n));
        const int want = int(std::max_element(x.begin(), x.end()) - x.begin());
        Dev dx(x), dout(4);
        cuda::argmax(dx.as<float>(), n, dout.as<int32_t>(), nullptr);
        EXPECT_EQ(dout.get<int32_t>(1)[0], want);
    }
    // Ties: the lowest index wins, as std::max_element does on the CPU.
    std::vector<float> tie(1000, 1.0f);
    tie[700] = tie[123] = 5.0f;
    Dev dt_(tie), dout(4);
    cuda::argmax(dt_.as<float>(), 1000, dout.as<int32_t>(), nullptr);
    EXPECT_EQ(dout.get<int32_t>(1)[0], 123);
    for (auto act : {cuda::GateAct::silu, cuda::GateAct::gelu_tanh}) {
        const int n = 3, f = 100;
        auto g = randn(size_t(n) * f), u = randn(size_t(n) * f);
        std::vector<float> ref(g.size());
        for (size_t i = 0; i < g.size(); ++i) ref[i] = (act == cuda::GateAct::silu ? cpu::silu(g[i]) : cpu::gelu_tanh(g[i])) * u[i];
        Dev dg(g), du(u), dout2(g.size() * 4);
        cuda::gated_act(dg.as<float>(), du.as<float>(), DType::f32, f, nullptr, nullptr, DType::f32, n, f, act, dout2.p, DType::f32,
                        nullptr);
        EXPECT_LT(rel_err(dout2.get<float>(ref.size()), ref), 1e-6);
        // bf16 inputs (the prefill's gate/up GEMM output), read as the rounded values.
        auto gr = g, ur = u;
        const auto gb = store(gr, DType::bf16), ub = store(ur, DType::bf16);
        std::vector<float> refb(g.size());
        for (size_t i = 0; i < g.size(); ++i) refb[i] = (act == cuda::GateAct::silu ? cpu::silu(gr[i]) : cpu::gelu_tanh(gr[i])) * ur[i];
        Dev dgb(gb), dub(ub);
        cuda::gated_act(dgb.p, dub.p, DType::bf16, f, nullptr, nullptr, DType::f32, n, f, act, dout2.p, DType::f32, nullptr);
        EXPECT_LT(rel_err(dout2.get<float>(refb.size()), refb), 1e-6);
    }
}

// The flash-attention prefill kernel against attention computed in double on the CPU from the same
// rounded inputs. Tolerance: the kernel rounds the (unnormalized) probabilities to the input dtype
// before the P V product and rounds the output to it (2^-9 relative for bf16, 2^-11 for f16, each
// term independently), so ||err|| / ||ref|| sits near 3e-3 for bf16 and 1e-3 for f16; a wrong
// mask, fragment or tile bound gives errors of order 1. Rows are sampled in the large cases to keep
// the reference fast; the row after the last is checked to stay untouched.
TEST(CudaKernels, PrefillAttentionMatchesCpu) {
    struct Case { int n_q, q_pos0, n_heads, n_kv, hd, window; float softcap, q_scale; int row_step; };
    const Case cases[] = {
        {1, 0, 4, 2, 64, 0, 0, 1, 1},          {1, 300, 8, 2, 128, 0, 0, 1, 1},        // one query, with and without a prefix
        {37, 0, 4, 4, 64, 0, 0, 1, 1},         {200, 91, 16, 2, 128, 0, 0, 1, 1},      // group 1; group 8, chunked prefill
        {200, 91, 8, 4, 128, 16, 0, 1, 1},     {333, 700, 8, 1, 64, 100, 50, 4, 1},    // window; window + softcap, group 8
        {130, 0, 8, 8, 256, 0, 10, 4, 1},      {300, 45, 8, 4, 256, 40, 0, 1, 1},      // head_dim 256: softcap, window
        {512, 0, 32, 8, 128, 0, 0, 1, 3},      {1000, 1048, 8, 2, 128, 0, 0, 1, 5},
        {2048, 0, 32, 8, 128, 0, 0, 1, 9},     {129, 0, 4, 2, 128, 64, 0, 1, 1},       // the 8B shape; tile edges
    };
    for (DType dt : {DType::bf16, DType::f16}) {
        for (const Case& c : cases) {
            const int Q = c.n_heads * c.hd, KV = c.n_kv * c.hd, group = c.n_heads / c.n_kv;
            const int n_keys = c.q_pos0 + c.n_q, n_ctx = n_keys + 3;
            const int q_stride = Q + 2 * KV;  // q as the first part of a fused QKV row
            auto q = randn(size_t(c.n_q) * q_stride, c.q_scale), k = randn(size_t(n_ctx) * KV), v = randn(size_t(n_ctx) * KV);
            auto qb = store(q, dt), kb = store(k, dt), vb = store(v, dt);
            const float scale = 1.0f / std::sqrt(float(c.hd));
            std::vector<int> rows;
            for (int i = 0; i < c.n_q; ++i)
                if (i % c.row_step == 0 || i >= c.n_q - 2) rows.push_back(i);
            std::vector<float> ref, got;
            std::vector<double> sc, acc(size_t(c.hd));
            const size_t es = dtype_size(dt);
            Dev dq(qb), dk(kb), dv(vb), dout(size_t(c.n_q + 1) * Q * es);
            cuda::PrefillAttnArgs a{};
            a.q = dq.p; a.q_stride = q_stride; a.k_cache = dk.p; a.v_cache = dv.p; a.out = dout.p; a.out_stride = Q;
            a.dt = dt; a.n_q = c.n_q; a.n_heads = c.n_heads; a.n_kv_heads = c.n_kv; a.head_dim = c.hd;
            a.q_pos0 = c.q_pos0; a.window = c.window; a.scale = scale; a.softcap = c.softcap;
            ASSERT_TRUE(cuda::prefill_attention_supported(dt, c.hd));
            cuda::prefill_attention(a, nullptr);
            const auto out = dout.get(size_t(c.n_q + 1) * Q, dt);
            for (int i : rows) {
                const int pos = c.q_pos0 + i, lo = c.window > 0 ? std::max(0, pos - c.window + 1) : 0;
                for (int h = 0; h < c.n_heads; ++h) {
                    const float* qh = &q[size_t(i) * q_stride + size_t(h) * c.hd];
                    const size_t koff = size_t(h / group) * c.hd;
                    sc.assign(size_t(pos - lo + 1), 0.0);
                    double m = -INFINITY, l = 0;
                    for (int j = lo; j <= pos; ++j) {
                        double d = 0;
                        for (int e = 0; e < c.hd; ++e) d += double(qh[e]) * k[size_t(j) * KV + koff + size_t(e)];
                        double s = d * scale;
                        if (c.softcap > 0) s = c.softcap * std::tanh(s / c.softcap);
                        sc[size_t(j - lo)] = s;
                        m = std::max(m, s);
                    }
                    std::fill(acc.begin(), acc.end(), 0.0);
                    for (int j = lo; j <= pos; ++j) {
                        const double p = std::exp(sc[size_t(j - lo)] - m);
                        l += p;
                        for (int e = 0; e < c.hd; ++e) acc[size_t(e)] += p * v[size_t(j) * KV + koff + size_t(e)];
                    }
                    for (int e = 0; e < c.hd; ++e) {
                        ref.push_back(float(acc[size_t(e)] / l));
                        got.push_back(out[size_t(i) * Q + size_t(h) * c.hd + size_t(e)]);
                    }
                }
            }
            const double tol = dt == DType::bf16 ? 1e-2 : 4e-3;
            EXPECT_LT(rel_err(got, ref), tol) << dtype_name(dt) << " n_q " << c.n_q << " q_pos0 " << c.q_pos0 << " heads "
                                              << c.n_heads << "/" << c.n_kv << " hd " << c.hd << " window " << c.window
                                              << " softcap " << c.softcap;
            // The poisoned row past n_q (0xff bytes: NaN) must be untouched.
            bool untouched = true;
            for (int e = 0; e < Q; ++e) untouched = untouched && std::isnan(out[size_t(c.n_q) * Q + size_t(e)]);
            EXPECT_TRUE(untouched) << "wrote past n_q, n_q " << c.n_q;
        }
    }
    EXPECT_FALSE(cuda::prefill_attention_supported(DType::f32, 128));
    EXPECT_FALSE(cuda::prefill_attention_supported(DType::bf16, 96));
}
