// The stable-ABI binding of the mean cross-entropy: the caller allocates the scalar output and the partial-sum
// scratch; both kernels run on torch's current stream.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <stdexcept>
#include <string>

#include "kernels/cross_entropy.h"

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

void cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& partial, const Tensor& out) {
  if (logits.dim() != 2 || target.dim() != 1 || target.size(0) != logits.size(0)) {
    throw std::runtime_error("cross_entropy: logits must be (rows, classes) and target (rows,)");
  }
  const char* err = ks_cross_entropy(static_cast<const float*>(logits.data_ptr()),
                                     static_cast<const int64_t*>(target.data_ptr()),
                                     static_cast<float*>(partial.data_ptr()), partial.numel(),
                                     static_cast<float*>(out.data_ptr()), logits.size(0), logits.size(1),
                                     logits.get_device_index(), current_stream(logits));
  if (err != nullptr) throw std::runtime_error(std::string("cross-entropy kernel: ") + err);
}

// Boxed by hand, which every torch with the stable ABI accepts: stack = [logits, target, partial, out].
void boxed_cross_entropy(StableIValue* stack, uint64_t /*num_args*/, uint64_t /*num_outputs*/) {
  Tensor logits = to<Tensor>(stack[0]);
  Tensor target = to<Tensor>(stack[1]);
  Tensor partial = to<Tensor>(stack[2]);
  Tensor out = to<Tensor>(stack[3]);
  cross_entropy(logits, target, partial, out);
}

}  // namespace

KS_LIBRARY(KS_NAMESPACE, m) {
  m.def("cross_entropy(Tensor logits, Tensor target, Tensor(a!) partial, Tensor(b!) out) -> ()");
}

KS_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("cross_entropy", &boxed_cross_entropy); }
