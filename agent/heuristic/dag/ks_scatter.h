// The scatter family's C++ kernels (dag/scatter.py): the first out-of-range index a kernel met, raised as torch raises
// it once the kernel's loops are done (an exception cannot leave an OpenMP loop); the element that holds it is skipped,
// never written out of bounds.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

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
