// The stable-ABI binding of the row softmax: the caller allocates the output; the kernel runs on torch's
// current stream.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <stdexcept>
#include <string>

#include "kernels/softmax.h"

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

// Softmax over the last dimension of a contiguous float32 tensor.
void softmax_last(const Tensor& x, const Tensor& out) {
  const int64_t cols = x.dim() > 0 ? x.size(x.dim() - 1) : 1;
  const int64_t rows = cols > 0 ? x.numel() / cols : 0;
  const char* err = ks_softmax_rows(static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()),
                                    rows, cols, current_stream(x));
  if (err != nullptr) throw std::runtime_error(std::string("softmax kernel: ") + err);
}

// Boxed by hand, which every torch with the stable ABI accepts: stack = [x, out], nothing returned.
void boxed_softmax_last(StableIValue* stack, uint64_t /*num_args*/, uint64_t /*num_outputs*/) {
  Tensor x = to<Tensor>(stack[0]);
  Tensor out = to<Tensor>(stack[1]);
  softmax_last(x, out);
}

}  // namespace

KS_LIBRARY(KS_NAMESPACE, m) { m.def("softmax_last(Tensor x, Tensor(a!) out) -> ()"); }

KS_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("softmax_last", &boxed_softmax_last); }
