//===- attention.cu - reference fmha.attention forward --------------------===//
//
// Part of FlashCore. The oracle for generated attention kernels: f32
// arithmetic with expf, every masking case (causal bottom-right aligned,
// sliding window, partial tiles at any Sq and Sk), GQA/MQA, LSE, strided
// layouts. Correct over fast, but fast enough for 16k-token problems: one
// warp per query row, 32-key tiles of K and V staged in shared memory, one
// key per lane for Q.K, one slice of D per lane for P.V, online softmax.
//
//===----------------------------------------------------------------------===//

#include "ElementTypes.cuh"
#include "FmhaRef.h"

#include <cmath>
#include <cstdint>

namespace fmha_ref {
namespace {

constexpr int kWarpSize = 32;
/// Query rows per block: one per warp.
constexpr int kRowsPerBlock = 8;
/// Keys per shared-memory tile: one per lane.
constexpr int kKeysPerTile = kWarpSize;
constexpr int kMaxSlices = FMHA_REF_MAX_HEAD_DIM / kWarpSize;

__device__ float warpMax(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

__device__ float warpSum(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

/// The keys [first, last] query row `row` may see (empty when first > last).
struct KeyRange {
  long long first, last;
};

__device__ KeyRange visibleKeys(const fmhaRefAttentionArgs &a, long long row) {
  long long diagonal = row + a.keySeq - a.querySeq; // bottom-right aligned
  long long first = 0, last = a.keySeq - 1;
  if (a.causal)
    last = min(last, diagonal);
#ifdef FMHA_REF_BROKEN_MASK
  // Deliberately wrong (harness self-test): the causal mask lets every row
  // see one key past its diagonal.
  if (a.causal)
    last = min((long long)a.keySeq - 1, diagonal + 1);
#endif
  if (a.windowRight >= 0)
    last = min(last, diagonal + a.windowRight);
  if (a.windowLeft >= 0)
    first = max(first, diagonal - a.windowLeft);
  return {first, last};
}

template <typename T>
__global__ void __launch_bounds__(kRowsPerBlock *kWarpSize)
    attentionKernel(fmhaRefAttentionArgs a) {
  extern __shared__ float shared[];
  const int d = a.headDim;
  const int kStrideSmem = d + 1; // padded: lanes read different rows
  float *kTile = shared;                              // [32][d + 1]
  float *vTile = kTile + kKeysPerTile * kStrideSmem;  // [32][d]
  float *qRows = vTile + kKeysPerTile * d;            // [8][d]

  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int b = blockIdx.z, h = blockIdx.y;
  const int kvHead = h / (a.queryHeads / a.kvHeads);
  const long long rowBase = (long long)blockIdx.x * kRowsPerBlock;
  const long long row = rowBase + warp;
  const bool active = row < a.querySeq;

  const T *q = static_cast<const T *>(a.q) + b * a.qStride[0] +
               h * a.qStride[1] + row * a.qStride[2];
  const T *k = static_cast<const T *>(a.k) + b * a.kStride[0] +
               kvHead * a.kStride[1];
  const T *v = static_cast<const T *>(a.v) + b * a.vStride[0] +
               kvHead * a.vStride[1];
  float *qRow = qRows + warp * d;
  if (active)
    for (int i = lane; i < d; i += kWarpSize)
      qRow[i] = toFloat(q[i]);

  // The block's key range: the union of its rows' ranges, so that every warp
  // takes part in every tile load.
  long long lastRow = min(rowBase + kRowsPerBlock, (long long)a.querySeq) - 1;
  KeyRange mine = active ? visibleKeys(a, row) : KeyRange{1, 0};
  KeyRange firstRowRange = visibleKeys(a, rowBase);
  KeyRange lastRowRange = visibleKeys(a, lastRow);
  long long begin = max(0LL, min(firstRowRange.first, lastRowRange.first));
  long long end = min((long long)a.keySeq - 1,
                      max(firstRowRange.last, lastRowRange.last));
  begin -= begin % kKeysPerTile;

  float rowMax = -INFINITY, rowSum = 0.0f;
  float acc[kMaxSlices];
  for (int c = 0; c < kMaxSlices; ++c)
    acc[c] = 0.0f;

  for (long long tile = begin; tile <= end; tile += kKeysPerTile) {
    __syncthreads(); // the previous tile is consumed
    for (int i = threadIdx.x; i < kKeysPerTile * d; i += blockDim.x) {
      int key = i / d, col = i % d;
      long long j = tile + key;
      bool inside = j < a.keySeq;
      kTile[key * kStrideSmem + col] =
          inside ? toFloat(k[j * a.kStride[2] + col]) : 0.0f;
      vTile[key * d + col] = inside ? toFloat(v[j * a.vStride[2] + col]) : 0.0f;
    }
    __syncthreads();
    if (!active || tile > mine.last || tile + kKeysPerTile <= mine.first)
      continue;

    long long j = tile + lane;
    bool visible = j >= mine.first && j <= mine.last;
    float score = -INFINITY;
    if (visible) {
      float dot = 0.0f;
      for (int i = 0; i < d; ++i)
        dot = fmaf(qRow[i], kTile[lane * kStrideSmem + i], dot);
      score = dot * a.scale;
    }
    float newMax = fmaxf(rowMax, warpMax(score));
    if (newMax == -INFINITY)
      continue; // nothing visible yet
    float p = visible ? expf(score - newMax) : 0.0f;
    float alpha = expf(rowMax - newMax); // 0 when rowMax is -inf
    rowSum = rowSum * alpha + warpSum(p);
    for (int c = 0; c < kMaxSlices; ++c)
      acc[c] *= alpha;
    for (int key = 0; key < kKeysPerTile; ++key) {
      float pk = __shfl_sync(0xffffffffu, p, key);
      for (int c = 0; c < kMaxSlices; ++c) {
        int col = lane + c * kWarpSize;
        if (col < d)
          acc[c] = fmaf(pk, vTile[key * d + col], acc[c]);
      }
    }
    rowMax = newMax;
  }

  if (!active)
    return;
#ifdef FMHA_REF_BROKEN_TAIL
  // Deliberately wrong (harness self-test): the last query row is never
  // written.
  if (row == a.querySeq - 1)
    return;
#endif
  T *o = static_cast<T *>(a.o) + b * a.oStride[0] + h * a.oStride[1] +
         row * a.oStride[2];
  float inverse = rowSum > 0.0f ? 1.0f / rowSum : 0.0f;
  for (int c = 0; c < kMaxSlices; ++c) {
    int col = lane + c * kWarpSize;
    if (col < d)
      o[col] = fromFloat<T>(acc[c] * inverse);
  }
  if (a.lse && lane == 0)
    a.lse[b * a.lseStride[0] + h * a.lseStride[1] + row * a.lseStride[2]] =
        rowSum > 0.0f ? rowMax + logf(rowSum) : INFINITY;
}

template <typename T>
cudaError_t launch(const fmhaRefAttentionArgs &a, cudaStream_t stream) {
  size_t sharedBytes =
      sizeof(float) * (kKeysPerTile * (a.headDim + 1) + kKeysPerTile * a.headDim +
                       kRowsPerBlock * a.headDim);
  cudaError_t err = cudaFuncSetAttribute(
      attentionKernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
      (int)sharedBytes);
  if (err != cudaSuccess)
    return err;
  dim3 grid((a.querySeq + kRowsPerBlock - 1) / kRowsPerBlock, a.queryHeads,
            a.batch);
  attentionKernel<T><<<grid, kRowsPerBlock * kWarpSize, sharedBytes, stream>>>(a);
  return cudaGetLastError();
}

} // namespace
} // namespace fmha_ref

extern "C" cudaError_t fmhaRefAttention(const fmhaRefAttentionArgs *args,
                                        cudaStream_t stream) {
  if (!args || args->batch < 1 || args->queryHeads < 1 || args->kvHeads < 1 ||
      args->queryHeads % args->kvHeads != 0 || args->querySeq < 1 ||
      args->keySeq < 1 || args->headDim < 1 ||
      args->headDim > FMHA_REF_MAX_HEAD_DIM || !args->q || !args->k ||
      !args->v || !args->o || args->batch > 65535 || args->queryHeads > 65535)
    return cudaErrorInvalidValue;
  switch (args->dtype) {
  case FMHA_REF_F16:
    return fmha_ref::launch<__half>(*args, stream);
  case FMHA_REF_BF16:
    return fmha_ref::launch<__nv_bfloat16>(*args, stream);
  default:
    return cudaErrorInvalidValue;
  }
}
