// The chain's binding.cpp (families/binding.py): the op `fused` registered with the stable ABI, its arguments checked
// against the shapes the kernels take, each stage's intermediate allocated, then the stages' kernel functions called
// in order (on the current CUDA stream for the CUDA target).
//@ binding
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
${includes}#include <initializer_list>
#include <stdexcept>
#include <string>

using torch::stable::Tensor;

${batch_declaration}${declarations}
${definitions}
Tensor fused(${params}) {
${prologue}${checks}${intermediates}    Tensor out = torch::stable::new_empty(${first}, {${out_dims}});
${calls}
    return out;
}

STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("fused(${schema}) -> Tensor"); }
STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, ${key}, m) { m.impl("fused", TORCH_BOX(&fused)); }
//@ cuda_includes
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <cuda_runtime.h>
//@ cuda_stream
    void* stream = nullptr;
    aoti_torch_get_current_cuda_stream(${first}.get_device(), &stream);
//@ intermediate
    Tensor ${name} = torch::stable::new_empty(${first}, {${dims}});
