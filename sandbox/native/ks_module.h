// Precompiled once per worker: the light header a load_inline unit holding only a pybind11 module and declarations
// (load_inline's main.cpp for a `.cu`: the functions= bindings of functions defined elsewhere) is first compiled
// against, in place of torch/extension.h (sandbox/native/light.py). Torch's type casters and
// torch::wrap_pybind_function, and `torch::` as torch/types.h opens it; not ATen's functions.
#pragma once
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>
namespace torch {
using namespace at;
}
