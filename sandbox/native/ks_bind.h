// Precompiled once per worker: the light header a load_inline unit holding torch code and pybind11 bindings is first
// compiled against, in place of torch/extension.h (sandbox/native/light.py). Every type caster torch/extension.h
// brings (pybind11's and torch's, torch/csrc/utils/pybind.h) and torch::wrap_pybind_function; not torch's C++
// frontend (nn, optim, data, serialize, jit), whose templates are most of what a unit including it instantiates.
#pragma once
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>
