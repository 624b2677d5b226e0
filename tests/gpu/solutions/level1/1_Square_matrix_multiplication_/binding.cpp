// The stable-ABI binding of the matrix product: the caller allocates the output; cuBLAS runs on torch's
// current stream.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <stdexcept>
#include <string>

#include "kernels/matmul.h"

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

void matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (a.dim() != 2 || b.dim() != 2 || a.size(1) != b.size(0) || out.size(0) != a.size(0) ||
      out.size(1) != b.size(1)) {
    throw std::runtime_error("matmul: expected a (m, k), b (k, n) and out (m, n)");
  }
  const char* err = ks_matmul(static_cast<const float*>(a.data_ptr()), static_cast<const float*>(b.data_ptr()),
                              static_cast<float*>(out.data_ptr()), a.size(0), a.size(1), b.size(1),
                              a.get_device_index(), current_stream(a));
  if (err != nullptr) throw std::runtime_error(std::string("cuBLAS matmul: ") + err);
}

// Boxed by hand, which every torch with the stable ABI accepts: stack = [a, b, out], nothing returned.
void boxed_matmul(StableIValue* stack, uint64_t /*num_args*/, uint64_t /*num_outputs*/) {
  Tensor a = to<Tensor>(stack[0]);
  Tensor b = to<Tensor>(stack[1]);
  Tensor out = to<Tensor>(stack[2]);
  matmul(a, b, out);
}

}  // namespace

KS_LIBRARY(KS_NAMESPACE, m) { m.def("matmul(Tensor a, Tensor b, Tensor(a!) out) -> ()"); }

KS_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("matmul", &boxed_matmul); }
