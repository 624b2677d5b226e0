// A stable-ABI op whose C++ body calls PyTorch's own aten::mm through the dispatcher: the anti-hacking guard must
// see that compute operator (a violation) although no Python code calls it.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <stdexcept>

// Expand KS_NAMESPACE before torch's macros stringize it: some torch versions apply #ns to it directly.
#define KS_LIBRARY(ns, m) STABLE_TORCH_LIBRARY(ns, m)
#define KS_LIBRARY_IMPL(ns, k, m) STABLE_TORCH_LIBRARY_IMPL(ns, k, m)

namespace {

// torch >= 2.10 keeps the StableIValue conversions in torch::stable::detail; 2.9 has only global ones.
#if defined(TORCH_VERSION_2_10_0) && TORCH_FEATURE_VERSION >= TORCH_VERSION_2_10_0
using torch::stable::detail::from;
using torch::stable::detail::to;
#endif

using torch::stable::Tensor;

Tensor mm_through_dispatcher(const Tensor& a, const Tensor& b) {
  StableIValue stack[2] = {from(a), from(b)};
  if (aoti_torch_call_dispatcher("aten::mm", "", stack) != AOTI_TORCH_SUCCESS) {
    throw std::runtime_error("aten::mm failed");
  }
  return to<Tensor>(stack[0]);
}

// Boxed by hand: stack = [a, b] in, [result] out.
void boxed_mm(StableIValue* stack, uint64_t /*num_args*/, uint64_t /*num_outputs*/) {
  Tensor a = to<Tensor>(stack[0]);
  Tensor b = to<Tensor>(stack[1]);
  stack[0] = from(mm_through_dispatcher(a, b));
}

}  // namespace

KS_LIBRARY(KS_NAMESPACE, m) { m.def("mm(Tensor a, Tensor b) -> Tensor"); }

KS_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("mm", &boxed_mm); }
