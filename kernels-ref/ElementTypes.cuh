//===- ElementTypes.cuh - loads and stores of f32/f16/bf16 as f32 ---------===//
//
// Part of FlashCore. Shared by the reference kernels: they compute in f32
// whatever the storage type.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_REF_ELEMENTTYPES_CUH
#define FMHA_REF_ELEMENTTYPES_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace fmha_ref {

__device__ inline float toFloat(float x) { return x; }
__device__ inline float toFloat(__half x) { return __half2float(x); }
__device__ inline float toFloat(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ inline T fromFloat(float x);
template <> __device__ inline float fromFloat<float>(float x) { return x; }
template <> __device__ inline __half fromFloat<__half>(float x) {
  return __float2half_rn(x);
}
template <> __device__ inline __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

} // namespace fmha_ref

#endif // FMHA_REF_ELEMENTTYPES_CUH
