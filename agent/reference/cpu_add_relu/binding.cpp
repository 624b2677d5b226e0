#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

using torch::stable::Tensor;

void add_relu_forward(const float* x, const float* y, float* out, int64_t n);

// float32, contiguous (model_new.py calls .contiguous()).
Tensor add_relu(Tensor x, Tensor y) {
    Tensor out = torch::stable::empty_like(x);
    add_relu_forward(reinterpret_cast<const float*>(x.data_ptr()), reinterpret_cast<const float*>(y.data_ptr()),
                     reinterpret_cast<float*>(out.data_ptr()), x.numel());
    return out;
}

STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("add_relu(Tensor x, Tensor y) -> Tensor"); }
STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CPU, m) { m.impl("add_relu", TORCH_BOX(&add_relu)); }
