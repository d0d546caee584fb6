//===- Sm80Attention.h - what the sm_80 emitters share --------*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm80. The sm_80
// attention kernel is written by one emitter per instruction family
// (AsyncCopy, WarpMma, FragmentSoftmax, Epilogue) and scheduled by
// AttentionToGPUSm80.cpp; this header is the vocabulary they share: the
// sizes the op and the tile fix for the whole kernel, the shared tiles and
// their swizzle, which fragment elements and ldmatrix rows a lane holds, and
// a warp's running state.
//
// Shared tiles are rows of D elements (rounded up to 64, 128 or 256) in
// 16-byte chunks, chunk c of row r stored at c ^ (r mod 8) (Swizzle<3,3,3>):
// the 8 rows one ldmatrix phase reads hit 8 different bank groups.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM80_SM80ATTENTION_H
#define LIB_CONVERSION_FMHATONVGPU_SM80_SM80ATTENTION_H

#include "AttentionCommon.h"
#include "KernelBuilder.h"
#include "fmha/Dialect/Fmha/FmhaDialect.h"

#include <array>

namespace mlir::fmha::sm80 {

/// mma.sync m16n8k16: the tile of one accumulator fragment is 16 x 8.
constexpr int64_t kMmaM = 16, kMmaN = 8, kMmaK = 16;
/// One cp.async, one ldmatrix row and one vector store move 16 bytes.
constexpr int64_t kChunkBytes = 16;
/// Rows of one swizzle period: chunk c of row r lives at c ^ (r % 8).
constexpr int64_t kSwizzleRows = 8;
/// ldmatrix chunk pairs (16 columns) of a swizzled 64-column block: the
/// swizzle permutes a row's kSwizzleRows chunks.
constexpr int64_t kChunkPairsPerBlock = kSwizzleRows / 2;

/// The kernel's parameters: the op's operands in order (sinks, where
/// the op has them, after the last: getSinksArgument; then key_lengths:
/// getKeyLengthsArgument).
enum KernelArgument { kQ, kK, kV, kO, kLse };

/// What the op and its tile fix for the whole kernel.
struct KernelShape {
  int64_t blockM, blockN, warps;
  /// q's and k's head dim D, and v's and o's Dv (D but where they differ).
  int64_t headDim, valueHeadDim;
  /// Columns of a Q or K tile's row and of a V or O tile's row
  /// (getAttentionTileColumns): D and Dv rounded up to 64, 128 or 256; the
  /// columns past them are never copied nor read.
  int64_t keyColumns, valueColumns;
  Type elementType;
  /// Elements per 16-byte chunk.
  int64_t chunkElements;
  /// m16 tiles of a warp's rows, n8 tiles of a key block, n8 tiles of Dv.
  int64_t mTiles, nTiles, dTiles;
  float scale, scaleLog2;
  /// The op's logit softcapping, applied to each score before the mask.
  std::optional<ScoreCap> softcap;
  /// Where Q, K, V and the held row sums live in shared memory.
  AttentionSharedLayout sharedLayout;
  /// Whether the held row sums live in shared memory (FragmentSoftmax).
  bool sumsInShared;
  /// Whether a tile copy's passes address their rows from one base
  /// (AsyncCopy): where the O and S accumulators take fewer than
  /// kSm80AccumulatorRegisterBudget registers per thread (d64 at 128x64 with
  /// 4 warps: 128).
  bool copyPassesShareBase;

  static KernelShape get(AttentionOp op, TileAttr tile);
  /// The sizes alone: \p blockM rows over \p warps warps, \p blockN
  /// columns, head dims \p headDims. Nothing in shared memory but the
  /// tiles (no row sums), and each copy pass from its own base.
  static KernelShape get(int64_t blockM, int64_t blockN, int64_t warps,
                         AttentionHeadDims headDims, Type elementType,
                         float scale);
};

/// The Q, K and V tiles in shared memory, the O tile the epilogue stages
/// its rows in (over the others, from the base: AttentionSharedLayout), and
/// the shared address (i32) of the row sums where they live there
/// (KernelShape::sumsInShared).
struct SharedTiles {
  Value q, k, v, o;
  Value sums;

  static SharedTiles create(KernelBuilder &b, const KernelShape &shape);
};

/// How one lane addresses the ldmatrix.x4 loads of one operand: its row
/// (plus multiples of 8 added per load) and its 16-byte chunk (plus even
/// numbers 2k per load). The swizzled column of chunk 2k + c in a row r is
/// 8 * (k / 4) chunks plus ((2 (k % 4) + c) ^ (r % 8)): four per-lane
/// values plus constants, so that each load is one of four base registers
/// and an immediate offset (given that they are not hoisted: see Lanes).
struct LaneMatrices {
  Value row;
  std::array<Value, 4> columns;
};

/// \p lanes moved to group \p group (i32, of \p groups) of \p pairs
/// 16-column chunk pairs, for loads of pairs [0, \p pairs) from there:
/// whole 64-column blocks move each lane's columns by a constant; in the
/// second half of a block, pairs 0 and 1 are the lanes' columns of pairs 2
/// and 3; other counts select each column by the group (with 3 pairs a
/// group, the second group's are the lanes' pair 3 and the next block's
/// pairs 0 and 1).
LaneMatrices moveToChunkPairs(KernelBuilder &b, const KernelShape &shape,
                              const LaneMatrices &lanes, Value group,
                              int64_t groups, int64_t pairs);

/// The per-thread values every phase uses (i32): the thread id, the first
/// row of the warp, the lane's g and t in its quad, and its ldmatrix
/// coordinates. Each phase (the prologue, each key block, the epilogue)
/// derives them from its own hidden copy of the thread id: otherwise LLVM
/// hoists every per-thread address out of the key loops and shares the
/// epilogue's with the prologue's, keeping hundreds of values live across
/// the loops (spills at head dim 128). Recomputing them costs a few integer
/// ops per key block.
///
/// In a grid of warps (\p columnWarps > 1 in derive), warp w takes the
/// rows of row group w / columnWarps and column group w % columnWarps
/// (columnGroup): shape.blockN columns of S (keyLanes move there) and
/// shape.dTiles n8 tiles of D (valueLanes move there: moveToChunkPairs).
struct Lanes {
  Value tid, warpRow, quadRow, quadCol;
  /// The warp's column group (i32): 0 where the warps are one column.
  Value columnGroup;
  LaneMatrices queryLanes, keyLanes, valueLanes;

  static Lanes derive(KernelBuilder &b, const KernelShape &shape, Value id,
                      int64_t columnWarps = 1);

  /// The query row (index) of half \p half of m16 tile \p m that this lane
  /// holds, in a tile from \p firstRow.
  Value getRow(KernelBuilder &b, Value firstRow, int64_t m, int64_t half) const;
};

/// The column (in elements, i32) of 16-byte chunk \p chunk of row \p row in
/// a swizzled tile.
Value swizzle(KernelBuilder &b, const KernelShape &shape, Value row,
              Value chunk);

/// One m16n8 f32 accumulator fragment: vector<2x2xf32>.
VectorType getAccumulatorType(KernelBuilder &b);

/// The \p elements elements of \p tensor from \p at (index; contiguous
/// there) as a memref of one dimension and unit stride: a view for the
/// accesses that address a run themselves, or that need a unit-stride
/// source (cp.async of an element of a strided tensor).
Value viewRun(KernelBuilder &b, Value tensor, ValueRange at, int64_t elements);

/// Registers of one warp's fragments of the running state: O, and the row
/// max and row sum of the online softmax, in a fixed order so that they can
/// be carried through scf.for.
struct SoftmaxState {
  /// [mTile][dTile] accumulators, vector<2x2xf32> each.
  SmallVector<Value> out;
  /// [mTile][half] (slot 2 m + half): the rows g and g + 8 of each m16
  /// tile this lane owns.
  SmallVector<Value> rowMax;
  /// The sums of the slots this lane holds (FragmentSoftmax::heldSums);
  /// empty where they live in shared memory.
  SmallVector<Value> rowSum;

  SmallVector<Value> flatten() const {
    SmallVector<Value> values(out);
    llvm::append_range(values, rowMax);
    llvm::append_range(values, rowSum);
    return values;
  }
  static SoftmaxState unflatten(ValueRange values, size_t outCount,
                                size_t rowCount) {
    SoftmaxState state;
    state.out.assign(values.begin(), values.begin() + outCount);
    state.rowMax.assign(values.begin() + outCount,
                        values.begin() + outCount + rowCount);
    state.rowSum.assign(values.begin() + outCount + rowCount, values.end());
    return state;
  }
};

} // namespace mlir::fmha::sm80

#endif // LIB_CONVERSION_FMHATONVGPU_SM80_SM80ATTENTION_H
