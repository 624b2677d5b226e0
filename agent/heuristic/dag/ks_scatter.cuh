// The scatter family's CUDA kernels (dag/scatter.py): each source element combined into its target by an atomic update
// (the hardware's add where it has one, else a compare-and-swap loop, on the aligned 32-bit word for 1- and 2-byte
// types), and the first out-of-range index recorded on the device, then raised by the host as torch raises it.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

// OUT = F(OUT, V), atomically.
template <typename T, typename F> __device__ __forceinline__ void ks_atomic_apply(T* out, T v, F f) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "a scatter of this type");
    if constexpr (sizeof(T) == 8) {
        unsigned long long* word = reinterpret_cast<unsigned long long*>(out);
        unsigned long long old = *word, assumed;
        do {
            assumed = old;
            T cur, next;
            memcpy(&cur, &assumed, 8);
            next = f(cur, v);
            unsigned long long bits;
            memcpy(&bits, &next, 8);
            if (bits == assumed) return;
            old = atomicCAS(word, assumed, bits);
        } while (old != assumed);
    } else if constexpr (sizeof(T) == 4) {
        unsigned int* word = reinterpret_cast<unsigned int*>(out);
        unsigned int old = *word, assumed;
        do {
            assumed = old;
            T cur, next;
            memcpy(&cur, &assumed, 4);
            next = f(cur, v);
            unsigned int bits;
            memcpy(&bits, &next, 4);
            if (bits == assumed) return;
            old = atomicCAS(word, assumed, bits);
        } while (old != assumed);
    } else {
        // the 32-bit word that holds OUT (little-endian: its byte offset in the word is its shift / 8)
        const size_t address = reinterpret_cast<size_t>(out);
        unsigned int* word = reinterpret_cast<unsigned int*>(address & ~(size_t)3);
        const unsigned int shift = (unsigned int)(address & 3) * 8;
        const unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
        unsigned int old = *word, assumed;
        do {
            assumed = old;
            const unsigned int field = (assumed & mask) >> shift;
            T cur, next;
            memcpy(&cur, &field, sizeof(T));
            next = f(cur, v);
            unsigned int bits = 0;
            memcpy(&bits, &next, sizeof(T));
            const unsigned int updated = (assumed & ~mask) | ((bits << shift) & mask);
            if (updated == assumed) return;
            old = atomicCAS(word, assumed, updated);
        } while (old != assumed);
    }
}

// OUT += V, atomically: the hardware's add for float, double, int32 and int64 (two's complement: an unsigned add).
template <typename T> __device__ __forceinline__ void ks_atomic_add(T* out, T v) {
    if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value || std::is_same<T, int>::value) {
        atomicAdd(out, v);
    } else if constexpr (std::is_same<T, int64_t>::value) {
        atomicAdd(reinterpret_cast<unsigned long long*>(out), (unsigned long long)v);
    } else {
        ks_atomic_apply(out, v, [](T a, T b) { return (T)(a + b); });
    }
}

// BAD: {found, index, dim, size} of the first out-of-range index (a __device__ array of the kernel's own).
__device__ __forceinline__ void ks_record_bad_index(unsigned long long* bad, int64_t index, int64_t dim, int64_t size) {
    if (atomicCAS(bad, 0ull, 1ull) == 0ull) {
        bad[1] = (unsigned long long)index;
        bad[2] = (unsigned long long)dim;
        bad[3] = (unsigned long long)size;
    }
}

// After a scatter's kernels: raises the out-of-range index they recorded in the __device__ array SYMBOL, as torch
// raises it. Waits for the stream; skipped while it is being captured into a CUDA graph (a replay's elements with such
// an index are skipped all the same, and the index is raised by the next call that checks).
static inline void ks_check_indices(const void* symbol, cudaStream_t stream, const char* what) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
        cudaGetLastError();
        return;
    }
    unsigned long long bad[4] = {0, 0, 0, 0};
    if (cudaMemcpyFromSymbolAsync(bad, symbol, sizeof bad, 0, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess)
        throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(cudaGetLastError()));
    if (!bad[0]) return;
    const unsigned long long clear[4] = {0, 0, 0, 0};
    cudaMemcpyToSymbol(symbol, clear, sizeof clear);
    throw std::runtime_error(std::string(what) + ": index " + std::to_string((long long)bad[1]) +
                             " is out of bounds for dimension " + std::to_string((long long)bad[2]) + " with size " +
                             std::to_string((long long)bad[3]));
}
