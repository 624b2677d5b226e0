// A classic binding (torch/extension.h, pybind11) whose C++ body calls at::matmul: the anti-hacking guard must
// see the ATen compute operators behind it (a violation).
#include <torch/extension.h>

torch::Tensor matmul(const torch::Tensor& a, const torch::Tensor& b) { return at::matmul(a, b); }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("matmul", &matmul, "at::matmul, hidden in C++"); }
