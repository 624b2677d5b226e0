// Launcher of y = 2x + 1 in one of several behaviours, honest or misbehaving on purpose (see scale.cu).
// Returns nullptr, or the CUDA error's text.
#pragma once
#include <cstdint>

enum KsScaleBehavior : int64_t {
  kHonest = 0,          // on the current stream
  kSideStream = 1,      // on a private stream, never joined back to the current one
  kIllegalAddress = 2,  // writes through an unmapped pointer
  kHang = 3,            // never finishes
  kHalfOutput = 4,      // writes only the first half of y
};

const char* ks_scale(const float* x, float* y, int64_t n, int64_t behavior, int64_t spin_us, int device,
                     void* stream);
