// The stable-ABI binding of the sum over one dimension: the caller allocates the output and passes the
// (outer, reduced, inner) view of the input; the kernel runs on torch's current stream.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <stdexcept>
#include <string>

#include "kernels/sum_dim.h"

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

void sum_dim(const Tensor& x, const Tensor& out, int64_t outer, int64_t reduced, int64_t inner) {
  if (outer * reduced * inner != x.numel() || outer * inner != out.numel()) {
    throw std::runtime_error("sum_dim: (outer, reduced, inner) does not match the tensors");
  }
  const char* err = ks_sum_dim(static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), outer,
                               reduced, inner, current_stream(x));
  if (err != nullptr) throw std::runtime_error(std::string("sum kernel: ") + err);
}

// Boxed by hand, which every torch with the stable ABI accepts: stack = [x, out, outer, reduced, inner].
void boxed_sum_dim(StableIValue* stack, uint64_t /*num_args*/, uint64_t /*num_outputs*/) {
  Tensor x = to<Tensor>(stack[0]);
  Tensor out = to<Tensor>(stack[1]);
  sum_dim(x, out, to<int64_t>(stack[2]), to<int64_t>(stack[3]), to<int64_t>(stack[4]));
}

}  // namespace

KS_LIBRARY(KS_NAMESPACE, m) {
  m.def("sum_dim(Tensor x, Tensor(a!) out, int outer, int reduced, int inner) -> ()");
}

KS_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("sum_dim", &boxed_sum_dim); }
