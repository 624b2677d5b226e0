// The inverse error function of the C++ kernels (CUDA has erfinvf / erfinv): M. Giles' single-precision
// approximation ("Approximating the erfinv function", GPU Computing Gems, 2010) as a first guess, then Newton steps on
// erf in double until they settle (erfc past 0.5, where 1 - |x| is exact and erf(y) - |x| would cancel): two for a
// float, more for a double within 1e-12 of +-1, where the guess is coarse. As torch.erfinv: +-1 give +-inf, |x| > 1
// and NaN give NaN.
#pragma once
#include <cmath>
#include <limits>

static inline double ks_erfinv_guess(double a) {
    double w = -std::log((1.0 - a) * (1.0 + a)), p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    } else {
        w = std::sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    }
    return p * a;
}

static inline double ks_erfinv(double x) {
    const double a = std::fabs(x);
    if (!(a < 1.0)) return a == 1.0 ? std::copysign(std::numeric_limits<double>::infinity(), x) : NAN;
    double y = ks_erfinv_guess(a);
    for (int step = 0; step < 12; ++step) {
        const double f = a < 0.5 ? std::erf(y) - a : (1.0 - a) - std::erfc(y);
        const double delta = f / (1.1283791670955126 * std::exp(-y * y));  // erf'(y) = 2 / sqrt(pi) exp(-y^2)
        y -= delta;
        if (std::fabs(delta) <= 1e-15 * y) break;
    }
    return std::copysign(y, x);
}

static inline float ks_erfinvf(float x) { return (float)ks_erfinv((double)x); }
