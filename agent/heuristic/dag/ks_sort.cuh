// The sort family's CUDA building block (dag/sort.py): a block sorts a row (or a chunk of one) in shared memory.
#pragma once
#include "ks_sort.h"

// Sorts the N values of KEYS and their positions ORDER (0 .. P - 1) by ks_sort_before: a bitonic network over P, a
// power of two, the block's threads sharing each step. Positions from N up are padding (their keys unset): they sort
// last, whatever their keys hold.
template <bool DESCENDING, typename T> __device__ void ks_bitonic_sort(T* keys, int* order, int p, int n) {
    auto before = [&](int x, int y) {  // whether slot x's element comes before slot y's
        if (order[x] >= n) return false;
        if (order[y] >= n) return true;
        return ks_sort_before<DESCENDING>(keys[x], (int64_t)order[x], keys[y], (int64_t)order[y]);
    };
    for (int k = 2; k <= p; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int t = threadIdx.x; t < p; t += blockDim.x) {
                const int u = t ^ j;
                if (u > t && ((t & k) == 0 ? before(u, t) : before(t, u))) {
                    const T key = keys[t];
                    keys[t] = keys[u];
                    keys[u] = key;
                    const int position = order[t];
                    order[t] = order[u];
                    order[u] = position;
                }
            }
            __syncthreads();
        }
    }
}
