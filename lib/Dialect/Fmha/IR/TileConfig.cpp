//===- TileConfig.cpp - chip limits and default tilings -------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/TileConfig.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <string>

using namespace mlir;
using namespace mlir::fmha;

/// Rows of one mma.sync m16n8k16 and of one warp's slice on sm_80.
static constexpr unsigned kMmaSyncRows = 16;
/// Rows of one WGMMA m64nNk16, owned by one consumer warpgroup on sm_90a.
static constexpr unsigned kWgmmaRows = 64;
/// Largest N of a WGMMA (PTX ISA, "wgmma.mma_async" shapes).
static constexpr unsigned kWgmmaMaxN = 256;
/// K extent of one 16-bit MMA: block_n is the K of P·V on both chips.
static constexpr unsigned kMmaK = 16;
static constexpr unsigned kWarpsPerWarpgroup = 4;
static constexpr unsigned kThreadsPerWarp = 32;

ChipLimits fmha::getChipLimits(Chip chip) {
  switch (chip) {
  case Chip::sm_80:
    // A100: 163 KB of opt-in shared memory per block. sm_80's kernels also
    // run on sm_86/sm_89 (kSm8xSharedBytesPerBlock) where they fit: the
    // JIT's default forward tiles are picked to fit the device, and every
    // kernel it loads with a launch contract is checked against it
    // (checkSharedBytesFit).
    return {163 * 1024, 1024};
  case Chip::sm_90a:
    // H100/H200: 227 KB of opt-in shared memory per block.
    return {227 * 1024, 1024};
  }
  llvm_unreachable("unknown chip");
}

llvm::Expected<Chip> fmha::parseChip(llvm::StringRef name) {
  if (std::optional<Chip> chip = symbolizeChip(name))
    return *chip;
  if (name == "sm_90")
    return llvm::createStringError(
        "chip 'sm_90' is not supported: Hopper kernels need the "
        "arch-specific 'sm_90a' (WGMMA, TMA multicast and setmaxnreg do not "
        "exist in plain sm_90); expected sm_80 or sm_90a");
  return llvm::createStringError(
      llvm::formatv("unknown chip '{0}'; expected sm_80 or sm_90a", name));
}

unsigned fmha::getAttentionTileColumns(Chip chip, unsigned headDim) {
  switch (chip) {
  case Chip::sm_80:
    return headDim <= 64 ? 64 : headDim <= 128 ? 128 : 256;
  case Chip::sm_90a:
    return llvm::alignTo(headDim, 64);
  }
  llvm_unreachable("unknown chip");
}

AttentionGradBlocks fmha::getSm90aAttentionGradBlocks(int64_t tileColumns) {
  return {tileColumns > 128 ? 64 : 128, tileColumns <= 64 ? 128 : 64};
}

int64_t fmha::getSm90aGradSectionHeads(int64_t keyBlocks) {
  return std::max<int64_t>(
      kSm90aGradSectionCtas / std::max<int64_t>(keyBlocks, 1), 1);
}

unsigned fmha::getAttentionGradTileColumns(unsigned headDim) {
  return headDim <= 64 ? 64 : headDim <= 128 ? 128 : 256;
}

bool fmha::isSm80OnePassGradHeadDim(int64_t headDim) {
  // Past 128 the multiples of 32 (160, 192, 224, 256): halves of D that
  // are whole 16-column chunk pairs.
  return headDim <= 128 || (headDim % 32 == 0 && headDim <= 256);
}

int64_t fmha::getSm80GradTileColumns(int64_t headDim, bool withDqAccum) {
  if (withDqAccum && headDim > 128 && headDim <= 192)
    return 192;
  return getAttentionGradTileColumns(headDim);
}

/// sm_80's attention_grad tiling for every device the chip has.
static Sm80GradTiling getChipSm80GradTiling(int64_t headDim, bool withDqAccum) {
  // By the tiles' columns (getSm80GradTileColumns), which set the registers
  // and shared memory: a head dim below them computes on zeros.
  int64_t columns = getSm80GradTileColumns(headDim, withDqAccum);
  // At head dim 64, two m16 tiles per warp over 32-row blocks (each B
  // fragment an ldmatrix feeds two mma.syncs). With dq_accum, dk/dv also
  // sums dQ: at 128 x 32 that spilled 16 bytes.
  if (columns == 64 && !withDqAccum)
    return {128, 32, 4};
  // With dq_accum at head dim 128, FlashAttention-2's 128 keys over 8 warps
  // (one CTA an SM): a CTA's dQ sums over twice the keys, so each element
  // of dq_accum takes half the atomics of 64-key CTAs. Its warps are 4 x 2
  // where D's halves are whole chunk pairs (d128: a 64-column block each;
  // d96: three pairs each, moveToChunkPairs), 8 x 1 at the other head dims
  // (d80's and d112's halves are 2.5 and 3.5 pairs).
  if (columns == 128 && withDqAccum)
    return {128, 64, 8, headDim == 128 || headDim == 96 ? 2 : 1};
  // Past 128 (head dims 160 and 192), FlashAttention-2's 64 keys x 64
  // queries over 4 x 2 warps for S^T and dP^T; for dK and dV each warp 16
  // keys and half of D at 160 (5 chunk pairs, moveToChunkPairs), 32 keys
  // and a quarter of D at 192 (2 x 4 warps, 3 pairs each: a k step's B
  // loads then feed twice the MMAs). dK and dV take 80 and 96 registers.
  if (columns == 192)
    return {64, 64, 8, 2, headDim == 192 ? 4 : 0};
  // At head dim 64, FlashAttention-2's 128 keys x 128 queries over 4 x 2
  // warps (each a half of D: 32 columns).
  if (withDqAccum && headDim == 64)
    return {128, 128, 8, 2};
  // Past 192 (head dims 224 and 256), the same grid over tiles of 256
  // columns: two Q and dO buffers would pass an A100's 163 KB, so one
  // (FlashAttention-2's choice there). dK and dV over 2 x 4 warps at 256
  // (a 64-column block each), over S^T's grid at 224 (7 chunk pairs a
  // warp). dK and dV take 128 and 112 registers.
  if (columns == 256 && withDqAccum) {
    Sm80GradTiling tiling{64, 64, 8, 2, headDim == 256 ? 4 : 0};
    tiling.singleBuffered = true;
    return tiling;
  }
  // At head dim 128, one m16 tile per warp over 64-row blocks (dK and dV
  // alone take 128 registers; dq at 128 x 32 spilled 36 bytes). 32-row
  // blocks at head dim 256 keep shared memory at 128 KB, which an sm_80 CTA
  // may have (164 KB).
  if (columns == 256)
    return {64, 32, 4};
  return {64, 64, 4};
}

Sm80GradTiling fmha::getSm80GradTiling(int64_t headDim, bool withDqAccum,
                                       uint64_t deviceSharedBytes) {
  Sm80GradTiling tiling = getChipSm80GradTiling(headDim, withDqAccum);
  // Elements of 16 bits, as every type the backward takes.
  auto fits = [&](const Sm80GradTiling &candidate) {
    return getSm80GradSharedLayout(candidate, headDim, withDqAccum,
                                   /*elementBytes=*/2)
               .totalBytes <= static_cast<int64_t>(deviceSharedBytes);
  };
  if (deviceSharedBytes == 0 || fits(tiling))
    return tiling;
  // First the streamed blocks halve while two buffers do not fit, down to
  // the fewest a column of warps has been built for (the deterministic
  // kernels one k16 step, the one-pass kernel two, whose dQ adds take a
  // 16-query tile a warp), so that the next block's copies still run under
  // this block's GEMMs. On a 99 KB sm_86 or sm_89 GPU: the deterministic
  // kernels at 256 columns 64 x 16 (96.25 KB); the one-pass one at head dim 64
  // 128 x 64 (97 KB), FlashAttention-2's 128 keys x 64 queries there
  // (flash_bwd_launch_template.h, run_mha_bwd_hdim64 below 144 KB).
  Sm80GradTiling fitted = tiling;
  int64_t leastStreamed = (withDqAccum ? 32 : 16) * tiling.columnWarps;
  while (!fits(fitted) && fitted.streamed > leastStreamed)
    fitted.streamed /= 2;
  if (fits(fitted))
    return fitted;
  // Then 128 rows become 64 (the rows of every kernel past 128 columns), 16
  // a warp, with one buffer: the one-pass kernel from head dim 72 to 128,
  // 64 keys x 64 queries, FlashAttention-2's d128 tile there (which keeps
  // V in registers for its second buffer): 80.5 KB over 4 x 2 warps at 96
  // and 128, 72.5 KB over 4 warps at the others.
  if (tiling.rows <= 64)
    return tiling;
  fitted = tiling;
  fitted.rows = 64;
  fitted.warps =
      std::min<int64_t>(fitted.warps, 64 / kMmaSyncRows * fitted.columnWarps);
  fitted.singleBuffered = true;
  return fits(fitted) ? fitted : tiling;
}

std::optional<uint64_t>
fmha::getAttentionGradSharedLimit(Chip chip, int64_t headDim, bool withDqAccum,
                                  uint64_t deviceSharedBytes) {
  bool mmaSync = chip == Chip::sm_80 || !withDqAccum;
  if (!mmaSync || deviceSharedBytes == 0 ||
      getSm80GradTiling(headDim, withDqAccum, deviceSharedBytes) ==
          getSm80GradTiling(headDim, withDqAccum))
    return std::nullopt;
  return deviceSharedBytes;
}

Sm80GradSharedLayout fmha::getSm80GradSharedLayout(const Sm80GradTiling &tiling,
                                                   int64_t headDim,
                                                   bool withDqAccum,
                                                   int64_t elementBytes) {
  int64_t rowBytes =
      getSm80GradTileColumns(headDim, withDqAccum) * elementBytes;
  Sm80GradSharedLayout layout;
  layout.tileBytes = tiling.rows * rowBytes;
  layout.streamedBytes = tiling.streamed * rowBytes;
  int64_t buffers = tiling.singleBuffered ? 1 : 2;
  layout.termsOffset =
      2 * layout.tileBytes + 2 * buffers * layout.streamedBytes;
  layout.termsBytes = 2 * tiling.streamed * 4;
  layout.scoresOffset = layout.termsOffset + buffers * layout.termsBytes;
  int64_t scoresBytes = tiling.rows * tiling.streamed * elementBytes;
  layout.probabilitiesOffset = layout.scoresOffset + scoresBytes;
  layout.totalBytes = layout.scoresOffset;
  if (withDqAccum)
    layout.totalBytes += scoresBytes;
  if (tiling.columnWarps > 1)
    layout.totalBytes += scoresBytes;
  return layout;
}

/// The default tiling where q, k, v and o share head dim \p headDim.
static AttentionTiling getDefaultTiling(Chip chip, unsigned headDim,
                                        bool causal,
                                        std::optional<int64_t> querySeq,
                                        int64_t queryGroup, bool pagedKeys) {
  switch (chip) {
  case Chip::sm_80:
    // One K and one V buffer whose loads alternate (FlashAttention-2,
    // KERNELS.md §1). Measured on the H100 (bench/attention-tiles.sh,
    // docs/BENCHMARKS.md, 4 x 2048/D heads x 4096, bf16): 128x64 with 4
    // warps is the best of the tiles tried at head dims 64 and 128 (286.5 /
    // 320-323 TFLOP/s non-causal; FA2's own 128x128 at d64: 265.7), and
    // 128x64 with 8 warps at 256 (275.0; 4 warps and 64-row tiles 228-245).
    // The other head dims take the tile of the next of these (d96 on the
    // H100, 4 x 21 x 4096: 128x64 with 4 warps 318 / 277 TFLOP/s non-causal
    // / causal, though ptxas spills 64 bytes, against 270 / 245 for 128x32,
    // 265 / 245 for 64x64, 228 / 208 for 8 warps). The multiples of 8 and
    // v's head dim apart (bench/jit/attention-tiles --chip=sm_80 on the
    // H100, 4 x 2048/D heads x 4k, non-causal / causal): 128x64 with 4
    // warps best at d40 (236 / 212 against 227 / 201 for 128x128), d72
    // (264 / 243 against 240 / 223 with 8 warps) and 192/128 (366 / 319
    // against 337 / 296 for 128x32, 278 / 258 with 8 warps).
    if (headDim <= 128)
      return {chip, 128, 64, 4, 1};
    return {chip, 128, 64, 8, 1};
  case Chip::sm_90a:
    // One producer warpgroup, consumer warpgroups of 64 query rows, two K/V
    // stages (FlashAttention-3's structure, KERNELS.md §2). Measured on the
    // H100 (bench/attention-tiles.sh with FMHA_CHIP=sm_90a,
    // docs/BENCHMARKS.md; 4 x 2048/D heads x 4096 and 16 x 2048/D x 1024):
    // d64 non-causal 192x128 with 3 consumers (430 TFLOP/s against 384 for
    // 128x128); d64 causal 128x128 (with the persistent grid, 192x128 wins
    // at 4k and 16k, 409 and 494 against 396 and 438, but loses at 1k, 207
    // against 248, below Triton); d128 128x128 (586 non-causal; 176 and 192
    // columns: 544, 584; causal, persistent grid: 293 / 548 / 637 at 1k /
    // 4k / 16k against 274 / 542 / 686 with 176 columns, 524 against 503
    // on fp16 16 x 96 x 4k); d256 128x80 (630; 128x64: 620), the widest
    // block whose Q and two stages of K and V fit in shared memory.
    // Where the query length is known (a JIT launch), causal d64 takes
    // 192x128 with 3 consumers from 4k queries on, where it wins (A/B on
    // the H100, eighth session: 4k 387 -> 410, 16k 459 -> 494; at 1k it
    // loses, 207 against 128x128's 248). d128 causal 128x176 at 16k, which
    // won in the fifth run (686 against 637), lost in that A/B (664 ->
    // 655): not taken.
    // One query (decode; a GQA group's heads folded into its rows): one
    // consumer of 64 rows, since the rows are a group's few, and the shared
    // memory that 128 or 192 rows of Q and O would take goes to longer or
    // more K/V stages: the kernel waits on HBM. Measured on the H200
    // (bench/decode-tiles.sh, GB/s, BSHD, 64 x 32/8 x 8192 and 8 x 64/8 x
    // 8192, docs/BENCHMARKS.md "Decode on one consumer"): d64 4023 / 2634
    // against 192x128's 2834 / 2133 (cuDNN 4327 / 1912), d32 2872 against
    // 1689, d256 64x80 4128 / 3681 against 128x80's 4054 / 3535. d96 (3503
    // against 128x128's 4121) and d192 (4148-4213 against 128x96's 4180)
    // keep their tiles. The one consumer's key blocks re-swept (docs/
    // decode-notes.md v14 and v15; 64 x 32/8 x 8192, 128 x 32/8 x 2048,
    // 8 x 64/8 x 8192, 1 x 32/8 x 131072): d128 64x64 with two stages
    // 4196 / 4186 / 3445 / 3835 against 64x192's 4124 / 3999 / 3445 / 3652
    // and 64x128's 4023 / 3926 / 3199 / 3603; d64 64x128 with two stages
    // 4164 / 3870 / 2858 / 3532 against 64x192 x 3's 4039 / 3659 / 2799 /
    // 3274 and 64x64's 3275 / 3091 / 2357 / 2767; d32 keeps 64x192 x 3
    // (2769 / 2165 at the first and last rows against 2570 / 2034); d256
    // keeps 64x80 (4148 / 4138 / 3681 / 3919; 64x32 x 4 4128 / 4014 / 3607
    // / 3905). d128's 64x64 then took a third stage (decode-notes v17, v18;
    // the runner 64 x 32/8 x 8192 4485 against two stages' 4340, and the
    // wheels' A/B 1.023-1.051 on every d128 decode row), and d64's 64x128
    // one (decode-notes v18c, v20: the second A/B 1.013-1.029 on all four
    // d64 decode rows). A paged cache keeps the tiles these replaced: with
    // pages of 16 rows d128's 64x64 lost to 64x192 (A/B of the wheels,
    // decode-notes v15, 64 x 32/8 x 8192 and 128 x 32/8 x 2048: 0.97 /
    // 0.98 full, 0.81 / 0.86 with ragged lengths); d64's 64x128 was not
    // measured over pages.
    // A few queries (speculative decoding) whose rows, packed with their
    // group's, fill at most the one consumer's 64 take the same tile.
    // Measured on the H200 (bench/decode-tiles.sh with DECODE_SQ=4, GB/s,
    // 64 x 32/8 x 8192 and 8 x 64/8 x 8192): d64 3941 / 2542 against
    // 192x128's 2794 / 1982, d128 4022 / 3134 against 3999 / 3028, d256
    // 4102 / 3433 against 3999 / 3327.
    if (querySeq == 1 ||
        (querySeq && *querySeq * queryGroup <= kDecodeTileQueryRows)) {
      if (headDim <= 32 || (headDim <= 64 && pagedKeys))
        return {chip, 64, 192, 8, 3};
      if (headDim <= 64)
        return {chip, 64, 128, 8, 3};
      if (headDim > 96 && headDim <= 128)
        return pagedKeys ? AttentionTiling{chip, 64, 192, 8, 2}
                         : AttentionTiling{chip, 64, 64, 8, 3};
      if (getAttentionTileColumns(chip, headDim) == 256)
        return {chip, 64, 80, 8, 2};
    }
    // Short queries keep 128 rows where the tile above is 192 (d64
    // non-causal): 256 queries fill two 128-row tiles and pad two of 192 by
    // half. Measured on the H200 (bench/attention-tiles.sh, FMHA_LENGTHS,
    // 32 heads, B x S = 16384, TFLOP/s): 128 queries 210 against 192x128's
    // 176, 256 queries 300 against 244; from 384 on 192x128 wins (384: 394
    // against 346, 512: 390 against 362, 1024: 420 against 408).
    bool longQueries = querySeq && *querySeq >= kLongAttentionQueries;
    bool shortQueries = querySeq && *querySeq <= kShortAttentionQueries;
    if (headDim <= 64)
      return (causal && !longQueries) || shortQueries
                 ? AttentionTiling{chip, 128, 128, 12, 2}
                 : AttentionTiling{chip, 192, 128, 16, 2};
    // d72 to d96 from 4k queries on: 3 consumers of 96-key blocks, which
    // fit their registers since P V's N is O's columns (2026-11-28; 192 x
    // 128 spills 80-244 bytes and serializes). Measured on the H100
    // (bench/attention-tiles.sh, TFLOP/s, 4 x 2048/D heads x 4096,
    // non-causal / causal, then 16 x 2048/D x 1024): d80 548 / 444 against
    // 128x128's 504 / 435, d96 616 / 521 against 571 / 479; 192x112 554 /
    // 414 and 619 / 485; at 1k 128x128 wins (d96 468 / 340 against 452 /
    // 285).
    if (headDim <= 96 && longQueries)
      return {chip, 192, 96, 16, 2};
    // The other head dims: the tile of the next of these, but 128x96 for
    // tiles of 192 columns (d144 to d192; the widest 128x112 that fits did
    // as well at 4k and worse at 1k). Measured on the H100 (bench/
    // attention-tiles.sh, 4 x 2048/D heads x 4096 and 16 x 2048/D x 1024):
    // d96 128x128 560 / 474 / 474 / 326 TFLOP/s (4k, causal; 1k, causal)
    // against 554 / 459 / 457 / 275 for 128x176; d192 128x96 732 / 652 /
    // 607 / 413 against 716 / 638 / 599 / 407 for 128x80; d32 d64's tiles
    // (294 / 234 / 228 / 160) against 252 / 218 / 216 / 159 for 128x128.
    // Multiples of 8 (bench/jit/attention-tiles, 4 x 2048/D heads x 4k,
    // causal; 16 x 28 x 1k): d72 at d128's 128x128 339 / 315 / 308 / 244
    // against 340 / 306 / 308 / 210 for 128x176 and 197 / 169 for
    // 192x128; d40 at d64's 340 / 295 against 280 / 250 for 128x128.
    if (headDim <= 128)
      return {chip, 128, 128, 12, 2};
    if (getAttentionTileColumns(chip, headDim) == 192)
      return {chip, 128, 96, 12, 2};
    return {chip, 128, 80, 12, 2};
  }
  llvm_unreachable("unknown chip");
}

/// The tile of \p tiling's kernel on a device that allows \p sharedBytes
/// of shared memory a block, less than the chip: sm_80's tiles past head dim
/// 128 (128 x 64 with 8 warps, rows of 256 columns: 128 KB) do not fit an
/// sm_86 or sm_89 GPU's 99 KB. There FlashAttention-2 runs 64 x 64 with 4
/// warps (flash_fwd_launch_template.h, run_mha_fwd_hdim224 and hdim256:
/// where the opt-in shared memory is under 2 D (128 + 2 x 64) bytes): 96 KB
/// at 256 columns, no spills (ptxas 13: 167-254 registers at d160-d256).
/// What fits stays; a device too small for that tile too would refuse it at
/// load (checkSharedBytesFit).
static AttentionTiling fitDeviceSharedBytes(AttentionTiling tiling,
                                            AttentionHeadDims headDims,
                                            uint64_t sharedBytes) {
  if (tiling.chip != Chip::sm_80 || sharedBytes == 0 ||
      getAttentionSharedLayout(tiling, headDims, /*elementBytes=*/2)
              .totalBytes <= sharedBytes)
    return tiling;
  return {Chip::sm_80, 64, 64, 4, 1};
}

AttentionTiling
fmha::getDefaultAttentionTiling(Chip chip, AttentionHeadDims headDims,
                                bool causal, std::optional<int64_t> querySeq,
                                int64_t queryGroup, bool pagedKeys,
                                uint64_t deviceSharedBytes) {
  if (headDims.qk == headDims.v)
    return fitDeviceSharedBytes(getDefaultTiling(chip, headDims.v, causal,
                                                 querySeq, queryGroup,
                                                 pagedKeys),
                                headDims, deviceSharedBytes);
  // Different head dims: v's tile, where Q's and K's wider or narrower rows
  // leave it in shared memory (v's head dim sizes the O accumulator, the
  // registers that pick a tile), else the tile of the wider of the two.
  // Measured on the H100 (bench/jit/attention-tiles, docs/BENCHMARKS.md
  // "v's head dim apart from q's"): DeepSeek's 192/128 on sm_90a at d128's
  // 128x128, the widest block that fits, 674 / 609 / 583 / 474 TFLOP/s (4 x
  // 16 x 4k, causal; 16 x 16 x 1k, causal) against 633 / 556 / 545 / 431
  // for d192's 128x96 and 652 / 572 / 531 / 420 for 128x112.
  AttentionTiling tiling = getDefaultTiling(chip, headDims.v, causal, querySeq,
                                            queryGroup, pagedKeys);
  if (llvm::errorToBool(
          checkAttentionTilingFits(tiling, headDims, /*elementBytes=*/2)))
    tiling = getDefaultTiling(chip, std::max(headDims.qk, headDims.v), causal,
                              querySeq, queryGroup, pagedKeys);
  return fitDeviceSharedBytes(tiling, headDims, deviceSharedBytes);
}

llvm::Error fmha::checkAttentionTiling(const AttentionTiling &tiling) {
  if (tiling.blockM == 0 || tiling.blockN == 0 || tiling.warps == 0 ||
      tiling.stages == 0)
    return llvm::createStringError(llvm::formatv(
        "block_m, block_n, warps and stages must be positive, got block_m = "
        "{0}, block_n = {1}, warps = {2}, stages = {3}",
        tiling.blockM, tiling.blockN, tiling.warps, tiling.stages));
  unsigned maxWarps =
      getChipLimits(tiling.chip).maxThreadsPerBlock / kThreadsPerWarp;
  if (tiling.warps > maxWarps)
    return llvm::createStringError(llvm::formatv(
        "warps must be at most {0} ({1} threads per block), got {2}", maxWarps,
        maxWarps * kThreadsPerWarp, tiling.warps));
  if (tiling.blockN % kMmaK != 0)
    return llvm::createStringError(llvm::formatv(
        "block_n must be a multiple of {0} (the k extent of the P*V MMA), got "
        "{1}",
        kMmaK, tiling.blockN));

  switch (tiling.chip) {
  case Chip::sm_80: {
    unsigned rowsPerStep = kMmaSyncRows * tiling.warps;
    if (tiling.blockM % rowsPerStep != 0)
      return llvm::createStringError(llvm::formatv(
          "sm_80 stacks {0} warps of {1} query rows: block_m must be a "
          "multiple of {2}, got {3}",
          tiling.warps, kMmaSyncRows, rowsPerStep, tiling.blockM));
    return llvm::Error::success();
  }
  case Chip::sm_90a: {
    if (tiling.warps % kWarpsPerWarpgroup != 0)
      return llvm::createStringError(llvm::formatv(
          "sm_90a schedules whole warpgroups: warps must be a multiple of "
          "{0}, got {1}",
          kWarpsPerWarpgroup, tiling.warps));
    if (tiling.warps < 2 * kWarpsPerWarpgroup)
      return llvm::createStringError(llvm::formatv(
          "sm_90a needs a producer and at least one consumer warpgroup: warps "
          "must be at least {0}, got {1}",
          2 * kWarpsPerWarpgroup, tiling.warps));
    unsigned consumers = tiling.warps / kWarpsPerWarpgroup - 1;
    if (tiling.blockM % (kWgmmaRows * consumers) != 0)
      return llvm::createStringError(llvm::formatv(
          "sm_90a gives each of {0} consumer warpgroups {1} query rows: "
          "block_m must be a multiple of {2}, got {3}",
          consumers, kWgmmaRows, kWgmmaRows * consumers, tiling.blockM));
    if (tiling.blockN > kWgmmaMaxN)
      return llvm::createStringError(llvm::formatv(
          "sm_90a uses block_n as a WGMMA N: it must be at most {0}, got {1}",
          kWgmmaMaxN, tiling.blockN));
    return llvm::Error::success();
  }
  }
  llvm_unreachable("unknown chip");
}

uint64_t fmha::getSm80AccumulatorRegisters(const AttentionTiling &tiling,
                                           unsigned valueHeadDim) {
  uint64_t threads = uint64_t(tiling.warps) * kThreadsPerWarp;
  return uint64_t(tiling.blockM) * (valueHeadDim + tiling.blockN) / threads;
}

uint64_t fmha::getSm80RowSumSharedBytes(const AttentionTiling &tiling,
                                        unsigned valueHeadDim) {
  if (tiling.chip != Chip::sm_80 ||
      getSm80AccumulatorRegisters(tiling, valueHeadDim) <=
          kSm80AccumulatorRegisterBudget)
    return 0;
  uint64_t threads = uint64_t(tiling.warps) * kThreadsPerWarp;
  // Two rows per m16 tile per thread; a thread holds the sums of one in
  // four of its rows (Sm80/FragmentSoftmax), 4 bytes each.
  uint64_t rowsPerThread = 2 * (tiling.blockM / (kMmaSyncRows * tiling.warps));
  return 4 * ((rowsPerThread + 3) / 4) * threads;
}

AttentionSharedLayout
fmha::getAttentionSharedLayout(const AttentionTiling &tiling,
                               AttentionHeadDims headDims,
                               unsigned elementBytes) {
  auto getRowBytes = [&](unsigned headDim) {
    return uint64_t(getAttentionTileColumns(tiling.chip, headDim)) *
           elementBytes;
  };
  uint64_t keyRowBytes = getRowBytes(headDims.qk);
  uint64_t valueRowBytes = getRowBytes(headDims.v);
  AttentionSharedLayout layout;
  layout.queryBufferBytes = tiling.blockM * keyRowBytes;
  layout.keyBufferBytes = tiling.blockN * keyRowBytes;
  layout.valueBufferBytes = tiling.blockN * valueRowBytes;
  bool hopper = tiling.chip == Chip::sm_90a;
  uint64_t outputBytes = tiling.blockM * valueRowBytes;
  auto place = [&] {
    layout.keys = layout.query + layout.queryBuffers * layout.queryBufferBytes;
    layout.values = layout.keys + tiling.stages * layout.keyBufferBytes;
    layout.output = layout.values + tiling.stages * layout.valueBufferBytes;
    layout.tail = layout.output + layout.outputBytes;
    // sm_80 stages O over the tiles from the base: past them where its
    // rows are wider than Q's, K's and V's together hold.
    if (!hopper)
      layout.tail = std::max(layout.tail, outputBytes);
    layout.tailBytes = hopper ? 8 * (2 * uint64_t(layout.queryBuffers) +
                                     4 * uint64_t(tiling.stages))
                              : getSm80RowSumSharedBytes(tiling, headDims.v);
    // The dynamic shared memory is only 16-byte aligned; the sm_90a tiles
    // start at the next 1024-byte swizzle atom. Half an atom of what the
    // rounding leaves, before the tiles or past the tail, holds the packed
    // sequences' order (TmaPipeline::getSlackBuffer).
    uint64_t slack = hopper ? kSm90aTileAlignment : 0;
    layout.totalBytes = slack + layout.tail + layout.tailBytes;
  };
  place();
  if (!hopper)
    return layout;
  // What is left of the chip's shared memory, for the tile boundary: O's
  // own staging buffer first, then a second Q buffer, each where it fits.
  uint64_t limit = getChipLimits(tiling.chip).maxSharedBytesPerBlock;
  layout.outputBytes = outputBytes;
  place();
  if (layout.totalBytes > limit) {
    layout.outputBytes = 0;
    place();
  }
  layout.queryBuffers = 2;
  place();
  if (layout.totalBytes > limit) {
    layout.queryBuffers = 1;
    place();
  }
  return layout;
}

unsigned fmha::getAttentionOutputPasses(const AttentionTiling &tiling,
                                        unsigned valueHeadDim,
                                        bool inOwnBuffer) {
  // All consumer warps' slabs, 16 rows of a pass's columns each, against
  // the buffer's rows (block_m in O's own, block_n in a V buffer) of the
  // tile's columns. A pass's columns are a power of two (the slab's chunk
  // swizzle XORs chunk indices), the widest that divides the tile's and
  // fits.
  unsigned columns = getAttentionTileColumns(tiling.chip, valueHeadDim);
  unsigned consumerRows = (tiling.warps / kWarpsPerWarpgroup - 1) * kWgmmaRows;
  unsigned bufferRows = inOwnBuffer ? tiling.blockM : tiling.blockN;
  unsigned passColumns = columns & -columns;
  while (passColumns >= kWarpSlabMinColumns &&
         consumerRows * passColumns > bufferRows * columns)
    passColumns /= 2;
  return passColumns >= kWarpSlabMinColumns ? columns / passColumns : 0;
}

/// \p headDims in words for diagnostics, with the tiles' columns where
/// they hold more than D: "head dim 96 (tiles of 128 columns)", "head dims
/// 192 (q, k) and 128 (v, o)".
static std::string describeHeadDims(Chip chip, AttentionHeadDims headDims) {
  unsigned keyColumns = getAttentionTileColumns(chip, headDims.qk);
  unsigned valueColumns = getAttentionTileColumns(chip, headDims.v);
  if (headDims.qk == headDims.v)
    return keyColumns == headDims.qk
               ? llvm::formatv("head dim {0}", headDims.qk).str()
               : llvm::formatv("head dim {0} (tiles of {1} columns)",
                               headDims.qk, keyColumns)
                     .str();
  std::string text = llvm::formatv("head dims {0} (q, k) and {1} (v, o)",
                                   headDims.qk, headDims.v);
  if (keyColumns != headDims.qk || valueColumns != headDims.v)
    text += llvm::formatv(" (tiles of {0} and {1} columns)", keyColumns,
                          valueColumns);
  return text;
}

llvm::Error fmha::checkAttentionTilingFits(const AttentionTiling &tiling,
                                           AttentionHeadDims headDims,
                                           unsigned elementBytes) {
  unsigned keyColumns = getAttentionTileColumns(tiling.chip, headDims.qk);
  unsigned valueColumns = getAttentionTileColumns(tiling.chip, headDims.v);
  std::string headDimText = describeHeadDims(tiling.chip, headDims);
  AttentionSharedLayout layout =
      getAttentionSharedLayout(tiling, headDims, elementBytes);
  if (tiling.chip == Chip::sm_90a && layout.outputBytes == 0 &&
      getAttentionOutputPasses(tiling, headDims.v) == 0)
    return llvm::createStringError(llvm::formatv(
        "sm_90a stages O in the last V buffer where a buffer of its own does "
        "not fit, {0} columns of every consumer warp's 16 rows at least: "
        "block_n must be at least {1} with {2} "
        "consumer warpgroups at {3}, got {4}",
        kWarpSlabMinColumns,
        (tiling.warps / kWarpsPerWarpgroup - 1) * kWgmmaRows *
            kWarpSlabMinColumns / valueColumns,
        tiling.warps / kWarpsPerWarpgroup - 1, headDimText, tiling.blockN));
  uint64_t needed = layout.totalBytes;
  uint64_t limit = getChipLimits(tiling.chip).maxSharedBytesPerBlock;
  if (needed <= limit)
    return llvm::Error::success();
  std::string beyondTiles;
  if (tiling.chip == Chip::sm_90a)
    beyondTiles = " + 1024 of alignment + 8 per mbarrier";
  else if (uint64_t sums = getSm80RowSumSharedBytes(tiling, headDims.v))
    beyondTiles = llvm::formatv(" + {0} of row sums", sums).str();
  std::string tilesText =
      keyColumns == valueColumns
          ? llvm::formatv("(block_m + 2 * stages * block_n) * {0} * {1} bytes",
                          keyColumns, elementBytes)
                .str()
          : llvm::formatv("(block_m * {0} + stages * block_n * ({0} + {1})) "
                          "* {2} bytes",
                          keyColumns, valueColumns, elementBytes)
                .str();
  return llvm::createStringError(llvm::formatv(
      "tile needs {0} bytes of shared memory at {1} ({2}{3}), but {4} allows "
      "{5} per block",
      needed, headDimText, tilesText, beyondTiles, stringifyChip(tiling.chip),
      limit));
}

ResampleTiling fmha::getDefaultResampleTiling(Chip chip) {
  // One target per thread, 256 threads: every thread searches in phase 1 and
  // the search is amortized over 256 targets of streaming, while several
  // CTAs per SM overlap one CTA's search with another's streaming (KERNELS.md
  // section 4). Measured on the H100 (bench/resample-tiles.sh,
  // docs/BENCHMARKS.md): best or within 1% of best on the two large
  // ANCHORS.md rows (3480 and 3055 GB/s); 64x128 is 0.4 us faster on the
  // small latency-bound row. The same on both chips until an A100 measures
  // otherwise.
  return {chip, 256, 256};
}

llvm::Error fmha::checkResampleTiling(const ResampleTiling &tiling) {
  if (tiling.blockT == 0)
    return llvm::createStringError("block_t must be positive, got 0");
  unsigned maxThreads = getChipLimits(tiling.chip).maxThreadsPerBlock;
  if (tiling.threads == 0 || tiling.threads % kThreadsPerWarp != 0 ||
      tiling.threads > maxThreads)
    return llvm::createStringError(llvm::formatv(
        "threads must be a positive multiple of {0} and at most {1}, got {2}",
        kThreadsPerWarp, maxThreads, tiling.threads));
  return llvm::Error::success();
}

llvm::SmallVector<AttentionGradKernel, 4>
fmha::getAttentionGradKernels(int64_t headDim, bool withDqAccum,
                              bool withDkvPartial) {
  using K = AttentionGradKernel;
  if (withDkvPartial)
    return {K::Delta, K::Dkv, K::DqConvert, K::DkvReduce};
  if (withDqAccum)
    return {K::Delta, K::Dkv, K::DqConvert};
  if (getAttentionGradTileColumns(headDim) == 256)
    return {K::Delta, K::Dq, K::Dk, K::Dv};
  return {K::Delta, K::Dq, K::Dkv};
}

llvm::StringRef fmha::getAttentionGradKernelName(AttentionGradKernel kernel) {
  switch (kernel) {
  case AttentionGradKernel::Delta:
    return "attention_grad_delta";
  case AttentionGradKernel::Dq:
    return "attention_grad_dq";
  case AttentionGradKernel::Dkv:
    return "attention_grad_dkv";
  case AttentionGradKernel::Dk:
    return "attention_grad_dk";
  case AttentionGradKernel::Dv:
    return "attention_grad_dv";
  case AttentionGradKernel::DqConvert:
    return "attention_grad_dq_convert";
  case AttentionGradKernel::DkvReduce:
    return "attention_grad_dkv_reduce";
  }
  llvm_unreachable("unknown attention_grad kernel");
}
