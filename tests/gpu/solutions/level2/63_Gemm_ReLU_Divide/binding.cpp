// The stable-ABI binding of the GEMM with its fused epilogue: the caller allocates the output; cuBLAS and the
// epilogue kernel run on torch's current stream.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <stdexcept>
#include <string>

#include "kernels/gemm_relu_divide.h"

// shim.h declares it only under USE_CUDA, which a workspace build does not define; libtorch_cuda exports it.
extern "C" AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream);

// Expand KS_NAMESPACE before torch's macros stringize it: some torch versions apply #ns to it directly.
#define KS_LIBRARY(ns, m) STABLE_TORCH_LIBRARY(ns, m)
#define KS_LIBRARY_IMPL(ns, k, m) STABLE_TORCH_LIBRARY_IMPL(ns, k, m)

namespace {

// torch >= 2.10 keeps the StableIValue conversions in torch::stable::detail; 2.9 has only global ones.
#if defined(TORCH_VERSION_2_10_0) && TORCH_FEATURE_VERSION >= TORCH_VERSION_2_10_0
using torch::stable::detail::to;
#endif

using torch::stable::Tensor;

void* current_stream(const Tensor& t) {
  void* stream = nullptr;
  if (aoti_torch_get_current_cuda_stream(t.get_device_index(), &stream) != AOTI_TORCH_SUCCESS) {
    throw std::runtime_error("cannot get the current CUDA stream");
  }
  return stream;
}

void gemm_relu_divide(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out,
                      double divisor) {
  if (x.dim() != 2 || weight.dim() != 2 || x.size(1) != weight.size(1) || bias.numel() != weight.size(0) ||
      out.numel() != x.size(0) * weight.size(0)) {
    throw std::runtime_error("gemm_relu_divide: expected x (m, k), weight (n, k), bias (n) and out (m, n)");
  }
  const char* err = ks_gemm_relu_divide(
      static_cast<const float*>(x.data_ptr()), static_cast<const float*>(weight.data_ptr()),
      static_cast<const float*>(bias.data_ptr()), static_cast<float*>(out.data_ptr()), x.size(0), x.size(1),
      weight.size(0), static_cast<float>(divisor), x.get_device_index(), current_stream(x));
  if (err != nullptr) throw std::runtime_error(std::string("gemm_relu_divide: ") + err);
}

// Boxed by hand, which every torch with the stable ABI accepts: stack = [x, weight, bias, out, divisor].
void boxed_gemm_relu_divide(StableIValue* stack, uint64_t /*num_args*/, uint64_t /*num_outputs*/) {
  Tensor x = to<Tensor>(stack[0]);
  Tensor weight = to<Tensor>(stack[1]);
  Tensor bias = to<Tensor>(stack[2]);
  Tensor out = to<Tensor>(stack[3]);
  gemm_relu_divide(x, weight, bias, out, to<double>(stack[4]));
}

}  // namespace

KS_LIBRARY(KS_NAMESPACE, m) {
  m.def("gemm_relu_divide(Tensor x, Tensor weight, Tensor bias, Tensor(a!) out, float divisor) -> ()");
}

KS_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("gemm_relu_divide", &boxed_gemm_relu_divide); }
