// Precompiled once per worker: the light header a load_inline host unit (torch code without pybind11) is first
// compiled against, in place of torch/extension.h (sandbox/native/light.py). Tensors, ATen's functions and torch's
// factories: the torch code of a kernel's launcher rarely needs more.
#pragma once
#include <torch/types.h>
