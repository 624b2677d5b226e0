// The stable-ABI binding of the scale test double: the caller allocates the output and picks the behaviour.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <stdexcept>
#include <string>

#include "kernels/scale.h"

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

void scale(const Tensor& x, const Tensor& out, int64_t behavior, int64_t spin_us) {
  const char* err = ks_scale(static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), x.numel(),
                             behavior, spin_us, x.get_device_index(), current_stream(x));
  if (err != nullptr) throw std::runtime_error(std::string("scale kernel: ") + err);
}

// Boxed by hand, which every torch with the stable ABI accepts: stack = [x, out, behavior, spin_us].
void boxed_scale(StableIValue* stack, uint64_t /*num_args*/, uint64_t /*num_outputs*/) {
  Tensor x = to<Tensor>(stack[0]);
  Tensor out = to<Tensor>(stack[1]);
  scale(x, out, to<int64_t>(stack[2]), to<int64_t>(stack[3]));
}

}  // namespace

KS_LIBRARY(KS_NAMESPACE, m) { m.def("scale(Tensor x, Tensor(a!) out, int behavior, int spin_us) -> ()"); }

KS_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("scale", &boxed_scale); }
