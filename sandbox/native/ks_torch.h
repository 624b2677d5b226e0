// Precompiled once per worker: everything a native workspace's binding.cpp may include from torch.
#pragma once
#include <torch/extension.h>
#ifdef KS_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif
