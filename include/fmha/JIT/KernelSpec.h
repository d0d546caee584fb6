//===- KernelSpec.h - the static description of an fmha op -----*- C++ -*-===//
//
// Part of FlashCore. What the JIT, the C API and their users say about a
// kernel: the op and everything it is specialized on. compileKernelSpec
// (Compile.h) builds the op from it with an OpBuilder; nothing formats or
// parses MLIR text on the way.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_JIT_KERNELSPEC_H
#define FMHA_JIT_KERNELSPEC_H

#include "fmha/Dialect/Fmha/FmhaEnums.h"
#include "fmha/Dialect/Fmha/TileConfig.h"
#include "fmha/Runtime/LoadPlan.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::fmha {

/// The op a KernelSpec describes: fmha.attention, fmha.attention_grad (of
/// which it uses the attention fields but withLse, attentionTile and
/// splitKeys, and deterministic), fmha.merge_attention (of which it uses
/// elementType, headDim, withLse and withQueryOffsets: the rows of packed
/// sequences only), fmha.resample, or fmha.check_sorted over a resample's
/// streams (the resample fields below, of which it uses the stream count and
/// withLengths).
enum class OpKind { Attention, AttentionGrad, Merge, Resample, CheckSorted };
enum class ElementType { F16, BF16, F32 };

/// The static description of an fmha op: everything a kernel is specialized
/// on. Batch, head counts, sequence lengths and strides are launch arguments.
struct KernelSpec {
  OpKind kind = OpKind::Attention;
  ElementType elementType = ElementType::BF16;
  // Attention.
  /// q's and k's head dim (and, for attention_grad and merges, every
  /// operand's).
  unsigned headDim = 128;
  /// fmha.attention's v and o head dim where it differs from headDim
  /// (DeepSeek's 192 and 128); 0: headDim.
  unsigned valueHeadDim = 0;
  bool causal = false;
  bool withLse = false;
  std::optional<std::array<int64_t, 2>> window;
  std::optional<float> scale;
  /// fmha.attention's softcap (logit softcapping); an attention_grad spec
  /// carries its forward's, which the backward refuses (none yet).
  std::optional<float> softcap;
  /// fmha.attention's sinks operand (one logit per query head).
  bool withSinks = false;
  /// fmha.attention's key_lengths operand (a KV cache's filled length per
  /// batch entry); an attention_grad spec carries its forward's, which the
  /// backward refuses (a KV cache is for inference).
  bool withKeyLengths = false;
  /// fmha.attention's page_table (a paged KV cache): k and v are pools of
  /// pages of this many rows (a multiple of 8); 0 without. An
  /// attention_grad spec carries its forward's, which the backward refuses.
  int64_t pageSize = 0;
  /// fmha.attention's query_offsets and max_query_length (variable-length
  /// batches: q and o hold the sequences packed) and key_offsets (k and v
  /// too). An attention_grad spec carries its forward's, which the
  /// backward refuses (none yet).
  bool withQueryOffsets = false, withKeyOffsets = false;
  std::optional<AttentionTiling> attentionTile;
  /// fmha.attention's split_keys: o and lse hold partial states of key
  /// splits.
  bool splitKeys = false;
  /// fmha.attention's pack_query_heads: a tile's rows are a KV head's
  /// group of query heads (shouldPackQueryHeads).
  bool packQueryHeads = false;
  /// fmha.attention_grad: the same bits every run (dq by blocks of
  /// queries, no dq_accum); false adds dq into an f32 accumulator with
  /// atomics, one pass faster.
  bool deterministic = true;
  /// fmha.attention_grad, deterministic: dq added into the f32 accumulator
  /// in a fixed order (dq_order; sm_90a), one pass, rather than by blocks
  /// of queries.
  bool orderedQueryGrad = false;
  /// fmha.attention_grad with the dq accumulator on sm_90a: dkv_partial,
  /// each GQA group's query heads walked in slices whose f32 dk and dv a
  /// last kernel sums (getAttentionGradSlices picks their count at launch).
  bool slicedQueryHeads = false;
  /// fmha.attention_grad's max_shared_bytes: the shared memory a block may
  /// take on the device, where the chip's kernels do not fit it and it
  /// picks others (getAttentionGradLaunchSpec); 0: the chip's.
  uint64_t maxSharedBytes = 0;
  // Resample.
  ResampleMode mode = ResampleMode::linear;
  /// Feature count D of each fused stream.
  std::vector<unsigned> streamFeatures;
  bool withLengths = false;
  std::optional<ResampleTiling> resampleTile;

  /// v's and o's head dim: valueHeadDim, or headDim without one.
  unsigned getValueHeadDim() const {
    return valueHeadDim ? valueHeadDim : headDim;
  }
  /// fmha.attention_grad: whether dq is added into dq_accum (not
  /// deterministic, or ordered).
  bool withQueryGradAccumulator() const {
    return !deterministic || orderedQueryGrad;
  }
  /// headDim and getValueHeadDim, as the tiling policy takes them.
  AttentionHeadDims getHeadDims() const { return {headDim, getValueHeadDim()}; }

  /// Every field the kernel is specialized on, canonically: two specs with
  /// the same key compile to the same kernel. The JIT's memory cache is
  /// keyed by it, and its disk cache key includes it.
  std::string getKey() const;
  /// The op as MLIR text, as buildKernelSpecModule builds it (for dumps,
  /// tests and tools that take text).
  std::string toMLIR() const;
  /// The name of the kernel the op lowers to: the first of
  /// getKernelNames.
  llvm::StringRef getKernelName() const;
  /// The kernels the op lowers to, in the order its launch runs them: one,
  /// or for fmha.attention_grad those of getAttentionGradKernels (with
  /// dq_accum where withQueryGradAccumulator).
  llvm::SmallVector<llvm::StringRef, 4> getKernelNames() const;
};

/// The backward of attention \p spec: its element type, head dim, mask and
/// scale; \p deterministic or the faster atomic one; deterministic and
/// \p ordered, the one-pass deterministic one (sm_90a).
KernelSpec getAttentionGradSpec(const KernelSpec &spec,
                                bool deterministic = true,
                                bool ordered = false);

/// Whether a launch of attention_grad \p spec on \p chip may slice each
/// group's query heads (slicedQueryHeads): sm_90a's one-pass kernel (with
/// the dq accumulator), without a window (getAttentionGradSlices' model).
bool canSliceAttentionGradQueryHeads(const KernelSpec &spec, Chip chip);

/// How many slices sm_90a's one-pass backward splits each group of
/// \p group query heads into (dkv_partial), so that a group of many heads
/// over few key blocks fills the GPU's \p multiprocessors SMs: the divisor
/// S of the group (1: none) whose dk/dv kernel lasts least, where that is
/// at least 10% less than without slices. The kernel's time is a
/// simulation of its B x Hkv x key blocks x S CTAs (of \p blocks, on tiles
/// of \p tileColumns) taken by the SMs, one CTA each at a time, in the
/// order they launch (the grid's, each head's key blocks from the last
/// where \p ordered, or getLongestFirstCta's under \p causal),
/// each the next free SM's: a CTA costs a block per query block it sees
/// (under \p causal, from its key block's diagonal) of each of its
/// ceil(G / S) heads, plus 2 for its tiles and stores, 3 more with the
/// slices' f32 ones; their sum another 3 per CTA over the SMs, plus 1. At
/// most 16 waves of CTAs are simulated. The answers are kept (a training
/// loop asks the same sizes every step).
unsigned getAttentionGradSlices(int64_t batch, int64_t kvHeads, int64_t group,
                                int64_t querySeq, int64_t keySeq,
                                int64_t tileColumns, bool causal, bool ordered,
                                int64_t multiprocessors);

/// The backward that a launch on \p chip runs with a dq workspace
/// (\p withWorkspace) or without: with one the one-pass kernel, which on
/// sm_90a adds dq in a fixed order where \p deterministic (elsewhere
/// deterministic means the kernels without a workspace, which leave it
/// unread); without one the deterministic kernels. The C API's backward
/// and fmha-seed's shipped kernels both take it.
KernelSpec getAttentionGradSpec(const KernelSpec &spec, Chip chip,
                                bool withWorkspace, bool deterministic);

/// The spec a launch of attention_grad \p spec compiles on \p chip on a
/// device that allows \p deviceSharedBytes of shared memory a block (0:
/// the chip's): \p spec with that limit (maxSharedBytes) where sm_80's
/// main kernels take another tiling under it (getSm80GradTiling: on an
/// sm_86 or sm_89 GPU the deterministic kernels past head dim 128, the
/// one-pass kernel from 64 to 128), so that the spec names the kernels it
/// compiles; else \p spec.
KernelSpec getAttentionGradLaunchSpec(const KernelSpec &spec, Chip chip,
                                      uint64_t deviceSharedBytes);

/// Whether the backward that runs by default (flashcore's autograd through
/// fmhaAttentionBackwardUsesWorkspace, the kernels fmha-seed ships)
/// with \p chip's kernels on a \p device GPU, at head dim \p headDim (the
/// larger of q's and v's), adds dq into a workspace (the one-pass kernel)
/// rather than running the deterministic kernels without one. On sm_90a
/// always (FlashAttention-3's kernel, the faster; in a fixed order where
/// \p deterministic). With sm_80's kernels, unless \p deterministic,
/// FlashAttention-2's kernel (dq by f32 atomics) from head dim 64 at
/// isSm80OnePassGradHeadDim's head dims, on the GPUs where it was measured
/// faster: an A100 (8.0), or a Hopper GPU (9.0) running sm_80's kernels.
/// Not on a 99 KB sm_86 or sm_89 GPU, where the one-pass tiles that fit
/// (getSm80GradTiling) lost to the deterministic kernels (0.82-0.98 of
/// their speed under FMHA_MAX_SHARED_BYTES=101376 on the H200,
/// docs/BENCHMARKS.md), nor on GPUs where it was never measured.
bool isDefaultAttentionGradOnePass(Chip chip, ComputeCapability device,
                                   unsigned headDim, bool deterministic);

/// The query lengths from which a launch of an attention spec with
/// \p queryGroup query heads per KV head may compile another kernel
/// (getAttentionLaunchSpec): one query; two, and from the first length
/// whose packed rows pass kDecodeTileQueryRows, where that is past two;
/// past short queries (kShortAttentionQueries); and long queries
/// (kLongAttentionQueries).
llvm::SmallVector<int64_t, 4>
getAttentionQueryLengthClasses(int64_t queryGroup);

/// The spec a launch of attention \p spec on \p querySeq queries compiles
/// on \p chip with \p queryGroup query heads per KV head: \p spec itself,
/// or
/// - where the chip's default tile for that length (and the rows of a few
///   queries with their group's heads packed) is not its default for every
///   length, \p spec with that tile;
/// - for one query, causal without a window is non-causal: bottom-right
///   aligned, the one query sees every key. The non-causal kernel is also
///   the one that a decode launch folds a GQA group's query heads into
///   (foldGroupedQueries), so causal and non-causal decode share it;
/// - where shouldPackQueryHeads, with pack_query_heads (packed sequences on
///   sm_90a only: the sm_80 lowering refuses them).
/// On a device that allows \p deviceSharedBytes of shared memory a block
/// (0: the chip's), the tile is one that fits it (getDefaultAttentionTiling),
/// named in the spec where it is not the chip's.
KernelSpec getAttentionLaunchSpec(const KernelSpec &spec, Chip chip,
                                  std::optional<int64_t> querySeq,
                                  int64_t queryGroup = 1,
                                  uint64_t deviceSharedBytes = 0);

/// Whether a launch of \p spec on \p chip may pack query heads
/// (pack_query_heads) or split keys (split_keys): always, but packed
/// sequences (withQueryOffsets) on sm_90a only, whose lowering alone takes
/// them (the sm_80 one refuses both: its kernel with both offsets spilled).
bool canPackOrSplit(const KernelSpec &spec, Chip chip);

/// Whether a launch of \p spec with tile rows \p blockM packs the
/// \p queryGroup query heads of a KV head into a tile's rows
/// (pack_query_heads): for more than one query, or one under a window or
/// in packed sequences (\p querySeq is then the longest; one query without
/// a window otherwise folds them with a view, foldGroupedQueries), where
/// the packed rows fill their tiles better:
/// FlashAttention-3's rule, unpacked Sq / (ceil(Sq / block_m) block_m)
/// under 0.9 of the same for Sq x G rows, and where the packed rows take at
/// most half the tiles (measured on the H100: docs/decode-notes.md v8).
/// Then each K and V block is read once per group, not G times.
bool shouldPackQueryHeads(const KernelSpec &spec, int64_t querySeq,
                          int64_t queryGroup, int64_t blockM);

/// How many ways a launch splits each row's keys (split_keys): 1 where its
/// \p units tiles already fill 80% of the \p multiprocessors SMs or there
/// are at most 4 of \p keyBlocks (FlashAttention's num_splits_heuristic,
/// KERNELS.md section 7); otherwise the fewest splits, up to min(128, SMs,
/// key blocks), whose time (waves of units x S CTAs, each 1 / S of a tile)
/// is within 5% of the best: for 8 tiles on 132 SMs, 16 (128 CTAs in one
/// wave), where FlashAttention's rule (the fewest within 85% of the fullest
/// last wave) takes 15, measured 2.5-3.5% slower at d128 on the H100
/// (bench/decode-splits.sh, docs/decode-notes.md). Evened out so that no
/// split is empty.
unsigned getKeySplits(int64_t units, int64_t keyBlocks,
                      int64_t multiprocessors);

/// \p splits evened out over \p keyBlocks: as many splits as ceil(blocks /
/// splits) blocks each make, so that none is empty (at least 1).
unsigned getEvenKeySplits(int64_t splits, int64_t keyBlocks);

/// The merge of the partial states of a split launch of attention
/// \p spec: its element type and o's head dim, with an LSE where \p spec
/// has, and with query offsets (the merge of packed sequences' rows only)
/// where it has.
KernelSpec getMergeSpec(const KernelSpec &spec);

/// Every spec launches of \p spec on \p querySeq queries (std::nullopt:
/// any number) with \p queryGroup query heads per KV head may compile on
/// \p chip: for an attention spec, getAttentionLaunchSpec for that length
/// (or each class of lengths, getAttentionQueryLengthClasses), for one
/// query its split_keys kernel and the merge (decode may split its keys),
/// and with packed query heads their split_keys kernel and the merge too;
/// for attention_grad getAttentionGradLaunchSpec; else \p spec.
/// \p deviceSharedBytes as getAttentionLaunchSpec's.
std::vector<KernelSpec>
getLaunchSpecs(const KernelSpec &spec, Chip chip,
               std::optional<int64_t> querySeq = std::nullopt,
               int64_t queryGroup = 1, uint64_t deviceSharedBytes = 0);

} // namespace mlir::fmha

#endif // FMHA_JIT_KERNELSPEC_H
