//===- Epilogue.h - sm_80 attention: O and LSE out --------------*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm80. The end of
// a row block: O normalized by the row sums and staged, rounded, over the
// (then unused) Q tile, so that it leaves in 16-byte row chunks rather than
// the fragments' 4-byte pairs; and the LSE, written by the lane that holds
// columns 0-1 of each row.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM80_EPILOGUE_H
#define LIB_CONVERSION_FMHATONVGPU_SM80_EPILOGUE_H

#include "Sm80/AsyncCopy.h"
#include "Sm80/FragmentSoftmax.h"

namespace mlir::fmha::sm80 {

class Epilogue {
public:
  /// \p out, \p lse and \p sinks are the kernel's O, LSE and sinks
  /// parameters (\p lse and \p sinks null when the op has none);
  /// \p threadId is the thread's id (i32).
  Epilogue(KernelBuilder &b, const KernelShape &shape, const SharedTiles &tiles,
           AsyncCopy &copies, FragmentSoftmax &softmax, Value threadId,
           Value out, Value lse, Value sinks)
      : b(b), shape(shape), tiles(tiles), copies(copies), softmax(softmax),
        threadId(threadId), out(out), lse(lse), sinks(sinks) {}

  /// Writes the O and LSE of \p tile from \p state.
  void build(const TileCoordinates &tile, const SoftmaxState &state);

private:
  void storeOutputTile(const Lanes &lanes, const TileCoordinates &tile);

  KernelBuilder &b;
  const KernelShape &shape;
  const SharedTiles &tiles;
  AsyncCopy &copies;
  FragmentSoftmax &softmax;
  Value threadId, out, lse, sinks;
};

} // namespace mlir::fmha::sm80

#endif // LIB_CONVERSION_FMHATONVGPU_SM80_EPILOGUE_H
