"""Native workspaces: kernels compiled without torch headers, a binding against a precompiled header, cached.

A workspace is a folder with `model_new.py`, `binding.cpp` (the torch binding: PYBIND11_MODULE and/or
TORCH_LIBRARY registrations) and `kernels/` (`*.cu` with CUDA headers only for the GPU; `*.cpp` plain C++ for
the CPU target; headers beside them). `model_new.py` gets its module with `load_extension(__file__)`.

Why: torch's headers are what make `load_inline` slow (about a minute on the H100). Here only the small
binding sees them, through a precompiled header built once per worker; kernels compile with nvcc alone,
in parallel under ninja; the result is cached by a hash of sources, flags, compiler, torch and GPU arch.
KernelBench-style solutions' load_inline goes through the same kind of precompiled header (sandbox/native/inline.py),
or a lighter one where the compiler shows it changes nothing (sandbox/native/light.py).
"""

from sandbox.native.build import BuildResult, build_workspace, load_extension, workspace_key

__all__ = ["BuildResult", "build_workspace", "load_extension", "workspace_key"]
