// The binding's checks of its arguments (the kernel library: binding.cpp includes "kernels/ks_checks.h"): an input
// against every dim the kernels take, a parameter or buffer against its element count. Define KS_SHAPES, the note
// the errors end with (which dims may vary), before including it.
#pragma once
#include <torch/csrc/stable/tensor.h>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

static std::string ks_shape(const int64_t* sizes, int64_t rank) {
    std::string text = "[";
    for (int64_t d = 0; d < rank; ++d) text += (d ? ", " : "") + std::to_string(sizes[d]);
    return text + "]";
}

static void check(const torch::stable::Tensor& t, std::initializer_list<int64_t> shape, const char* name) {
    bool same = t.dim() == (int64_t)shape.size();
    for (int64_t d = 0; same && d < t.dim(); ++d) same = t.sizes()[d] == shape.begin()[d];
    if (!same)
        throw std::runtime_error(std::string(name) + ": expected shape " + ks_shape(shape.begin(), shape.size()) +
                                 ", got " + ks_shape(t.sizes().data(), t.dim()) + KS_SHAPES);
    if (!t.is_contiguous()) throw std::runtime_error(std::string(name) + " must be contiguous");
}

static void check_numel(const torch::stable::Tensor& t, int64_t numel, const char* name) {
    if (t.numel() != numel)
        throw std::runtime_error(std::string(name) + ": expected " + std::to_string(numel) + " elements, got " +
                                 std::to_string(t.numel()) + KS_SHAPES);
    if (!t.is_contiguous()) throw std::runtime_error(std::string(name) + " must be contiguous");
}
