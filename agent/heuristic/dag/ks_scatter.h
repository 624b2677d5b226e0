// The scatter family's C++ kernels (dag/scatter.py): the first out-of-range index a kernel met, raised as torch raises
// it once the kernel's loops are done (an exception cannot leave an OpenMP loop); the element that holds it is skipped,
// never written out of bounds.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#ifdef _OPENMP
#include <omp.h>
#endif

// This thread's share [first, last) of COUNT lines, inside a parallel region: contiguous, and cut at multiples of 16
// where each thread gets more than that, so that two threads seldom write one cache line.
inline void ks_share(int64_t count, int64_t& first, int64_t& last) {
#ifdef _OPENMP
    const int64_t threads = omp_get_num_threads(), id = omp_get_thread_num();
#else
    const int64_t threads = 1, id = 0;
#endif
    const int64_t align = count >= 16 * threads ? 16 : 1;
    first = count * id / threads / align * align;
    last = id + 1 == threads ? count : count * (id + 1) / threads / align * align;
}

struct KsBadIndex {
    bool found = false;
    int64_t index = 0, dim = 0, size = 0;

    void record(int64_t i, int64_t d, int64_t n) {
#pragma omp critical(ks_bad_index)
        if (!found) {
            found = true;
            index = i;
            dim = d;
            size = n;
        }
    }

    void raise(const char* what) const {
        if (found)
            throw std::runtime_error(std::string(what) + ": index " + std::to_string(index) +
                                     " is out of bounds for dimension " + std::to_string(dim) + " with size " +
                                     std::to_string(size));
    }
};
