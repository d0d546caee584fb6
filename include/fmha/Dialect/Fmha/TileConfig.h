//===- TileConfig.h - chip limits and default tilings -----------*- C++ -*-===//
//
// Part of FlashCore. The tiling policy shared by the verifiers, the
// fmha-materialize-tiles pass and the JIT: what each chip allows, and the
// default tile for each op. Plain C++ so that it is unit-tested on its own.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_FMHA_TILECONFIG_H
#define FMHA_DIALECT_FMHA_TILECONFIG_H

#include "fmha/Dialect/Fmha/FmhaEnums.h"
#include "fmha/Dialect/Fmha/LaunchContract.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>

namespace mlir::fmha {

/// The head dims fmha.attention is lowered for: multiples of
/// kAttentionHeadDimStep from kMinAttentionHeadDim to kMaxAttentionHeadDim
/// (its verifier's, and the JIT's launch check's). The step is one 16-byte
/// chunk of 16-bit elements, the unit of a row's cp.async copies, TMA
/// strides and vector stores; both chips' kernels walk D in Q K^T in k steps
/// of 16 (one MMA), a D of 8 mod 16 its last step over zeros past D (TMA's
/// out-of-bounds fill, sm_80's zero-filling copy), and P V in n8 tiles
/// (sm_80) or whole 64-column blocks (sm_90a).
inline constexpr int64_t kMinAttentionHeadDim = 32, kMaxAttentionHeadDim = 256,
                         kAttentionHeadDimStep = 8;
/// Whether fmha.attention is lowered for head dim \p headDim.
inline bool isSupportedAttentionHeadDim(int64_t headDim) {
  return headDim >= kMinAttentionHeadDim && headDim <= kMaxAttentionHeadDim &&
         headDim % kAttentionHeadDimStep == 0;
}
/// What isSupportedAttentionHeadDim accepts, in words (for diagnostics).
inline constexpr llvm::StringLiteral kSupportedAttentionHeadDimsText =
    "a multiple of 8 from 32 to 256";

/// The head dims of an attention op: q's and k's (the K of Q K^T) and v's
/// and o's (the N of P V), which may differ (DeepSeek's 192 and 128). Each
/// is one isSupportedAttentionHeadDim accepts.
struct AttentionHeadDims {
  unsigned qk, v;
  /// One head dim for q, k, v and o.
  AttentionHeadDims(unsigned headDim) : qk(headDim), v(headDim) {}
  AttentionHeadDims(unsigned qk, unsigned v) : qk(qk), v(v) {}
};

/// The columns of D that an attention kernel's shared tiles hold for head
/// dim \p headDim on \p chip: D rounded up to the unit of the chip's
/// swizzle. sm_90a: a multiple of 64 (one 128-byte swizzle row of 16-bit
/// elements: its TMA boxes and WGMMA descriptors); TMA fills the columns
/// past D with zeros. sm_80: 64, 128 or 256 (Swizzle<3,3,3> over 8 chunks,
/// and whole rows per cp.async pass); the columns past D are never copied
/// nor read. The kernels compute on D's columns where the MMA allows it
/// (Q K^T in k steps of 16 on both chips, P V in n8 tiles on sm_80) and on
/// the tile's (P V on sm_90a: its MN-major B operand spans whole 64-column
/// blocks).
unsigned getAttentionTileColumns(Chip chip, unsigned headDim);
/// The columns of D that fmha.attention_grad's kernels lay their tiles
/// and registers out for (either chip): D rounded up to 64, 128 or 256,
/// the three geometries the backward has (sm_90a's dk/dv kernel holds 192
/// instead of 256 where its consumers share out three column blocks:
/// getTileColumns in AttentionGradToGPUSm90a.cpp). Every tile holds zeros past
/// D (TMA's out-of-bounds fill, sm_80's zero-filling copies), so the GEMMs over
/// those columns add nothing and make zeros; nothing past D is stored, and
/// dq_accum keeps D's columns.
unsigned getAttentionGradTileColumns(unsigned headDim);

/// The blocks of sm_90a's one-pass dk/dv kernel on tiles of \p tileColumns
/// columns (getTileColumns in AttentionGradToGPUSm90a.cpp): keys per CTA,
/// 128, or 64 past 128 columns (where its consumers split the head dim);
/// queries per streamed block, 128 at 64 columns, else 64.
struct AttentionGradBlocks {
  int64_t keys, queries;
};
AttentionGradBlocks getSm90aAttentionGradBlocks(int64_t tileColumns);

/// Under a causal mask without a window (and not in the deterministic
/// mode's order), that kernel's CTAs take their key blocks longest first,
/// in sections of heads (getLongestFirstCta in the lowering) rather than
/// in the grid's order (backward-notes.md v54). The CTAs of one section:
/// an H100 SXM's or H200's SMs, so that a section's CTAs run as one wave
/// there (on fewer SMs, a little more).
constexpr int64_t kSm90aGradSectionCtas = 132;

/// The heads of one section of that order, on a grid of \p keyBlocks key
/// blocks a head: as many as kSm90aGradSectionCtas CTAs hold, at least 1.
int64_t getSm90aGradSectionHeads(int64_t keyBlocks);

/// Whether sm_80's fmha.attention_grad takes dq_accum (its one-pass dk/dv
/// kernel, which adds dq there) at head dim \p headDim: up to 128, and
/// 160, 192, 224 and 256, whose halves of D are whole 16-column chunk pairs
/// for the kernel's two columns of warps (in tiles of 192 columns, and of
/// 256 with one Q and dO buffer: two would pass an A100's 163 KB of shared
/// memory). The other head dims past 128 split D unevenly; there the
/// deterministic kernels run.
bool isSm80OnePassGradHeadDim(int64_t headDim);

/// How sm_80's fmha.attention_grad main kernels (dq, dkv or dk and dv:
/// Sm80/AttentionGradToGPUSm80.cpp) are tiled: \p rows rows that stay in
/// shared memory (queries of dq, keys of dkv) over \p warps warps (16 rows
/// each per m16 tile), and blocks of \p streamed rows (keys of dq, queries
/// of dkv) that stream through. The accumulators of a warp's rows (dQ; dK
/// and dV) live in registers with the S and dP fragments of a block, so the
/// tiles are as large as those registers allow without spilling.
///
/// With \p columnWarps > 1 (dk/dv), FlashAttention-2's layout: the warps
/// are a grid of warps / columnWarps rows by columnWarps columns, each
/// computing its rows of S^T and dP^T over its share of the block's
/// queries, and its rows of dK and dV over its share of D, so P^T and dS^T
/// go through shared memory; each warp then loads half of Q and dO for S^T
/// and dP^T and half of each for dK and dV, where a warp of all the
/// queries loads both whole for each.
struct Sm80GradTiling {
  int64_t rows, streamed, warps;
  int64_t columnWarps = 1;
  /// The columns of the grid of dK's and dV's GEMMs, where they differ
  /// from S^T's (0: columnWarps): P^T and dS^T are in shared memory, so
  /// each GEMM takes the grid whose operands load least.
  int64_t gradColumnWarps = 0;
  /// Whether the streamed blocks have one buffer, not two: the next
  /// block's copies then start once every warp is done reading this one's,
  /// where two buffers would not fit.
  bool singleBuffered = false;

  int64_t getGradColumnWarps() const {
    return gradColumnWarps ? gradColumnWarps : columnWarps;
  }
  bool operator==(const Sm80GradTiling &other) const {
    return rows == other.rows && streamed == other.streamed &&
           warps == other.warps && columnWarps == other.columnWarps &&
           getGradColumnWarps() == other.getGradColumnWarps() &&
           singleBuffered == other.singleBuffered;
  }
  bool operator!=(const Sm80GradTiling &other) const {
    return !(*this == other);
  }
};

/// The columns of sm_80's attention_grad main kernels' shared tiles at head
/// dim \p headDim, with dq_accum where \p withDqAccum:
/// getAttentionGradTileColumns, but 192 for the one-pass kernel past 128
/// (isSm80OnePassGradHeadDim), whose two Q and dO buffers fit beside K and
/// V only without 256's columns of zeros.
int64_t getSm80GradTileColumns(int64_t headDim, bool withDqAccum);

/// The tiling of sm_80's attention_grad main kernels at head dim
/// \p headDim, with dq_accum where \p withDqAccum. On a device that allows
/// \p deviceSharedBytes of shared memory a block (0: the chip's), one that
/// fits it where the chip's does not and sm_80's kernels have one: on an
/// sm_86 or sm_89 GPU's 99 KB the deterministic kernels past head dim 128
/// (128 KB on the A100) and the one-pass kernel from 64 to 128 (145 to
/// 162 KB). Past 128 the one-pass kernel has none there: its tiling stays,
/// which such a device refuses at load.
Sm80GradTiling getSm80GradTiling(int64_t headDim, bool withDqAccum,
                                 uint64_t deviceSharedBytes = 0);

/// The `max_shared_bytes` that an fmha.attention_grad of head dim
/// \p headDim (with dq_accum where \p withDqAccum) built for \p chip
/// records for a device that allows \p deviceSharedBytes a block: that
/// limit where sm_80's tiling (the mma.sync kernels': every backward kernel
/// on sm_80, the deterministic ones on sm_90a) must change to fit it
/// (getSm80GradTiling); none where the chip's fits, so that the op, its
/// kernel key and its kernels stay the chip's. Hopper's one-pass kernel
/// runs on Hopper alone, whose limit is the chip's: none.
std::optional<uint64_t> getAttentionGradSharedLimit(Chip chip, int64_t headDim,
                                                    bool withDqAccum,
                                                    uint64_t deviceSharedBytes);

/// Where an sm_80 attention_grad main kernel keeps what in its dynamic
/// shared memory, in bytes from its base: the two tiles that stay (rows x
/// the tile's columns each, getSm80GradTileColumns), then two buffers (one
/// where Sm80GradTiling::singleBuffered) of the two that stream (streamed
/// x those columns each: the next block's copies land while this one's
/// are read), then as many buffers of the LSE and delta of a block of
/// queries (dkv; f32), then, with dq_accum, dS^T of a block (dkv: keys x
/// queries, swizzled as the other tiles), and in a grid of warps P^T beside
/// it. The one description of the layout: the lowering places its tiles
/// by it and its launch contract asks for totalBytes.
struct Sm80GradSharedLayout {
  int64_t tileBytes, streamedBytes, termsOffset, termsBytes, scoresOffset,
      probabilitiesOffset, totalBytes;
};

/// The layout of an sm_80 attention_grad main kernel tiled by \p tiling at
/// head dim \p headDim, with dq_accum where \p withDqAccum, of elements of
/// \p elementBytes.
Sm80GradSharedLayout getSm80GradSharedLayout(const Sm80GradTiling &tiling,
                                             int64_t headDim, bool withDqAccum,
                                             int64_t elementBytes);

/// The queries per counter of fmha.attention_grad's dq_order: the sm_90a
/// kernel's query blocks (64, or 128 at head dim 64) each use the counter
/// of their first query.
inline constexpr int64_t kQueryGradOrderBlock = 64;

/// The kernels fmha.attention_grad lowers to. Delta writes rowsum(dout * o)
/// (and zeroes dq_accum and dq_order); Dq computes dq over blocks of
/// queries; Dkv dk and dv over blocks of keys (with dq_accum, also adding
/// dq's parts into it); Dk and Dv each alone (head dim 256, where one
/// thread would hold 256 f32 of both); DqConvert writes dq from dq_accum;
/// DkvReduce dk and dv from dkv_partial.
enum class AttentionGradKernel { Delta, Dq, Dkv, Dk, Dv, DqConvert, DkvReduce };

/// The kernels of an fmha.attention_grad of head dim \p headDim, with or
/// without dq_accum (and dkv_partial), in the order its launch runs them
/// (each sees what the previous wrote), which is also the order the
/// lowering creates them in: delta, dq, dkv; with dq_accum delta, dkv,
/// dq_convert (sm_90a's only past head dim 128), then with dkv_partial
/// dkv_reduce; without it past head dim 128 (tiles of 256 columns) delta,
/// dq, dk, dv. The lowering, the JIT and fmha-aot all read this list.
llvm::SmallVector<AttentionGradKernel, 4>
getAttentionGradKernels(int64_t headDim, bool withDqAccum,
                        bool withDkvPartial = false);

/// The kernel's gpu.func name: `attention_grad_delta`, ..._dq, ..._dkv,
/// ..._dk, ..._dv, ..._dq_convert, ..._dkv_reduce.
llvm::StringRef getAttentionGradKernelName(AttentionGradKernel kernel);

/// Hardware limits that a tile configuration must respect on one chip.
struct ChipLimits {
  /// Largest dynamic shared memory a CTA may opt into, in bytes.
  uint64_t maxSharedBytesPerBlock;
  unsigned maxThreadsPerBlock;
};

/// The limits of \p chip (CUDA C Programming Guide, "Compute capabilities").
ChipLimits getChipLimits(Chip chip);

/// The shared memory a block may opt into on compute capability 8.6 and 8.9
/// (RTX 30/40, A10, A40, L4, L40), which run sm_80's kernels: 99 KB, where
/// an A100 allows 163 (getDefaultAttentionTiling's deviceSharedBytes).
inline constexpr uint64_t kSm8xSharedBytesPerBlock = 99 * 1024;

/// Parses a chip name as spelled in `chip=` options. The error names the
/// value and the accepted ones, and explains why plain `sm_90` is refused.
llvm::Expected<Chip> parseChip(llvm::StringRef name);

/// How an attention kernel is tiled: the parameters of `#fmha.tile`.
struct AttentionTiling {
  Chip chip;
  unsigned blockM;
  unsigned blockN;
  unsigned warps;
  unsigned stages;

  bool operator==(const AttentionTiling &other) const {
    return chip == other.chip && blockM == other.blockM &&
           blockN == other.blockN && warps == other.warps &&
           stages == other.stages;
  }
  bool operator!=(const AttentionTiling &other) const {
    return !(*this == other);
  }
};

/// The query length from which getDefaultAttentionTiling may pick a tile
/// for long queries.
inline constexpr int64_t kLongAttentionQueries = 4096;

/// The most queries for which getDefaultAttentionTiling gives sm_90a's
/// non-causal head dims up to 64 tiles of 128 rows, not 192 (which pad 256
/// queries by half).
inline constexpr int64_t kShortAttentionQueries = 256;

/// The most query rows of a sequence's KV head (its queries times the
/// group's heads packed with them) for which getDefaultAttentionTiling picks
/// sm_90a's decode tile (one consumer of 64 rows).
inline constexpr int64_t kDecodeTileQueryRows = 64;

/// The default tiling of attention with head dims \p headDims on \p chip.
/// Both must be ones the dialect accepts (isSupportedAttentionHeadDim).
/// \p querySeq, where the caller knows it (a JIT launch), picks the tile
/// measured best at that length; without it, the one for every length.
/// \p queryGroup, the query heads per KV head, counts the rows that a few
/// queries fill with their group's heads packed into a tile. \p pagedKeys
/// (keys and values in a paged cache) picks the decode tile measured best
/// over pages. \p deviceSharedBytes, where the caller knows the device (a
/// JIT launch) and it allows less shared memory a block than the chip
/// (sm_80's kernels on a 99 KB sm_86 or sm_89 GPU), picks a tile that fits
/// it where the chip's does not; 0: the chip's limit.
AttentionTiling
getDefaultAttentionTiling(Chip chip, AttentionHeadDims headDims, bool causal,
                          std::optional<int64_t> querySeq = std::nullopt,
                          int64_t queryGroup = 1, bool pagedKeys = false,
                          uint64_t deviceSharedBytes = 0);

/// Checks the rules that do not depend on the op (multiples, warp layout,
/// WGMMA extents); the error says which rule failed and with what value.
llvm::Error checkAttentionTiling(const AttentionTiling &tiling);

/// The f32 registers per thread that the sm_80 kernel's O and S accumulators
/// take (Sm80/): block_m x (v's head dim + block_n) / threads.
uint64_t getSm80AccumulatorRegisters(const AttentionTiling &tiling,
                                     unsigned valueHeadDim);

/// What the sm_80 kernel's accumulators may take before it trades
/// instructions for registers, measured against ptxas 13.0 whole-program
/// spills at the default tiles (d64 128, d256 160, d128 192 registers):
/// - above it, each thread keeps its running row sums in shared memory
///   between key blocks (getSm80RowSumSharedBytes): carried in a register,
///   ptxas kept them in local memory (an LDL and an STL per key block);
/// - at or above it, each cp.async pass of a tile copy computes its own
///   source address; below it, the passes share one base and constant
///   offsets (the d64 key loop: 682 -> 667 instructions, +3% on the H100),
///   which at d128 spills 36 bytes in the key loop and at d256 16 bytes.
inline constexpr unsigned kSm80AccumulatorRegisterBudget = 160;

/// Bytes of shared memory in which the sm_80 kernel (Sm80/FragmentSoftmax)
/// keeps each thread's running row sums between key blocks, or 0 where it
/// carries them in registers: only where the accumulators take more than
/// kSm80AccumulatorRegisterBudget registers (d128 at 128x64 with 4 warps).
uint64_t getSm80RowSumSharedBytes(const AttentionTiling &tiling,
                                  unsigned valueHeadDim);

/// The alignment of the sm_90a attention kernel's tiles: one 8-row atom of
/// the 128-byte swizzle that its TMA boxes and WGMMA operands share.
inline constexpr uint64_t kSm90aTileAlignment = 1024;

/// Where an attention kernel keeps what in its dynamic shared memory, in
/// bytes from its tiles' base: `queryBuffers` Q tiles, `stages` K buffers,
/// `stages` V buffers (Q and K rows of q's head dim's tile columns, V rows
/// of v's), on sm_90a the output's staging buffer where it has one, then
/// on sm_80 the held row sums (getSm80RowSumSharedBytes), on sm_90a the
/// pipeline's mbarriers (a full and an empty one per Q, K and V buffer, 8
/// bytes each).
///
/// sm_90a spends what the chip has beyond its tiles on the tile boundary,
/// where the tensor cores would otherwise wait: first a buffer of its own
/// for staging O (block_m rows of v's tile columns), so that a consumer's
/// epilogue waits for no other consumer's last P V (else O is staged in
/// the last V buffer, getAttentionOutputPasses, after every consumer's
/// drain); then a second Q buffer, so that the producer loads the next
/// tile's Q while the consumers finish this one. On sm_80 the output tile
/// is staged over the tiles from the base (block_m rows of v's tile
/// columns, which the tail starts after).
///
/// On sm_90a the base is the dynamic shared memory's rounded up to the
/// 1024-byte swizzle atom, so the kernel asks for that much more. The one
/// description of the layout: the lowerings place their tiles by it and
/// their launch contracts ask for its totalBytes.
struct AttentionSharedLayout {
  /// The first Q buffer; buffer i is i * queryBufferBytes further.
  uint64_t query = 0, queryBufferBytes = 0;
  unsigned queryBuffers = 1;
  /// The first K and V buffer; buffer s is s * keyBufferBytes (K) or s *
  /// valueBufferBytes (V) further.
  uint64_t keys = 0, values = 0;
  uint64_t keyBufferBytes = 0, valueBufferBytes = 0;
  /// sm_90a: O's staging buffer; 0 bytes where O is staged in the last V
  /// buffer.
  uint64_t output = 0, outputBytes = 0;
  /// sm_80: the row sums (0 bytes where they stay in registers); sm_90a:
  /// the mbarriers.
  uint64_t tail = 0, tailBytes = 0;
  /// What the kernel asks for, alignment slack included.
  uint64_t totalBytes = 0;
};

/// The layout of an attention kernel tiled by \p tiling for head dims
/// \p headDims and elements of \p elementBytes.
AttentionSharedLayout getAttentionSharedLayout(const AttentionTiling &tiling,
                                               AttentionHeadDims headDims,
                                               unsigned elementBytes);

/// Whether the sm_90a attention kernel (Sm90a/AttentionToGPUSm90a.cpp)
/// pairs its row blocks. Its CTAs take units of work in turn (CTA x takes
/// units x, x + gridDim.x, ...: a grid of one CTA per SM overlaps one unit's
/// epilogue with the next one's loads). A unit is one block_m row block of one
/// (batch, head), or, when the rows see more keys the later they come
/// (causal without a window), the pair of row blocks R - 1 - i and i
/// (R = ceil(Sq / block_m), the middle block of an odd R alone, after
/// every (batch, head)'s pairs: PersistentTileSchedule::placeUnit), so that
/// units cost about the same. Consecutive pairs share a (batch, head), and
/// so its K and V in L2. Packed query heads (\p packsQueryHeads) never
/// pair: their row blocks' queries are a few positions apart, and pairing
/// their few blocks doubled a CTA's work where units were fewer than SMs
/// (1.7x slower at 77 queries of GQA 4:1 on the H100).
inline bool pairsAttentionRowBlocks(bool causal, bool hasWindow,
                                    bool packsQueryHeads = false) {
  return causal && !hasWindow && !packsQueryHeads;
}

/// The narrowest slab of a warp's 16 rows that sm_90a kernels stage in
/// shared memory (the forward's O, the backward's dK and dV): two 8-column
/// chunks, one stmatrix's; a slab's columns are a power of two of at
/// least this (its chunk swizzle XORs chunk indices).
inline constexpr unsigned kWarpSlabMinColumns = 16;

/// The passes in which the sm_90a attention epilogue writes O: each
/// consumer warp stages its 16 output rows in O's own buffer where
/// \p inOwnBuffer (AttentionSharedLayout), else in the V buffer of the
/// tile's last key block, columns / passes at a time (columns: v's tile's,
/// getAttentionTileColumns), a slab of kWarpSlabMinColumns or a wider power
/// of two. The fewest passes whose slabs of every consumer warp fit the
/// buffer (in O's own, the fewest whose slabs are a power of two wide:
/// 3 at 192 columns); 0 if none does (block_n too small for the
/// consumers).
unsigned getAttentionOutputPasses(const AttentionTiling &tiling,
                                  unsigned valueHeadDim,
                                  bool inOwnBuffer = false);

/// Checks that the tiling's buffers fit in the chip's shared memory (and,
/// on sm_90a, that O can be staged: getAttentionOutputPasses).
llvm::Error checkAttentionTilingFits(const AttentionTiling &tiling,
                                     AttentionHeadDims headDims,
                                     unsigned elementBytes);

/// How a resample kernel is tiled: the parameters of `#fmha.resample_tile`.
struct ResampleTiling {
  Chip chip;
  unsigned blockT;
  unsigned threads;
};

/// Threads per CTA of the fmha.check_sorted kernel, which has no tile: each
/// CTA checks one row at a time, consecutive threads consecutive pairs.
inline constexpr unsigned kCheckSortedThreads = 256;

/// The default tiling of resample on \p chip.
ResampleTiling getDefaultResampleTiling(Chip chip);

/// Checks a resample tiling against the chip's limits.
llvm::Error checkResampleTiling(const ResampleTiling &tiling);

} // namespace mlir::fmha

#endif // FMHA_DIALECT_FMHA_TILECONFIG_H
