//===- WarpgroupGemm.h - the sm_90a attention kernel's WGMMAs ---*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm90a. The two
// GEMMs of a consumer warpgroup as WGMMA (m64nNk16, f32 accumulators): S =
// Q K^T with both operands in shared memory, and O += P V with A = P in
// registers. The operands are the TMA tiles as TmaPipeline lays them out,
// described to the tensor cores by shared memory matrix descriptors: K-major
// with 128-byte swizzle for Q and K, MN-major (transposed) for V.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM90A_WARPGROUPGEMM_H
#define LIB_CONVERSION_FMHATONVGPU_SM90A_WARPGROUPGEMM_H

#include "Sm90a/TmaPipeline.h"

namespace mlir::fmha::sm90a {

class WarpgroupGemm {
public:
  WarpgroupGemm(KernelBuilder &b, const KernelShape &shape,
                TmaPipeline &pipeline)
      : b(b), shape(shape), pipeline(pipeline) {}

  /// Issues S = Q K^T for the 64 rows from \p consumerRow (index) of the Q
  /// tile, from K buffer \p stage (i32). The caller fences, commits and
  /// waits.
  Value issueScores(Value stage, Value consumerRow);

  /// Issues \p out += P V from V buffer \p stage (i32); \p probabilities
  /// are P as four packed registers per k16 step (FragmentSoftmax). The
  /// caller fences, commits and waits.
  Value issueValues(ArrayRef<Value> probabilities, Value stage, Value out);

  /// wgmma.fence: the accumulators and A registers are written before the
  /// WGMMAs that follow read them.
  void fence();
  /// wgmma.commit_group of the WGMMAs issued since the last one.
  void commitGroup();
  /// wgmma.wait_group: waits until at most \p pending groups are in flight.
  void waitGroup(int64_t pending);

private:
  Value getDescriptor(Value address, int64_t leadingBytes, int64_t strideBytes);
  Value advance(Value descriptor, int64_t bytes);
  Value emitRegisterWgmma(ArrayRef<Value> a, Value descriptor, Value out);

  KernelBuilder &b;
  const KernelShape &shape;
  TmaPipeline &pipeline;
};

} // namespace mlir::fmha::sm90a

#endif // LIB_CONVERSION_FMHATONVGPU_SM90A_WARPGROUPGEMM_H
