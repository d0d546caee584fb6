//===- AsyncCopy.h - sm_80 attention: cp.async tile copies ------*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm80. The copies
// of the sm_80 attention kernel: Q, K and V tiles from global to swizzled
// shared memory with cp.async (nvgpu.device_async_copy), 16 bytes per
// thread at a time, grouped and waited for as the kernel's schedule says.
// Rows past the end of a tensor are zero-filled, never read.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM80_ASYNCCOPY_H
#define LIB_CONVERSION_FMHATONVGPU_SM80_ASYNCCOPY_H

#include "Sm80/Sm80Attention.h"
#include "TileSchedule.h"

namespace mlir::fmha::sm80 {

class AsyncCopy {
public:
  /// \p keys: where the forward's key blocks are (copyKeyBlock).
  AsyncCopy(KernelBuilder &b, const KernelShape &shape, KeyRows keys = {})
      : b(b), shape(shape), keys(keys) {}

  /// Starts the cp.async copy of rows [first, first + rows) of (batch
  /// \p tile.batchIndex, head \p headIndex) of \p global into \p shared.
  /// When \p bounded, rows at or past \p valid are zero-filled (their source
  /// address clamped to a valid row, never read) if the tile extends that
  /// far; otherwise the caller knows that every row is valid. The bounded
  /// copy, a clamp and a select per row, runs only in the tile that needs
  /// it: in the others its registers would be pressure for nothing.
  /// \p keyRows: the rows are keys of the tile's batch entry, found through
  /// the keys this AsyncCopy was made with (KeyRows::locate: a page
  /// table's pages).
  void copyTile(const Lanes &lanes, const TileCoordinates &tile, Value global,
                Value headIndex, Value first, Value valid, Value shared,
                int64_t rows, bool bounded, bool keyRows = false);

  /// Copies key block \p block (i32) of \p global (K or V) into \p shared;
  /// \p bounded when the block may extend past Sk. With packed keys (the
  /// tile's keyBase), \p global is the tensor's viewRowsAsEntries.
  void copyKeyBlock(const Lanes &lanes, const TileCoordinates &tile,
                    Value global, Value shared, Value block, bool bounded);

  /// Starts the cp.async copy of the one 4-byte element at \p source of
  /// \p global to \p destination of \p shared, or zeros where
  /// \p inBounds is false (\p source must still be a valid address).
  void copyElement(Value global, ValueRange source, Value shared,
                   ValueRange destination, Value inBounds);

  /// Starts a cp.async group of the copies issued since the last one.
  void commit();

  /// Waits for every cp.async group of this thread, then for every thread.
  void waitForAll();

  /// \p tensor ([1, H, T, D], packed rows) viewed as [T, H, T, D] with its
  /// row stride as the batch stride: entry e's row r is the tensor's row
  /// e + r, so a packed sequence's first row is an entry, as a batch index
  /// is.
  static Value viewRowsAsEntries(KernelBuilder &b, Value tensor);

private:
  void emitTileCopy(const Lanes &lanes, const TileCoordinates &tile,
                    Value global, Value headIndex, Value first, Value valid,
                    Value shared, int64_t rows, bool bounded, bool keyRows);

  KernelBuilder &b;
  const KernelShape &shape;
  KeyRows keys;
};

} // namespace mlir::fmha::sm80

#endif // LIB_CONVERSION_FMHATONVGPU_SM80_ASYNCCOPY_H
