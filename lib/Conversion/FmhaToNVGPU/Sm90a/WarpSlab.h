//===- WarpSlab.h - sm_90a: accumulator rows out by 16 bytes ----*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm90a. A WGMMA
// accumulator fragment gives a lane two adjacent columns of a row, so a
// store from registers moves 4 bytes a lane and leaves half of every
// sector it touches unused. Both kernels' epilogues (the forward's O, the
// backward's dK and dV) instead write each consumer warp's 16 rows, packed
// to 16-bit pairs, with stmatrix into a slab of shared memory that the
// warp alone uses, read them back by 16-byte chunks and store those (or,
// the backward's slabs of 64 columns, store each slab as one TMA box: its
// XOR is then the TMA's 128-byte swizzle).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM90A_WARPSLAB_H
#define LIB_CONVERSION_FMHATONVGPU_SM90A_WARPSLAB_H

#include "Sm90a/Sm90aAttention.h"
#include "Sm90a/TmaPipeline.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace mlir::fmha::sm90a {

/// Rows of an m64nN accumulator each warp of its warpgroup owns.
constexpr int64_t kWarpRows = kWgmmaM / 4;

/// One warp's kWarpRows rows of `columns` (a power of two, at least 16)
/// 16-bit elements, row-major at
/// shared address `base` (i32). Each row's 16-byte chunks are XORed with a
/// function of the row so that the 8 rows of one 8x8 matrix (stmatrix)
/// and 8 consecutive chunks (the readback) fall on distinct 16-byte bank
/// groups: with c chunks a row, rows r and r + 8 / c share 128 bytes, so
/// the XOR takes (r / max(1, 8 / c)) % c.
struct WarpSlab {
  Value base;
  int64_t columns;

  static int64_t getBytes(int64_t columns) { return kWarpRows * columns * 2; }
  /// The narrowest slab's columns that hold \p columns: a power of two
  /// (the chunk XOR stays within a row), at least kWarpSlabMinColumns.
  static int64_t fitColumns(int64_t columns) {
    return llvm::PowerOf2Ceil(std::max<int64_t>(columns, kWarpSlabMinColumns));
  }

  /// The shared address (i32) of chunk \p chunk (i32) of row \p row (i32).
  Value getChunkAddress(KernelBuilder &b, Value row, Value chunk) const;
  /// Writes the warp's fragment rows with stmatrix: \p words[i] holds
  /// chunk i's two columns of the lane's rows g and g + 8 (packPair), for
  /// the slab's columns / 8 chunks. \p lane is the lane (i32).
  void store(KernelBuilder &b, TmaPipeline &pipeline, Value lane,
             ArrayRef<std::array<Value, 2>> words) const;
  /// Chunk \p chunk of row \p row (i32 both) as a vector<4xi32>.
  Value loadChunk(KernelBuilder &b, TmaPipeline &pipeline, Value row,
                  Value chunk) const;
};

/// The words WarpSlab::store takes for a slab of \p slabColumns from a
/// consumer's m64nN accumulator of \p columns (at most \p slabColumns):
/// word (i, h) packs elements 4 i + 2 h and 4 i + 2 h + 1 (chunk i's two
/// columns of the lane's row g + 8 h), each first passed through
/// \p scale with its h; zeros past the accumulator's columns, which the
/// slab holds but no store reads.
SmallVector<std::array<Value, 2>>
packSlabWords(KernelBuilder &b, Type elementType, Value accumulator,
              int64_t columns, int64_t slabColumns,
              llvm::function_ref<Value(Value element, int64_t half)> scale);

/// This thread's warp among the consumer warps (after the producer
/// warpgroup's), and its lane, both i32; derived from a copy of
/// \p threadId hidden from hoisting, so that nothing derived from them is
/// held across the loops before the epilogue that calls it.
struct WarpLanes {
  Value consumerWarp, lane;

  static WarpLanes derive(KernelBuilder &b, Value threadId);
};

/// Calls \p body with each of a warp's kWarpRows x \p columns / 8 16-byte
/// chunks (row and chunk, i32) that lane \p lane takes: consecutive lanes
/// take consecutive chunks of a row, so that a warp's stores cover whole
/// rows.
void forEachLaneChunk(KernelBuilder &b, Value lane, int64_t columns,
                      llvm::function_ref<void(Value row, Value chunk)> body);

/// Orders a warp's shared accesses around a slab's stores and readback.
void syncWarp(KernelBuilder &b);

} // namespace mlir::fmha::sm90a

#endif // LIB_CONVERSION_FMHATONVGPU_SM90A_WARPSLAB_H
