//===- resample.cu - reference fmha.resample ------------------------------===//
//
// Part of FlashCore. The oracle for generated resample kernels: one thread
// per output element, a binary search per element, f32 interpolation.
// Correct over fast.
//
// For target t in a row with n valid samples (times non-decreasing):
//   n == 0                  -> 0
//   t <  times[0]           -> values[0]
//   t >= times[n - 1]       -> values[n - 1]
//   otherwise, i = the last sample with times[i] <= t (so times[i + 1] > t,
//   and a zero-width interval is never interpolated across):
//     previous -> values[i]
//     nearest  -> values[i] if t - times[i] <= times[i + 1] - t, else [i + 1]
//     linear   -> values[i] + w * (values[i + 1] - values[i]),
//                 w = (t - times[i]) / (times[i + 1] - times[i])
//
//===----------------------------------------------------------------------===//

#include "ElementTypes.cuh"
#include "FmhaRef.h"

#include <cstdint>

namespace fmha_ref {
namespace {

/// The number of samples with time <= t among times[0, n).
__device__ int countAtOrBefore(const float *times, int n, float t) {
  int low = 0, high = n;
  while (low < high) {
    int mid = (low + high) / 2;
    if (times[mid] <= t)
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

template <typename T>
__global__ void resampleKernel(fmhaRefResampleArgs a, int totalFeatures) {
  long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long perRow = (long long)a.targets * totalFeatures;
  if (index >= perRow * a.batch)
    return;
  int b = index / perRow;
  int t = (index % perRow) / totalFeatures;
  int feature = index % totalFeatures;
#ifdef FMHA_REF_BROKEN_TAIL
  // Deliberately wrong (harness self-test): the last target of each row is
  // never written.
  if (t == a.targets - 1)
    return;
#endif

  int stream = 0;
  while (feature >= a.streams[stream].features) {
    feature -= a.streams[stream].features;
    ++stream;
  }
  int outFeature = index % totalFeatures;
  const fmhaRefStream &s = a.streams[stream];
  int n = s.samples;
  if (s.lengths)
    n = min(max(s.lengths[b], 0), s.samples);
  T *out = static_cast<T *>(a.out) + b * a.outStride[0] + t * a.outStride[1] +
           outFeature;
  if (n == 0) {
    *out = fromFloat<T>(0.0f);
    return;
  }
  const float *times = s.times + b * s.timesStride;
  const T *values = static_cast<const T *>(s.values) + b * s.valuesStride[0] +
                    feature;
  auto value = [&](int i) { return toFloat(values[i * s.valuesStride[1]]); };
  float target = a.targetTimes[b * a.targetStride + t];

  int count = countAtOrBefore(times, n, target);
  float result;
  if (count == 0) {
    result = value(0);
  } else if (count == n) {
    result = value(n - 1);
  } else {
    int i = count - 1;
    float t0 = times[i], t1 = times[i + 1];
    switch (a.mode) {
    case FMHA_REF_PREVIOUS:
      result = value(i);
      break;
    case FMHA_REF_NEAREST:
      result = target - t0 <= t1 - target ? value(i) : value(i + 1);
      break;
    default: {
      float w = (target - t0) / (t1 - t0);
      float v0 = value(i);
      result = fmaf(w, value(i + 1) - v0, v0);
      break;
    }
    }
  }
  *out = fromFloat<T>(result);
}

template <typename T>
cudaError_t launch(const fmhaRefResampleArgs &a, int totalFeatures,
                   cudaStream_t stream) {
  long long total = (long long)a.batch * a.targets * totalFeatures;
  const int threads = 256;
  long long blocks = (total + threads - 1) / threads;
  if (blocks > 0x7fffffffLL)
    return cudaErrorInvalidValue;
  resampleKernel<T><<<(unsigned)blocks, threads, 0, stream>>>(a,
                                                               totalFeatures);
  return cudaGetLastError();
}

} // namespace
} // namespace fmha_ref

extern "C" cudaError_t fmhaRefResample(const fmhaRefResampleArgs *args,
                                       cudaStream_t stream) {
  if (!args || args->batch < 1 || args->targets < 1 || args->numStreams < 1 ||
      args->numStreams > FMHA_REF_MAX_STREAMS || !args->targetTimes ||
      !args->out)
    return cudaErrorInvalidValue;
  int totalFeatures = 0;
  for (int s = 0; s < args->numStreams; ++s) {
    const fmhaRefStream &stream_ = args->streams[s];
    if (!stream_.times || !stream_.values || stream_.samples < 1 ||
        stream_.features < 1)
      return cudaErrorInvalidValue;
    totalFeatures += stream_.features;
  }
  switch (args->dtype) {
  case FMHA_REF_F32:
    return fmha_ref::launch<float>(*args, totalFeatures, stream);
  case FMHA_REF_F16:
    return fmha_ref::launch<__half>(*args, totalFeatures, stream);
  case FMHA_REF_BF16:
    return fmha_ref::launch<__nv_bfloat16>(*args, totalFeatures, stream);
  }
  return cudaErrorInvalidValue;
}
