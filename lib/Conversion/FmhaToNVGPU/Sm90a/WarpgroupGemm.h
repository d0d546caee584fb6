//===- WarpgroupGemm.h - the sm_90a attention kernel's WGMMAs ---*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm90a. The GEMMs
// of a consumer warpgroup as WGMMA (m64nNk16, f32 accumulators), over tiles
// laid out as TMA writes them with 128-byte swizzle: rows of 64 16-bit
// elements (128 bytes), a row of D elements split into D / 64 column blocks
// of rows x 128 bytes each, described to the tensor cores by shared memory
// matrix descriptors. Four forms:
//   - multiplyKMajor: C = A B^T with A and B tiles of rows over D (K-major),
//     the forward's S = Q K^T and the backward's S^T = K Q^T, dP^T = V dO^T;
//   - accumulateRegisterA: out += A B with A in registers and B a tile whose
//     rows are the K dimension (MN-major), the forward's O += P V and the
//     backward's dV += P^T dO, dK += dS^T Q;
//   - accumulateSharedA: the same with A a K-major tile in shared memory,
//     the backward's dV and dK at head dim 256 (P^T and dS^T of both
//     consumers);
//   - multiplyMnMajor: C = A B with both from MN-major tiles, the
//     backward's dQ = dS K from dS^T and K.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM90A_WARPGROUPGEMM_H
#define LIB_CONVERSION_FMHATONVGPU_SM90A_WARPGROUPGEMM_H

#include "Sm90a/TmaPipeline.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::fmha::sm90a {

class WarpgroupGemm {
public:
  WarpgroupGemm(KernelBuilder &b, const KernelShape &shape,
                TmaPipeline &pipeline)
      : b(b), shape(shape), pipeline(pipeline) {}

  /// The descriptor of the 64 rows from \p consumerRow (index) of Q
  /// buffer \p querySlot (i32), for issueScores.
  Value getQueryDescriptor(Value querySlot, Value consumerRow);

  /// Issues S = Q K^T for Q's rows at \p queries (getQueryDescriptor),
  /// from K buffer \p stage (i32). The caller fences, commits and waits.
  Value issueScores(Value queries, Value stage);

  /// Issues \p out += P V from V buffer \p stage (i32); \p probabilities
  /// are P as four packed registers per k16 step (FragmentSoftmax). The
  /// caller fences, commits and waits.
  Value issueValues(ArrayRef<Value> probabilities, Value stage, Value out);

  /// Issues C = A B^T (m64nN, K = \p kColumns, the tiles' columns past
  /// it zeros): A the 64 rows from shared address \p a (i32, in column
  /// block 0) of a tile of \p aRows rows, B the \p n rows at \p bTile, a
  /// tile of \p bRows rows.
  Value multiplyKMajor(Value a, int64_t aRows, Value bTile, int64_t bRows,
                       int64_t n, int64_t kColumns);

  /// Issues \p out += A B (m64nN): A four packed registers per k16 step,
  /// B the \p n columns of the \p kRows rows at \p bTile.
  Value accumulateRegisterA(ArrayRef<Value> a, Value bTile, int64_t kRows,
                            int64_t n, Value out);

  /// Issues \p out += A B (m64nN, K = \p kRows, at most 64): A the 64
  /// rows of the K-major tile at \p aTile (one column block), B as for
  /// accumulateRegisterA.
  Value accumulateSharedA(Value aTile, Value bTile, int64_t kRows, int64_t n,
                          Value out);

  /// Issues C = A B (m64nN, K = \p kRows): A from the tile of \p kRows
  /// rows of 64 columns at \p aTile (its rows are A's columns), B the \p n
  /// columns from shared address \p b0 of a tile of \p kRows rows: a
  /// column block's first column, or one inside its rows (the swizzle is
  /// of the address, so a start inside a row reads as the TMA wrote).
  Value multiplyMnMajor(Value aTile, Value b0, int64_t kRows, int64_t n);

  /// wgmma.fence: the accumulators and A registers are written before the
  /// WGMMAs that follow read them.
  void fence();
  /// wgmma.commit_group of the WGMMAs issued since the last one.
  void commitGroup();
  /// wgmma.wait_group: waits until at most \p pending groups are in flight.
  void waitGroup(int64_t pending);

private:
  Value getDescriptor(Value address, int64_t leadingBytes, int64_t strideBytes);
  Value getKMajorDescriptor(Value address);
  /// Of a tile whose \p kRows rows are the K dimension.
  Value getMnMajorDescriptor(Value address, int64_t kRows);
  Value multiplyKMajorDescriptors(Value aDescriptor, int64_t aRows,
                                  Value bDescriptor, int64_t bRows, int64_t n,
                                  int64_t kColumns);
  Value advance(Value descriptor, int64_t bytes);
  Value emitSharedWgmma(Value a, Value bOperand, int64_t n,
                        NVVM::MMALayout aLayout, NVVM::MMALayout bLayout,
                        bool first, Value c);
  Value emitRegisterWgmma(ArrayRef<Value> a, Value descriptor, int64_t n,
                          Value out);

  KernelBuilder &b;
  const KernelShape &shape;
  TmaPipeline &pipeline;
};

} // namespace mlir::fmha::sm90a

#endif // LIB_CONVERSION_FMHATONVGPU_SM90A_WARPGROUPGEMM_H
