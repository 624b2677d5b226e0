#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <cuda_runtime.h>

using torch::stable::Tensor;

void rowsum_launch(const float* x, float* out, int64_t rows, int64_t cols, cudaStream_t stream);

// x: float32 [rows, cols], contiguous; returns [rows].
Tensor rowsum(Tensor x) {
    int64_t rows = x.size(0), cols = x.size(1);
    Tensor out = torch::stable::new_empty(x, {rows});
    void* stream = nullptr;
    aoti_torch_get_current_cuda_stream(x.get_device(), &stream);
    rowsum_launch(reinterpret_cast<const float*>(x.data_ptr()), reinterpret_cast<float*>(out.data_ptr()), rows, cols,
                  static_cast<cudaStream_t>(stream));
    return out;
}

STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("rowsum(Tensor x) -> Tensor"); }
STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CUDA, m) { m.impl("rowsum", TORCH_BOX(&rowsum)); }
