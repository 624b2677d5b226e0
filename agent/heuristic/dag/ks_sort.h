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

#ifndef __CUDACC__
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

// An unsigned integer whose order is the sort family's order of the values (ascending): floats by their bits, sign
// folded, -0 as 0 and every NaN the largest; signed integers with their sign bit flipped.
template <typename T> inline auto ks_sort_key(T v) {
    if constexpr (std::is_same<T, bool>::value) {
        return (uint8_t)v;
    } else if constexpr (std::is_floating_point<T>::value) {
        using U = typename std::conditional<sizeof(T) == 8, uint64_t, uint32_t>::type;
        const U sign = (U)1 << (8 * sizeof(U) - 1);
        U bits;
        const T value = v == 0 ? (T)0 : v;
        std::memcpy(&bits, &value, sizeof bits);
        return v != v ? ~(U)0 : ((bits & sign) ? ~bits : bits | sign);
    } else {
        using U = typename std::make_unsigned<T>::type;
        return std::is_signed<T>::value ? (U)((U)v ^ ((U)1 << (8 * sizeof(U) - 1))) : (U)v;
    }
}

// A thread's sorter of rows of T: the positions 0..n-1 of a row's values in the sort family's order. A least
// significant digit radix sort of bytes (stable, so equal values keep their positions' order, descending ones too:
// their keys are complemented), skipping a byte that all keys share; short rows by insertion.
template <typename T> struct KsRowSorter {
    using Key = decltype(ks_sort_key(T()));
    std::vector<Key> keys, spare_keys;
    std::vector<int64_t> spare;

    template <bool DESCENDING> void sort(const T* values, int64_t n, int64_t* order) {
        if (n <= 32) {
            for (int64_t c = 0; c < n; ++c) {
                int64_t at = c;
                for (; at > 0 && ks_sort_before<DESCENDING, T>(values[c], c, values[order[at - 1]], order[at - 1]); --at)
                    order[at] = order[at - 1];
                order[at] = c;
            }
            return;
        }
        keys.resize(n);
        spare_keys.resize(n);
        spare.resize(n);
        Key *key = keys.data(), *to_key = spare_keys.data();
        int64_t *at = order, *to = spare.data();
        for (int64_t c = 0; c < n; ++c) {
            const Key k = ks_sort_key(values[c]);
            key[c] = DESCENDING ? (Key)~k : k;
            at[c] = c;
        }
        for (unsigned shift = 0; shift < 8 * sizeof(Key); shift += 8) {
            int64_t start[256] = {0};
            for (int64_t c = 0; c < n; ++c) ++start[(key[c] >> shift) & 255];
            if (start[(key[0] >> shift) & 255] == n) continue;
            int64_t sum = 0;
            for (int d = 0; d < 256; ++d) {
                const int64_t count = start[d];
                start[d] = sum;
                sum += count;
            }
            for (int64_t c = 0; c < n; ++c) {
                const int64_t place = start[(key[c] >> shift) & 255]++;
                to_key[place] = key[c];
                to[place] = at[c];
            }
            std::swap(key, to_key);
            std::swap(at, to);
        }
        if (at != order) std::memcpy(order, at, n * sizeof(int64_t));
    }
};
#endif
