#include "runtime/rope.h"

#include <cmath>
#include <numbers>

namespace tt {

RopeTable make_rope_table(const RopeSpec& r) {
    RopeTable t;
    t.rotary_dim = r.rotary_dim;
    const int half = r.rotary_dim / 2;
    t.inv_freq.resize(size_t(half));
    // transformers: 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), in float32.
    for (int i = 0; i < half; ++i) {
        const float expo = float(2 * i) / float(r.rotary_dim);
        t.inv_freq[size_t(i)] = 1.0f / std::pow(float(r.theta), expo);
    }
    switch (r.scaling) {
    case RopeScaling::none: break;
    case RopeScaling::linear:
        for (auto& f : t.inv_freq) f = float(f / r.factor);
        break;
    case RopeScaling::proportional:
        // _compute_proportional_rope_parameters: the exponents above already run over the whole
        // head (rotary_dim == head_dim); pairs from rotated_pairs on get frequency 0, so cos 1 and
        // sin 0 leave them exactly as they are.
        for (int i = 0; i < half; ++i) {
            float& f = t.inv_freq[size_t(i)];
            f = i < r.rotated_pairs ? float(f / r.factor) : 0.0f;
        }
        break;
    case RopeScaling::llama3: {
        // _compute_llama3_parameters: long wavelengths are slowed by `factor`, short ones kept,
        // the band between interpolated smoothly.
        const double old_ctx = r.original_max_position;
        const double low_wavelen = old_ctx / r.low_freq_factor, high_wavelen = old_ctx / r.high_freq_factor;
        for (auto& f : t.inv_freq) {
            const double wavelen = 2 * std::numbers::pi / f;
            double g = wavelen > low_wavelen ? f / r.factor : f;
            if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen)) {
                const double smooth = (old_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
                g = (1 - smooth) * g / r.factor + smooth * g;
            }
            f = float(g);
        }
        break;
    }
    case RopeScaling::yarn: {
        // _compute_yarn_parameters: blend interpolated and extrapolated frequencies with a linear
        // ramp over the dims whose rotation count lies between beta_slow and beta_fast.
        const double dim = r.rotary_dim, base = r.theta;
        auto correction_dim = [&](double n_rot) {
            return dim * std::log(r.original_max_position / (n_rot * 2 * std::numbers::pi)) / (2 * std::log(base));
        };
        double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
        if (r.truncate) {
            low = std::floor(low);
            high = std::ceil(high);
        }
        low = std::max(low, 0.0);
        high = std::min(high, dim - 1);
        if (low == high) high += 0.001;
        for (int i = 0; i < half; ++i) {
            const float pos_freq = std::pow(float(base), float(2 * i) / float(dim));
            const float extrap = 1.0f / pos_freq, interp = 1.0f / (float(r.factor) * pos_freq);
            const float ramp = std::clamp(float((i - low) / (high - low)), 0.0f, 1.0f);
            const float extrap_w = 1.0f - ramp;
            t.inv_freq[size_t(i)] = interp * (1 - extrap_w) + extrap * extrap_w;
        }
        t.attention_factor = float(r.attention_factor);
        break;
    }
    }
    return t;
}

void apply_rope(float* x, int pos, const RopeTable& t) {
    const int half = t.rotary_dim / 2;
    for (int i = 0; i < half; ++i) {
        // Angle in float32 as torch does (inv_freq @ position_ids in float32).
        const float angle = float(pos) * t.inv_freq[size_t(i)];
        const float c = std::cos(angle) * t.attention_factor, s = std::sin(angle) * t.attention_factor;
        const float a = x[i], b = x[i + half];
        x[i] = a * c - b * s;
        x[i + half] = b * c + a * s;
    }
}

}  // namespace tt
