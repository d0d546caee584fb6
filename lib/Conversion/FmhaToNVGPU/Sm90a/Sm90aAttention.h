//===- Sm90aAttention.h - what the sm_90a emitters share ------*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm90a. The
// sm_90a attention kernel is written by one emitter per instruction family
// (TmaPipeline, WarpgroupGemm, FragmentSoftmax, ConsumerTurns, Epilogue)
// and scheduled by AttentionToGPUSm90a.cpp; this header is the vocabulary
// they share: the sizes the op and the tile fix for the whole kernel, the
// kernel's parameters, the layout of a WGMMA accumulator fragment, and a
// consumer's running state.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM90A_SM90AATTENTION_H
#define LIB_CONVERSION_FMHATONVGPU_SM90A_SM90AATTENTION_H

#include "AttentionCommon.h"
#include "KernelBuilder.h"
#include "fmha/Dialect/Fmha/FmhaDialect.h"

#include <array>

namespace mlir::fmha::sm90a {

constexpr int64_t kWarpgroupThreads = 128;
/// Rows of one WGMMA (m64nNk16), the rows one consumer warpgroup owns.
constexpr int64_t kWgmmaM = 64, kWgmmaK = 16;
/// WGMMA's N is a multiple of 8 (16-bit inputs, f32 accumulators).
constexpr int64_t kWgmmaNStep = 8;
/// A TMA box and a swizzle atom row: 128 bytes, 64 16-bit elements.
constexpr int64_t kSwizzleBytes = 128, kBoxColumns = 64;
/// Bytes of one 8-row swizzle atom, the alignment of every tile.
constexpr int64_t kAtomBytes = 8 * kSwizzleBytes;
static_assert(kAtomBytes == kSm90aTileAlignment,
              "the shared layout aligns the tiles to the swizzle atom");

/// The kernel's parameters, in the order getSm90aLaunchContract lists them
/// (sinks and key_lengths, where the op has them, after the last:
/// getSinksArgument, getKeyLengthsArgument).
enum KernelArgument { kQMap, kKMap, kVMap, kQ, kK, kV, kO, kLse };

/// What the op and its tile fix for the whole kernel.
struct KernelShape {
  int64_t blockM, blockN, stages, consumers;
  /// q's and k's head dim D, and v's and o's Dv (D but where they differ).
  int64_t headDim, valueHeadDim;
  /// Columns of a Q or K tile's row and of a V tile's row
  /// (getAttentionTileColumns): D and Dv rounded up to a multiple of 64,
  /// the columns past them zeros (TMA's out-of-bounds fill). Q K^T walks
  /// D's columns, P V (and so O) outputColumns of the V tile's.
  int64_t keyColumns, valueColumns;
  /// 64-column blocks of those rows: TMA boxes per tile.
  int64_t keyColumnBlocks, valueColumnBlocks;
  /// O's columns: Dv rounded up to a multiple of 8, the N of P V and the
  /// width of the accumulator. P V reads that prefix of each V row; the
  /// MN-major operand's last 64-column block may be read in part.
  int64_t outputColumns;
  /// Where the tiles and the mbarriers live in shared memory.
  AttentionSharedLayout sharedLayout;
  /// Bytes of the Q tile and of one K and one V buffer: what their TMA
  /// loads move.
  int64_t queryBytes, keyBytes, valueBytes;
  /// Rows of a K or V TMA box (getKeyBoxRows): a buffer's block_n rows take
  /// block_n / keyBoxRows loads of each column block.
  int64_t keyBoxRows;
  /// The producer's warps that issue a K or V block's boxes: up to all
  /// four, each every issuingWarps-th box (one thread's chain of table
  /// loads and boxes fell behind the GEMMs at pages of 16 rows); one where
  /// a box is the whole block. Each arrives on the block's full barriers
  /// (getIssuingWarps).
  int64_t issuingWarps = 1;
  /// Column slabs the epilogue stages O in (getAttentionOutputPasses), in
  /// O's own buffer where sharedLayout has one, else in the last V buffer.
  int64_t outputPasses;
  Type elementType;
  float scale, scaleLog2;
  /// The op's logit softcapping, applied to each score before the mask.
  std::optional<ScoreCap> softcap;
  /// The op has key_lengths, a page_table or key_offsets: a tile's first
  /// key block may hold rows of v past its keys (in k's extent, so TMA
  /// loads them: a cache's unfilled rows, the next packed sequence's or
  /// those past the last; with pages, what the buffer held), which the
  /// consumers zero before P V reads them (a zero weight times NaN is NaN).
  bool limitsKeys = false;

  static KernelShape get(AttentionOp op, TileAttr tile);
};

/// The rows of the TMA boxes that load \p op's K and V blocks of \p tile's
/// block_n rows: block_n, or with a page table the largest count that
/// divides both block_n and the page size (a multiple of 8, as both are),
/// so that no box straddles two pages.
int64_t getKeyBoxRows(AttentionOp op, TileAttr tile);

/// The producer warps that issue the boxes of a block of \p blockN rows in
/// boxes of \p keyBoxRows: min(4, blockN / keyBoxRows). A K or V full
/// barrier takes an arrive from each, after its wait for that buffer's
/// empty barrier, even where the block holds no box of that warp (a
/// block's last keys): a warp whose arrive the consumers did not wait for
/// could fall two phases behind the empty barrier and then wait on its
/// parity forever.
int64_t getIssuingWarps(int64_t blockN, int64_t keyBoxRows);

/// Per-thread coordinates of the m64nN accumulator fragment (PTX ISA,
/// "Register fragments for wgmma"): warp w of the warpgroup holds rows
/// 16w + g and 16w + g + 8, lane 4g + t columns 8i + 2t and 8i + 2t + 1 of
/// each n8 chunk i, as elements 4i .. 4i + 3 (row g: 4i, 4i + 1). All index.
struct FragmentLanes {
  /// The first of this consumer warpgroup's 64 rows, this lane's row g
  /// (both relative to the tile) and t.
  Value consumerRow, laneRow, quadCol;

  /// Derives them from a copy of \p threadId hidden from hoisting: each
  /// phase of the kernel (a key block, the epilogue) derives its own, so
  /// that LLVM does not hoist them and keep them live across the loops.
  static FragmentLanes derive(KernelBuilder &b, Value threadId);

  /// The query row of half \p half (row g or g + 8) of this lane, in a tile
  /// from \p firstRow.
  Value getRow(KernelBuilder &b, Value firstRow, int64_t half) const;
};

/// The m64nNk16 f32 accumulator of one thread: N / 2 floats, one LLVM
/// struct that ptxas keeps in place across the WGMMAs.
Type getAccumulatorType(KernelBuilder &b, int64_t n);

/// The first \p count fields of \p accumulator.
SmallVector<Value> unpackAccumulator(KernelBuilder &b, Value accumulator,
                                     int64_t count);

/// \p low and \p high (f32) rounded to \p elementType, packed in an i32
/// (\p low in the low half): one register of an MMA or stmatrix fragment.
Value packPair(KernelBuilder &b, Type elementType, Value low, Value high);

/// The running state of one consumer thread: O (a WGMMA accumulator struct,
/// kept whole so that ptxas keeps it in place across the loop), the max and
/// sum of its rows g and g + 8, and the count of key blocks consumed (i32;
/// it names the buffer and the barrier phase).
struct ConsumerState {
  Value out;
  std::array<Value, 2> rowMax, rowSum;
  Value consumed;

  SmallVector<Value> flatten() const {
    return {out, rowMax[0], rowMax[1], rowSum[0], rowSum[1], consumed};
  }
  static ConsumerState unflatten(ValueRange values) {
    return {
        values[0], {values[1], values[2]}, {values[3], values[4]}, values[5]};
  }
};

} // namespace mlir::fmha::sm90a

#endif // LIB_CONVERSION_FMHATONVGPU_SM90A_SM90AATTENTION_H
