//===- Epilogue.h - sm_90a attention: O and LSE out -------------*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm90a. The end
// of a consumer's tile: O normalized by the row sums and written, and the
// LSE. The accumulator fragment gives a lane two adjacent columns, so O goes
// through shared memory to leave in 16-byte stores: each consumer warp
// writes its 16 rows with stmatrix to its own slab, reads them back by
// 16-byte chunks and stores those of rows below Sq. The slabs are O's own
// buffer where the kernel has one (AttentionSharedLayout), which no other
// warp touches; else the V buffer of the tile's last key block, once every
// consumer's last P V has read it, in getAttentionOutputPasses column
// slabs, after which the epilogue releases the buffer to the producer.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM90A_EPILOGUE_H
#define LIB_CONVERSION_FMHATONVGPU_SM90A_EPILOGUE_H

#include "Sm90a/PingPong.h"
#include "Sm90a/TmaPipeline.h"
#include "Sm90a/WarpSlab.h"
#include "TileSchedule.h"

namespace mlir::fmha::sm90a {

class Epilogue {
public:
  /// \p out, \p lse and \p sinks are the kernel's O, LSE and sinks
  /// parameters (\p lse and \p sinks null when the op has none);
  /// \p threadId is the thread's id (index).
  Epilogue(KernelBuilder &b, const KernelShape &shape, TmaPipeline &pipeline,
           ConsumerTurns &turns, Value threadId, Value out, Value lse,
           Value sinks)
      : b(b), shape(shape), pipeline(pipeline), turns(turns),
        threadId(threadId), out(out), lse(lse), sinks(sinks) {}

  /// Writes the tile's O and LSE from \p state, staging O in its own
  /// buffer, or in V buffer \p stage (i32), which it then releases.
  void storeOutput(const ConsumerState &state, Value stage,
                   const TileCoordinates &tile);
  /// The epilogue of a tile that saw no key block: O = 0 and LSE = +inf
  /// (with sinks, the head's sink).
  void storeEmptyRows(const TileCoordinates &tile);

private:
  /// Per row half (g, g + 8): the factor that normalizes O and the LSE
  /// (RowTotal).
  struct RowTotals {
    std::array<Value, 2> inverse, lse;
  };
  RowTotals getRowTotals(const ConsumerState &state,
                         const FragmentLanes &fragment,
                         const TileCoordinates &tile);
  /// The sinks of this lane's rows (half 0 and 1), or nulls without sinks.
  std::array<Value, 2> loadSinks(const FragmentLanes &fragment,
                                 const TileCoordinates &tile);

  void storeWarpRows(const WarpLanes &lanes, const TileCoordinates &tile,
                     int64_t first, int64_t columns,
                     llvm::function_ref<Value(Value row, Value chunk)> chunkAt);
  void storeLse(const RowTotals &totals, const FragmentLanes &lanes,
                const TileCoordinates &tile);

  KernelBuilder &b;
  const KernelShape &shape;
  TmaPipeline &pipeline;
  ConsumerTurns &turns;
  Value threadId, out, lse, sinks;
};

} // namespace mlir::fmha::sm90a

#endif // LIB_CONVERSION_FMHATONVGPU_SM90A_EPILOGUE_H
