// The sort family's order (dag/sort.py), the same in C++ and CUDA: by value, NaN as the largest (as torch sorts it),
// then by position, so that equal values keep their order (torch's stable sort) and a row has one sorted order
// whatever the algorithm.
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define KS_SORT_FN __host__ __device__ __forceinline__
#else
#define KS_SORT_FN inline
#endif

// Whether value A at position IA comes before value B at position IB.
template <bool DESCENDING, typename T> KS_SORT_FN bool ks_sort_before(T a, int64_t ia, T b, int64_t ib) {
    const bool a_nan = a != a, b_nan = b != b;
    if (a_nan || b_nan) return a_nan && b_nan ? ia < ib : (DESCENDING ? a_nan : b_nan);
    if (a != b) return DESCENDING ? a > b : a < b;
    return ia < ib;
}
