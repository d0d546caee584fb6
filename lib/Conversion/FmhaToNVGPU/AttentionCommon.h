//===- AttentionCommon.h - what every attention lowering shares -*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU: the pieces of the
// FlashAttention algorithm that do not depend on the chip's instructions,
// written once for the sm_80 (Sm80/) and sm_90a (Sm90a/) kernels: which key
// blocks a block of query rows visits, which scores the mask hides, the
// online softmax of a row, the quad reductions of the accumulator fragments
// (the same m16n8 pattern in mma.sync and WGMMA), ex2, and what both launch
// contracts share. Which tiles a CTA takes is TileSchedule.h's.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_ATTENTIONCOMMON_H
#define LIB_CONVERSION_FMHATONVGPU_ATTENTIONCOMMON_H

#include "KernelBuilder.h"
#include "fmha/Dialect/Fmha/FmhaDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <optional>

namespace mlir::fmha {

/// Threads of a warp, on every chip.
constexpr int64_t kThreadsPerWarp = 32;

/// The keys each query row sees: key j is visible to row i iff
/// lo(i) <= j <= hi(i), lo(i) = i + diagonal - left, hi(i) = i + diagonal +
/// right, diagonal = Sk - Sq (bottom-right aligned). A missing side is
/// unbounded; causal is right = 0. Sides are clamped to 2^40 keys so that
/// row + Sk + side stays far from overflowing 64-bit index arithmetic.
struct AttentionWindow {
  std::optional<int64_t> left, right;
  static AttentionWindow get(AttentionOp op);
  static AttentionWindow get(AttentionGradOp op);
  static AttentionWindow get(bool causal,
                             std::optional<ArrayRef<int64_t>> sides);

  /// The same visibility seen from the keys: query i is visible to key j
  /// iff lo'(j) <= i <= hi'(j) with the diagonal Sq - Sk, left' = right
  /// and right' = left (RowMask and KeyBlockRange over keys as rows).
  AttentionWindow transposed() const { return {right, left}; }
};

/// Key blocks [firstBlock, lastBlockEnd) hold every key some row of a block
/// of query rows sees; [unmaskedBegin, unmaskedEnd) within it are fully
/// visible to every row. The three ranges nest. Kernels visit them from the
/// last block to the first: masked [unmaskedEnd, lastBlockEnd), unmasked,
/// then masked [firstBlock, unmaskedBegin) (only with a left window side).
struct KeyBlockRange {
  Value diagonal;
  Value firstBlock, lastBlockEnd, unmaskedBegin, unmaskedEnd;

  /// The range of rows firstRow .. firstRow + blockM - 1 of \p seqQ (all
  /// index). With \p queryGroup (G, index: pack_query_heads), seqQ is
  /// Sq x G rows and row r holds query r / G.
  static KeyBlockRange compute(KernelBuilder &b, Value seqQ, Value seqK,
                               Value firstRow, int64_t blockM, int64_t blockN,
                               const AttentionWindow &window,
                               Value queryGroup = Value());

  /// Keeps the part of the range in key split \p split of \p splits (both
  /// i32; split_keys): blocks [split * c, (split + 1) * c) of the ceil(Sk /
  /// block_n), c = ceil(blocks / splits). The ranges still nest; an empty
  /// one has lastBlockEnd == firstBlock.
  void restrictToSplit(KernelBuilder &b, Value seqK, int64_t blockN,
                       Value split, Value splits);
};

/// The mask of one query row within a key block, as columns relative to
/// the first key a lane holds (so that each of its scores compares a
/// constant column): a score in column c is hidden iff c > last or
/// c < first (first only with a left window side). i32, clamped to
/// [-1, blockN].
struct RowMask {
  Value last, first;

  /// The mask of query \p row for keys from \p laneKey on.
  static RowMask compute(KernelBuilder &b, Value row, Value laneKey, Value seqK,
                         Value diagonal, int64_t blockN,
                         const AttentionWindow &window);
  /// Whether the score \p column (a constant) columns after laneKey is
  /// hidden.
  Value hides(ImplicitLocOpBuilder &b, int64_t column) const;
};

/// The KV head that query head \p head reads (GQA: Hq / Hkv query heads
/// share one).
Value getKvHead(ImplicitLocOpBuilder &b, Value q, Value k, Value head);

/// G = Hq / Hkv (i32): the query heads that share a KV head, from \p q's
/// and \p k's head counts (dimension 1), which with \p fresh are read anew
/// where used (hideFromHoisting: not held across loops).
Value getQueryGroup(KernelBuilder &b, Value q, Value k, bool fresh = false);

/// \p value / \p divisor (both index), computed in 32 bits: a 64-bit
/// division by a runtime value is a long sequence that the sm_90a producer
/// has no registers for. Rows and heads fit (TMA coordinates are 32-bit).
Value divideWords(KernelBuilder &b, Value value, Value divisor);

/// Division of i32 dividends below 2^31 by one run-time i32 divisor d from
/// 1 to 2^31, as a multiply-high, an add and a shift (Granlund and
/// Montgomery's round-up method: q = (umulhi(n, m) + n) >> l, l = ceil(log2
/// d), m = 2^32 (2^l - d) / d + 1, exact for every n < 2^31). The magic
/// number and shift are derived once, where the divisor is known (a 32-step
/// restoring division, ~100 instructions); a loop then divides by it in
/// three instructions where a division by a run-time value takes ~20 (I2F,
/// MUFU.RCP, F2I and their fix-ups) every iteration.
struct InvariantDivisor {
  static InvariantDivisor get(KernelBuilder &b, Value divisor);
  /// n / d of \p dividend n (i32, below 2^31).
  Value divide(KernelBuilder &b, Value dividend) const;
  /// n % d, from n / d (\p quotient, divide's).
  Value remainder(KernelBuilder &b, Value dividend, Value quotient) const;

  Value divisor, multiplier, shift;
};

/// The operands of fmha.attention, in order: the launch operands of both
/// kernels.
enum AttentionOperand : unsigned {
  kQOperand,
  kKOperand,
  kVOperand,
  kOOperand,
  kLseOperand
};

/// The kernel parameter of \p op's sinks, where the kernel's parameters
/// put lse at \p lseArgument: the one after lse, or lse's own where the op
/// has no lse (the parameters follow the op's operands).
inline unsigned getSinksArgument(AttentionOp op, unsigned lseArgument) {
  return lseArgument + (op.getLse() ? 1 : 0);
}

/// The kernel parameter of \p op's key_lengths, the one after its sinks
/// (or where they would be), as getSinksArgument.
inline unsigned getKeyLengthsArgument(AttentionOp op, unsigned lseArgument) {
  return getSinksArgument(op, lseArgument) + (op.getSinks() ? 1 : 0);
}

/// The kernel parameter of \p op's page_table, the one after its
/// key_lengths (or where they would be), as getSinksArgument.
inline unsigned getPageTableArgument(AttentionOp op, unsigned lseArgument) {
  return getKeyLengthsArgument(op, lseArgument) + (op.getKeyLengths() ? 1 : 0);
}

/// The kernel parameter of \p op's query_offsets, the one after its
/// page_table (or where it would be), as getSinksArgument.
inline unsigned getQueryOffsetsArgument(AttentionOp op, unsigned lseArgument) {
  return getPageTableArgument(op, lseArgument) + (op.getPageTable() ? 1 : 0);
}

/// The kernel parameter of \p op's key_offsets, as getSinksArgument.
inline unsigned getKeyOffsetsArgument(AttentionOp op, unsigned lseArgument) {
  return getQueryOffsetsArgument(op, lseArgument) +
         (op.getQueryOffsets() ? 1 : 0);
}

/// The kernel parameter of \p op's max_query_length, as getSinksArgument.
inline unsigned getMaxQueryLengthArgument(AttentionOp op,
                                          unsigned lseArgument) {
  return getKeyOffsetsArgument(op, lseArgument) + (op.getKeyOffsets() ? 1 : 0);
}

/// The launch operand (op operand) of \p op's max_query_length.
inline unsigned getMaxQueryLengthOperand(AttentionOp op) {
  return getMaxQueryLengthArgument(op, kLseOperand);
}

/// The launch operand of \p op's query_offsets.
inline unsigned getQueryOffsetsOperand(AttentionOp op) {
  return getQueryOffsetsArgument(op, kLseOperand);
}

/// What the launch contracts of both attention kernels share: the operands
/// (q, k, v, o, lse, sinks, key_lengths, page_table, query_offsets,
/// key_offsets and max_query_length where present), 32 *
/// warps threads
/// and the shared-memory layout's total. The grid and the parameters are each
/// kernel's.
LaunchContract getAttentionLaunchContract(AttentionOp op, TileAttr tile);

/// The shared-memory layout of \p op's kernel tiled by \p tile: where both
/// kernels place their tiles, and what their contracts ask for.
AttentionSharedLayout getAttentionSharedLayout(AttentionOp op, TileAttr tile);

/// fmha.attention's logit softcapping with cap c: a score s (q . k, before
/// the scale) becomes outer * tanh(inner * s), inner = scale / c and outer
/// = c / scale, so that scale times it is c * tanh(scale * s / c) and the
/// softmax that follows is unchanged. Applied before the mask (which then
/// hides capped scores as any others).
struct ScoreCap {
  float inner, outer;

  /// \p op's cap (fmha.attention or fmha.attention_grad), or none without
  /// a softcap attribute.
  template <typename Op> static std::optional<ScoreCap> get(Op op) {
    return get(op.getSoftcap(), op.getScaleOrDefault());
  }
  static std::optional<ScoreCap> get(std::optional<APFloat> softcap,
                                     float scale);

  /// Caps every score in \p scores in place: f32 values, or vectors of
  /// them (the sm_80 accumulator fragments), one FMUL, one tanh.approx
  /// (MUFU) and one FMUL each.
  void apply(KernelBuilder &b, MutableArrayRef<Value> scores) const;

  /// The cap's slope at the score whose capped value (f32) is \p capped:
  /// 1 - tanh^2, by which the backward scales dS (its tanh recovered as
  /// capped * inner, -1 where a mask made it -inf: a slope of 0 there, not
  /// the NaN of 0 * inf).
  Value getSlope(KernelBuilder &b, Value capped) const;
};

/// One lane's part of the online-softmax update of one query row: the new
/// running max (quad-reduced), the factor alpha = exp2((old - new max) *
/// scale * log2 e) that the row's O and sum must be rescaled by, the lane's
/// new partial sum (sum * alpha + its probabilities, or its probabilities
/// alone without \p oldSum; the quad reduces it), and P = exp2(S * scale *
/// log2 e - max * scale * log2 e), one FMA and one ex2 each.
struct RowSoftmax {
  Value max, sum, alpha;
  SmallVector<Value> probabilities;

  static RowSoftmax update(ImplicitLocOpBuilder &b, ArrayRef<Value> scores,
                           Value oldMax, Value oldSum, float scaleLog2);
};

/// How one query row's O and LSE come out of its online softmax: from its
/// running max \p rowMax (of raw scores) and its whole sum \p sum (of
/// exp(scale * (score - rowMax))), the factor O's accumulator is multiplied
/// by and the LSE. Without a sink, 1 / sum and rowMax * scale + log(sum);
/// with \p sink (a logit, f32), the denominator gains exp(sink): the LSE is
/// log(exp(rowMax * scale) * sum + exp(sink)), computed from the larger of
/// the two terms, and the factor exp(rowMax * scale - LSE). A row that saw
/// no key (sum 0) gets factor 0 and LSE +inf, or with a sink the sink.
struct RowTotal {
  Value inverse, lse;

  static RowTotal get(KernelBuilder &b, Value rowMax, Value sum, float scale,
                      Value sink);
};

/// \p value reduced (max or sum) over the \p lanes consecutive lanes (a
/// power of two, up to a warp's 32) that each hold a part of it.
Value reduceOverLanes(ImplicitLocOpBuilder &b, Value value, bool max,
                      int32_t lanes);

/// \p value summed over each aligned group of \p lanes lanes (a power of
/// two below 32), where a group's lanes may be the only ones of their warp
/// that run it: each shuffle names the group's lanes as its members.
Value sumOverLaneGroup(KernelBuilder &b, Value value, int32_t lanes);

/// \p value reduced (max or sum) over the 4 lanes of a quad, which hold one
/// row of an m16n8 accumulator fragment.
Value reduceOverQuad(ImplicitLocOpBuilder &b, Value value, bool max);

/// ex2.approx.ftz.f32 of \p x: one MUFU op (there is no NVVM op; an LLVM
/// intrinsic, so no call that would break a WGMMA pipeline).
Value emitExp2(ImplicitLocOpBuilder &b, Value x);

/// The loop of a kernel that gives each row of a [B, H, S, ...] tensor
/// (\p rows' sizes) a warp, or \p lanesPerRow lanes of one (a power of two:
/// a warp's neighbouring rows), \p rowsPerCta rows a CTA, the CTAs striding
/// over ceil(S / rowsPerCta) x H x B units along x: runs \p body(batch,
/// head, row, lane) for the rows below S, lane among the row's lanes (all
/// index). The merge of attention states and the backward's delta and dq
/// conversion.
void forEachRowOfWarp(
    KernelBuilder &b, Value rows, int64_t rowsPerCta,
    llvm::function_ref<void(Value batch, Value head, Value row, Value lane)>
        body,
    int64_t lanesPerRow = kThreadsPerWarp);

/// The alignment of \p count neighbouring elements of type \p elementType
/// from a column that is a multiple of \p count, in a tensor 16-byte
/// aligned whose row strides are multiples of 8 elements (or a shared
/// tile's rows alike): their bytes, at most 16. vector.load and
/// vector.store assume only the element's alignment otherwise, and the
/// NVPTX backend then splits them into one access per element.
llvm::MaybeAlign getVectorAlignment(int64_t count, Type elementType);

/// \p scores with \p mask applied where \p masked (i1, the same in every
/// lane) holds, else as they are: an scf.if around the mask, so that the
/// blocks that need none (inside a causal or windowed problem, before a
/// last partial block) skip its compares and selects.
SmallVector<Value>
maskWhere(ImplicitLocOpBuilder &b, Value masked, ArrayRef<Value> scores,
          llvm::function_ref<void(SmallVectorImpl<Value> &)> mask);

/// Whether block \p block (i32) lies outside [\p unmaskedBegin,
/// \p unmaskedEnd) (i32: a KeyBlockRange's unmasked range, in the
/// kernel's words), as an i1: whether its scores need the mask.
Value isMaskedBlock(KernelBuilder &b, Value block, Value unmaskedBegin,
                    Value unmaskedEnd);

/// \p value through a side-effecting register move: equal to it, but
/// computed anew where it is called, so nothing derived from it is hoisted
/// out of the enclosing loop. \p value is an index or an i32.
Value hideFromHoisting(ImplicitLocOpBuilder &b, Value value);

/// \p value (i32), equal in every lane of the warp, as lane 0's by
/// shfl.sync: ptxas then knows it is warp-uniform and may keep it, and the
/// addresses and WGMMA descriptors derived from it, in uniform registers
/// (CUTLASS's canonical_warp_group_idx). A warpgroup index computed from
/// %tid.x is uniform too, but ptxas keeps it in vector registers and moves
/// every descriptor over with R2UR.
Value makeWarpUniform(ImplicitLocOpBuilder &b, Value value);

/// The PTX special register \p name (i32, e.g. "%laneid") read where it is
/// used, by an asm with side effects, which nothing hoists or merges with
/// another read: no register holds it across loops.
Value readSpecialRegister(ImplicitLocOpBuilder &b, StringRef name);

} // namespace mlir::fmha

#endif // LIB_CONVERSION_FMHATONVGPU_ATTENTIONCOMMON_H
