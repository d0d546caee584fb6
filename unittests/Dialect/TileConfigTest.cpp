//===- TileConfigTest.cpp - tile policy: limits, defaults, legality -------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/TileConfig.h"

#include "gtest/gtest.h"

using namespace mlir::fmha;

namespace {

constexpr Chip kChips[] = {Chip::sm_80, Chip::sm_90a};
constexpr unsigned kHeadDims[] = {64, 128, 256};

/// The error text of \p err, or "" for success.
std::string errorText(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : std::string();
}

TEST(TileConfig, ParsesEveryChipName) {
  for (Chip chip : kChips) {
    llvm::Expected<Chip> parsed = parseChip(stringifyChip(chip));
    ASSERT_TRUE(static_cast<bool>(parsed));
    EXPECT_EQ(*parsed, chip);
  }
}

TEST(TileConfig, RefusesPlainSm90AndSaysWhy) {
  llvm::Expected<Chip> parsed = parseChip("sm_90");
  ASSERT_FALSE(static_cast<bool>(parsed));
  std::string message = llvm::toString(parsed.takeError());
  EXPECT_NE(message.find("'sm_90a'"), std::string::npos) << message;
  EXPECT_NE(message.find("WGMMA"), std::string::npos) << message;
}

TEST(TileConfig, RefusesUnknownChipNamingIt) {
  llvm::Expected<Chip> parsed = parseChip("sm_75");
  ASSERT_FALSE(static_cast<bool>(parsed));
  EXPECT_EQ(llvm::toString(parsed.takeError()),
            "unknown chip 'sm_75'; expected sm_80 or sm_90a");
}

// Every default must pass the same checks the verifier applies, for both
// 16-bit element types, or materializing defaults would produce invalid IR.
TEST(TileConfig, EveryDefaultAttentionTilingIsLegal) {
  for (Chip chip : kChips)
    for (unsigned headDim : kHeadDims)
      for (bool causal : {false, true})
        for (std::optional<int64_t> querySeq :
             {std::optional<int64_t>(), std::optional<int64_t>(1),
              std::optional<int64_t>(kShortAttentionQueries),
              std::optional<int64_t>(1024), std::optional<int64_t>(4096),
              std::optional<int64_t>(16384)}) {
          AttentionTiling tiling =
              getDefaultAttentionTiling(chip, headDim, causal, querySeq);
          SCOPED_TRACE(std::string(stringifyChip(chip)) + " d=" +
                       std::to_string(headDim) + (causal ? " causal" : "") +
                       " Sq=" + (querySeq ? std::to_string(*querySeq) : "?"));
          EXPECT_EQ(tiling.chip, chip);
          EXPECT_EQ(errorText(checkAttentionTiling(tiling)), "");
          EXPECT_EQ(errorText(checkAttentionTilingFits(tiling, headDim, 2)),
                    "");
        }
}

TEST(TileConfig, DefaultsFollowTheFlashAttentionConfigs) {
  AttentionTiling fa3 = getDefaultAttentionTiling(Chip::sm_90a, 128, false);
  EXPECT_EQ(fa3.blockM, 128u);
  EXPECT_EQ(fa3.blockN, 128u);
  EXPECT_EQ(fa3.warps, 12u);
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 128, true).blockN, 128u);
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 64, false).warps, 16u);
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 256, true).blockN, 80u);
  // Known query lengths: causal d64 takes 3 consumers from 4k on, and d72
  // to d96 3 consumers of 96-key blocks; the rest is as without a length.
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 64, true, 1024).blockM,
            128u);
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 64, true, 4096).blockM,
            192u);
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 64, true, 4096).warps,
            16u);
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 128, true, 16384),
            getDefaultAttentionTiling(Chip::sm_90a, 128, true));
  for (unsigned headDim : {72u, 96u})
    for (bool causal : {false, true}) {
      EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, headDim, causal, 4096),
                (AttentionTiling{Chip::sm_90a, 192, 96, 16, 2}));
      EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, headDim, causal, 1024),
                getDefaultAttentionTiling(Chip::sm_90a, headDim, causal));
    }
  // v's head dim picks the tile where q's rows leave it in shared memory:
  // 192/96 and 160/80 take 192 x 96 at 4k; 256/96's does not fit, so it
  // falls back to d256's.
  for (AttentionHeadDims headDims : {AttentionHeadDims{128, 96},
                                     AttentionHeadDims{192, 96},
                                     AttentionHeadDims{160, 80}})
    EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, headDims, true, 4096),
              (AttentionTiling{Chip::sm_90a, 192, 96, 16, 2}));
  EXPECT_EQ(
      getDefaultAttentionTiling(Chip::sm_90a, AttentionHeadDims{256, 96},
                                false, 4096),
      getDefaultAttentionTiling(Chip::sm_90a, 256, false, 4096));
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 104, false, 4096),
            getDefaultAttentionTiling(Chip::sm_90a, 104, false));
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 64, false, 1024),
            getDefaultAttentionTiling(Chip::sm_90a, 64, false));
  // Short queries: d64 non-causal keeps 128 rows (192 would pad them), as
  // its causal tile; past them the tile for every length.
  for (unsigned headDim : {32u, 64u}) {
    EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, headDim, false,
                                        kShortAttentionQueries),
              (AttentionTiling{Chip::sm_90a, 128, 128, 12, 2}));
    EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, headDim, false,
                                        kShortAttentionQueries + 1),
              getDefaultAttentionTiling(Chip::sm_90a, headDim, false));
    EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, headDim, true,
                                        kShortAttentionQueries),
              getDefaultAttentionTiling(Chip::sm_90a, headDim, true));
  }
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 128, false,
                                      kShortAttentionQueries),
            getDefaultAttentionTiling(Chip::sm_90a, 128, false));
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_80, 128, true, 16384),
            getDefaultAttentionTiling(Chip::sm_80, 128, true));
  AttentionTiling fa2 = getDefaultAttentionTiling(Chip::sm_80, 256, false);
  EXPECT_EQ(fa2.blockM, 128u);
  EXPECT_EQ(fa2.blockN, 64u);
  EXPECT_EQ(fa2.warps, 8u);
}

TEST(TileConfig, AttentionHeadDimsAreMultiplesOf8From32To256) {
  for (int64_t headDim = 0; headDim <= 300; ++headDim)
    EXPECT_EQ(isSupportedAttentionHeadDim(headDim),
              headDim >= 32 && headDim <= 256 && headDim % 8 == 0)
        << headDim;
}

TEST(TileConfig, EveryHeadDimHasALegalDefaultTileThatFits) {
  for (Chip chip : kChips)
    for (unsigned headDim = 32; headDim <= 256; headDim += 8)
      for (bool causal : {false, true})
        for (int64_t querySeq : {1, 16384}) {
          AttentionTiling tiling =
              getDefaultAttentionTiling(chip, headDim, causal, querySeq);
          SCOPED_TRACE(std::string(stringifyChip(chip)) +
                       " d=" + std::to_string(headDim) +
                       " Sq=" + std::to_string(querySeq));
          EXPECT_EQ(errorText(checkAttentionTiling(tiling)), "");
          EXPECT_EQ(errorText(checkAttentionTilingFits(tiling, headDim, 2)),
                    "");
        }
}

// One query (decode) on sm_90a: one consumer of 64 rows, with the key
// blocks and K/V stages measured fastest at each head dim (d32 and below,
// d40 to d64, d104 to d128, d200 to d256); d72 to d96 and the tiles of 192
// columns keep theirs, and sm_80 has one tile for every length.
TEST(TileConfig, DecodeTakesOneConsumerWhereMeasuredFaster) {
  for (unsigned headDim : {24u, 32u})
    EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, headDim, false, 1),
              (AttentionTiling{Chip::sm_90a, 64, 192, 8, 3}))
        << headDim;
  for (unsigned headDim : {40u, 48u, 64u})
    EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, headDim, false, 1),
              (AttentionTiling{Chip::sm_90a, 64, 128, 8, 3}))
        << headDim;
  for (unsigned headDim : {104u, 128u})
    EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, headDim, true, 1),
              (AttentionTiling{Chip::sm_90a, 64, 64, 8, 3}))
        << headDim;
  for (unsigned headDim : {200u, 256u})
    EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, headDim, false, 1),
              (AttentionTiling{Chip::sm_90a, 64, 80, 8, 2}))
        << headDim;
  for (unsigned headDim : {72u, 96u, 160u, 192u})
    EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, headDim, false, 1),
              getDefaultAttentionTiling(Chip::sm_90a, headDim, false))
        << headDim;
  // A paged cache: longer key blocks at d40 to d128.
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 64, false, 1, 4,
                                      /*pagedKeys=*/true),
            (AttentionTiling{Chip::sm_90a, 64, 192, 8, 3}));
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 128, false, 1, 4,
                                      /*pagedKeys=*/true),
            (AttentionTiling{Chip::sm_90a, 64, 192, 8, 2}));
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 256, false, 1, 4,
                                      /*pagedKeys=*/true),
            getDefaultAttentionTiling(Chip::sm_90a, 256, false, 1));
  // A few queries whose rows, packed with their group's, fill at most one
  // consumer's 64 (speculative decoding) take it too; more keep the tile of
  // their length.
  AttentionTiling decode128 =
      getDefaultAttentionTiling(Chip::sm_90a, 128, true, 1);
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 128, true, 2), decode128);
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 128, true, 16, 4),
            decode128);
  EXPECT_EQ(
      getDefaultAttentionTiling(Chip::sm_90a, 128, true, kDecodeTileQueryRows),
      decode128);
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 128, true, 17, 4),
            getDefaultAttentionTiling(Chip::sm_90a, 128, true));
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 128, true,
                                      kDecodeTileQueryRows + 1),
            getDefaultAttentionTiling(Chip::sm_90a, 128, true));
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 64, false, 2, 32),
            getDefaultAttentionTiling(Chip::sm_90a, 64, false, 1));
  // Past the decode tile's rows, a few queries are short ones.
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 64, false, 2, 33),
            getDefaultAttentionTiling(Chip::sm_90a, 64, false,
                                      kShortAttentionQueries));
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 96, false, 4, 4),
            getDefaultAttentionTiling(Chip::sm_90a, 96, false));
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_80, 128, false, 1),
            getDefaultAttentionTiling(Chip::sm_80, 128, false));
  // v's head dim apart: DeepSeek's 192/128 one query takes d128's decode
  // tile, whose 64-key stages leave room for Q's and K's rows of 192
  // columns.
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, AttentionHeadDims{192, 128},
                                      false, 1),
            getDefaultAttentionTiling(Chip::sm_90a, 128, false, 1));
}

TEST(TileConfig, TilesRoundTheHeadDimUpToTheSwizzleUnit) {
  // sm_90a: whole 64-column TMA boxes; sm_80: 64, 128 or 256 columns.
  EXPECT_EQ(getAttentionTileColumns(Chip::sm_90a, 32), 64u);
  EXPECT_EQ(getAttentionTileColumns(Chip::sm_90a, 96), 128u);
  EXPECT_EQ(getAttentionTileColumns(Chip::sm_90a, 192), 192u);
  EXPECT_EQ(getAttentionTileColumns(Chip::sm_90a, 256), 256u);
  EXPECT_EQ(getAttentionTileColumns(Chip::sm_80, 48), 64u);
  EXPECT_EQ(getAttentionTileColumns(Chip::sm_80, 96), 128u);
  EXPECT_EQ(getAttentionTileColumns(Chip::sm_80, 160), 256u);
  // The shared layout holds the tile's columns, the messages both.
  AttentionSharedLayout d96 =
      getAttentionSharedLayout({Chip::sm_90a, 128, 128, 12, 2}, 96, 2);
  EXPECT_EQ(d96.queryBufferBytes, 128u * 128 * 2);
  EXPECT_EQ(errorText(checkAttentionTilingFits({Chip::sm_90a, 128, 256, 12, 2},
                                               160, 2)),
            "tile needs 443472 bytes of shared memory at head dim 160 (tiles "
            "of 192 columns) ((block_m + 2 * stages * block_n) * 192 * 2 "
            "bytes + 1024 of alignment + 8 per mbarrier), but sm_90a allows "
            "232448 per block");
}

// The backward keeps three geometries on either chip: D rounded up to 64,
// 128 or 256 columns; past 128 columns without dq_accum dk and dv are two
// kernels.
TEST(TileConfig, BackwardTilesRoundTheHeadDimUpToItsThreeGeometries) {
  for (auto [headDim, columns] : {std::pair{32u, 64u},
                                  {40u, 64u},
                                  {64u, 64u},
                                  {72u, 128u},
                                  {96u, 128u},
                                  {128u, 128u},
                                  {136u, 256u},
                                  {192u, 256u},
                                  {256u, 256u}})
    EXPECT_EQ(getAttentionGradTileColumns(headDim), columns) << headDim;
  using K = AttentionGradKernel;
  EXPECT_EQ(getAttentionGradKernels(192, /*withDqAccum=*/false),
            (llvm::SmallVector<K, 4>{K::Delta, K::Dq, K::Dk, K::Dv}));
  EXPECT_EQ(getAttentionGradKernels(96, /*withDqAccum=*/false),
            (llvm::SmallVector<K, 4>{K::Delta, K::Dq, K::Dkv}));
  EXPECT_EQ(getAttentionGradKernels(192, /*withDqAccum=*/true),
            (llvm::SmallVector<K, 4>{K::Delta, K::Dkv, K::DqConvert}));
}

TEST(TileConfig, DifferentHeadDimsSizeQAndKApartFromV) {
  // DeepSeek's 192/128 on sm_90a: Q and K rows of 192 columns, V rows of
  // 128, at d128's 128x128 tile, which fits beside them.
  AttentionHeadDims deepSeek{192, 128};
  AttentionTiling tiling = getDefaultAttentionTiling(Chip::sm_90a, deepSeek,
                                                     /*causal=*/false);
  EXPECT_EQ(tiling, getDefaultAttentionTiling(Chip::sm_90a, 128, false));
  AttentionSharedLayout layout = getAttentionSharedLayout(tiling, deepSeek, 2);
  uint64_t keyRow = 192 * 2, valueRow = 128 * 2;
  EXPECT_EQ(layout.keys, 128 * keyRow);
  EXPECT_EQ(layout.keyBufferBytes, 128 * keyRow);
  EXPECT_EQ(layout.valueBufferBytes, 128 * valueRow);
  EXPECT_EQ(layout.values, 128 * keyRow + 2 * 128 * keyRow);
  EXPECT_EQ(layout.tail, layout.values + 2 * 128 * valueRow);
  EXPECT_EQ(errorText(checkAttentionTilingFits(tiling, deepSeek, 2)), "");
  // Where v's tile does not fit beside q's wider rows, the wider's tile:
  // 256/128 takes d256's.
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, {256, 128}, false),
            getDefaultAttentionTiling(Chip::sm_90a, 256, false));
  // The messages name both head dims.
  EXPECT_EQ(errorText(checkAttentionTilingFits({Chip::sm_90a, 128, 176, 12, 2},
                                               {256, 96}, 2)),
            "tile needs 336976 bytes of shared memory at head dims 256 (q, "
            "k) and 96 (v, o) (tiles of 256 and 128 columns) ((block_m * "
            "256 + stages * block_n * (256 + 128)) * 2 bytes + 1024 of "
            "alignment + 8 per mbarrier), but sm_90a allows 232448 per "
            "block");
  // sm_80 stages O over the tiles from the base: where its rows are wider
  // than Q's, K's and V's together, the row sums start past it.
  AttentionSharedLayout wideO =
      getAttentionSharedLayout({Chip::sm_80, 128, 64, 8, 1}, {32, 256}, 2);
  EXPECT_EQ(wideO.values, (128u + 64) * 64 * 2);
  EXPECT_EQ(wideO.tail, 128u * 256 * 2);
  // Every pair of supported head dims has a default tile that fits.
  for (Chip chip : {Chip::sm_80, Chip::sm_90a})
    for (unsigned qk = 32; qk <= 256; qk += 8)
      for (unsigned v = 32; v <= 256; v += 8)
        for (bool causal : {false, true}) {
          AttentionTiling t = getDefaultAttentionTiling(chip, {qk, v}, causal);
          EXPECT_EQ(errorText(checkAttentionTilingFits(t, {qk, v}, 2)), "")
              << stringifyChip(chip).str() << " d" << qk << " dv" << v;
        }
}

TEST(TileConfig, SharedLayoutIsOneQTileThenStagedKThenStagedV) {
  AttentionTiling tiling{Chip::sm_90a, 128, 176, 12, 2};
  AttentionSharedLayout hopper = getAttentionSharedLayout(tiling, 128, 2);
  uint64_t q = 128 * 128 * 2, buffer = 176 * 128 * 2;
  EXPECT_EQ(hopper.query, 0u);
  EXPECT_EQ(hopper.keys, q);
  EXPECT_EQ(hopper.keyBufferBytes, buffer);
  EXPECT_EQ(hopper.valueBufferBytes, buffer);
  EXPECT_EQ(hopper.values, q + 2 * buffer);
  // sm_90a: then 2 + 4 * stages barriers, and the kernel asks for the
  // 1024-byte alignment slack too.
  EXPECT_EQ(hopper.tail, q + 4 * buffer);
  EXPECT_EQ(hopper.tailBytes, 8u * (2 + 4 * 2));
  EXPECT_EQ(hopper.totalBytes,
            uint64_t(128 + 2 * 2 * 176) * 128 * 2 + 1024 + 8 * (2 + 4 * 2));
  // sm_80 d128 at 128x64 with 4 warps: plus 4 bytes per held row sum (one
  // per 4 of a thread's rows) per thread, after the tiles.
  AttentionSharedLayout ampere =
      getAttentionSharedLayout({Chip::sm_80, 128, 64, 4, 1}, 128, 2);
  EXPECT_EQ(ampere.keys, 128u * 128 * 2);
  EXPECT_EQ(ampere.values, (128u + 64) * 128 * 2);
  EXPECT_EQ(ampere.tail, (128u + 2 * 64) * 128 * 2);
  EXPECT_EQ(ampere.tailBytes, 4u * 128);
  EXPECT_EQ(ampere.totalBytes, uint64_t(128 + 2 * 64) * 128 * 2 + 4 * 128);
  // d64 keeps its sums in registers: nothing after the tiles.
  EXPECT_EQ(getAttentionSharedLayout({Chip::sm_80, 128, 64, 4, 1}, 64, 2)
                .tailBytes,
            0u);
}

// sm_80's default tiles on a device with less shared memory than an A100:
// past head dim 128 (rows of 256 columns) 128 x 64 with 8 warps takes 128
// KB, past an sm_86's or sm_89's 99 KB, so there FlashAttention-2's 64 x 64
// with 4 warps; whatever fits keeps its tile, and every head dim's tile
// fits.
TEST(TileConfig, Sm80DefaultsFitASmallerDevice) {
  uint64_t a100 = getChipLimits(Chip::sm_80).maxSharedBytesPerBlock;
  for (unsigned d = 8; d <= 256; d += 8)
    for (bool causal : {false, true}) {
      SCOPED_TRACE("d=" + std::to_string(d) + (causal ? " causal" : ""));
      AttentionTiling chip = getDefaultAttentionTiling(Chip::sm_80, d, causal);
      AttentionTiling device = getDefaultAttentionTiling(
          Chip::sm_80, d, causal, 4096, 1, false, kSm8xSharedBytesPerBlock);
      EXPECT_LE(getAttentionSharedLayout(device, d, 2).totalBytes,
                kSm8xSharedBytesPerBlock);
      AttentionTiling sm8x{Chip::sm_80, 64, 64, 4, 1};
      EXPECT_EQ(device, d <= 128 ? chip : sm8x);
      EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_80, d, causal, 4096, 1,
                                          false, a100),
                chip);
    }
  // v's head dim apart: DeepSeek's 192/128 (Q and K rows of 256 columns, V
  // of 128: 112 KB at 128 x 64) too.
  AttentionHeadDims deepSeek{192, 128};
  AttentionTiling fitted =
      getDefaultAttentionTiling(Chip::sm_80, deepSeek, false, std::nullopt, 1,
                                false, kSm8xSharedBytesPerBlock);
  EXPECT_EQ(fitted, (AttentionTiling{Chip::sm_80, 64, 64, 4, 1}));
  EXPECT_LE(getAttentionSharedLayout(fitted, deepSeek, 2).totalBytes,
            kSm8xSharedBytesPerBlock);
  // sm_90a's tiles are the chip's whatever the device says.
  EXPECT_EQ(getDefaultAttentionTiling(Chip::sm_90a, 256, false, std::nullopt, 1,
                                      false, kSm8xSharedBytesPerBlock),
            getDefaultAttentionTiling(Chip::sm_90a, 256, false));
}

// sm_80's backward on a 99 KB GPU: the deterministic kernels fit at every
// head dim (past 128 on 64 x 16 tiles, still double-buffered), the one-pass
// kernel up to 128 (FlashAttention-2's tiles there); up to 128, and on an
// A100, the deterministic kernels keep the chip's tiling. Past 128 the
// one-pass kernel keeps its own, which the lowering refuses by name.
TEST(TileConfig, Sm80GradTilingFitsASmallerDevice) {
  uint64_t a100 = getChipLimits(Chip::sm_80).maxSharedBytesPerBlock;
  auto bytes = [](const Sm80GradTiling &tiling, int64_t d, bool dqAccum) {
    return static_cast<uint64_t>(
        getSm80GradSharedLayout(tiling, d, dqAccum, 2).totalBytes);
  };
  for (int64_t d = 32; d <= 256; d += 8) {
    SCOPED_TRACE("d=" + std::to_string(d));
    Sm80GradTiling chip = getSm80GradTiling(d, /*withDqAccum=*/false);
    Sm80GradTiling device =
        getSm80GradTiling(d, false, kSm8xSharedBytesPerBlock);
    EXPECT_LE(bytes(device, d, false), kSm8xSharedBytesPerBlock);
    if (d <= 128) {
      EXPECT_EQ(device, chip);
    } else {
      EXPECT_EQ(bytes(chip, d, false), 131584u);
      EXPECT_EQ(device, (Sm80GradTiling{64, 16, 4}));
      EXPECT_EQ(bytes(device, d, false), 98560u);
    }
    EXPECT_EQ(getSm80GradTiling(d, false, a100), chip);
    if (!isSm80OnePassGradHeadDim(d))
      continue;
    Sm80GradTiling onePass = getSm80GradTiling(d, /*withDqAccum=*/true);
    Sm80GradTiling onePassDevice =
        getSm80GradTiling(d, true, kSm8xSharedBytesPerBlock);
    EXPECT_LE(bytes(onePass, d, true), a100);
    EXPECT_EQ(getSm80GradTiling(d, true, a100), onePass);
    // Below 64 the chip's (64 x 64 with 4 warps, 57 KB) fits.
    EXPECT_EQ(bytes(onePass, d, true) > kSm8xSharedBytesPerBlock, d >= 64);
    if (d > 128) {
      EXPECT_EQ(onePassDevice, onePass);
      continue;
    }
    EXPECT_LE(bytes(onePassDevice, d, true), kSm8xSharedBytesPerBlock);
    Sm80GradTiling expected = onePass;
    if (d == 64) {
      expected = {128, 64, 8, 2};
    } else if (d > 64) {
      expected = {64, 64, d == 96 || d == 128 ? 8 : 4, onePass.columnWarps};
      expected.singleBuffered = true;
    }
    EXPECT_EQ(onePassDevice, expected);
  }
}

// The limit an attention_grad records for a device: only where sm_80's
// tiling must change to fit it, and never for Hopper's one-pass kernel.
TEST(TileConfig, AttentionGradSharedLimitOnlyWhereTheTilingChanges) {
  uint64_t sm86 = kSm8xSharedBytesPerBlock;
  uint64_t a100 = getChipLimits(Chip::sm_80).maxSharedBytesPerBlock;
  EXPECT_EQ(getAttentionGradSharedLimit(Chip::sm_80, 256, false, sm86), sm86);
  EXPECT_EQ(getAttentionGradSharedLimit(Chip::sm_80, 128, true, sm86), sm86);
  EXPECT_EQ(getAttentionGradSharedLimit(Chip::sm_80, 128, false, sm86),
            std::nullopt);
  // Past 128 the one-pass kernel has no tiling that fits: the chip's stays.
  EXPECT_EQ(getAttentionGradSharedLimit(Chip::sm_80, 256, true, sm86),
            std::nullopt);
  EXPECT_EQ(getAttentionGradSharedLimit(Chip::sm_80, 256, false, a100),
            std::nullopt);
  EXPECT_EQ(getAttentionGradSharedLimit(Chip::sm_80, 256, false, 0),
            std::nullopt);
  // sm_90a's deterministic kernels are sm_80's; its one-pass kernel not.
  EXPECT_EQ(getAttentionGradSharedLimit(Chip::sm_90a, 256, false, sm86), sm86);
  EXPECT_EQ(getAttentionGradSharedLimit(Chip::sm_90a, 128, true, sm86),
            std::nullopt);
}

// sm_90a spends what is left of the chip on the tile boundary: O's own
// staging buffer, then a second Q buffer, each where it fits.
TEST(TileConfig, SharedLayoutSpendsTheRestOnTheTileBoundary) {
  uint64_t limit = getChipLimits(Chip::sm_90a).maxSharedBytesPerBlock;
  // d128 at 128x128: both (Q 2 x 32 KB, K and V 4 x 32 KB, O 32 KB).
  AttentionSharedLayout both =
      getAttentionSharedLayout({Chip::sm_90a, 128, 128, 12, 2}, 128, 2);
  uint64_t tile = 128 * 128 * 2;
  EXPECT_EQ(both.queryBuffers, 2u);
  EXPECT_EQ(both.keys, 2 * tile);
  EXPECT_EQ(both.output, 6 * tile);
  EXPECT_EQ(both.outputBytes, tile);
  EXPECT_EQ(both.tail, 7 * tile);
  EXPECT_EQ(both.tailBytes, 8u * (2 * 2 + 4 * 2));
  EXPECT_LE(both.totalBytes, limit);
  // d96 at 192x96 (tiles of 128 columns): O's buffer, and no room for a
  // second Q.
  AttentionSharedLayout outputOnly =
      getAttentionSharedLayout({Chip::sm_90a, 192, 96, 16, 2}, 96, 2);
  EXPECT_EQ(outputOnly.queryBuffers, 1u);
  EXPECT_EQ(outputOnly.outputBytes, 192u * 128 * 2);
  // d256 at 128x80: neither; O is staged in the last V buffer.
  AttentionSharedLayout neither =
      getAttentionSharedLayout({Chip::sm_90a, 128, 80, 12, 2}, 256, 2);
  EXPECT_EQ(neither.queryBuffers, 1u);
  EXPECT_EQ(neither.outputBytes, 0u);
  EXPECT_EQ(neither.tail, neither.values + 2 * 80 * 256 * 2);
  // sm_80 has neither.
  AttentionSharedLayout ampere =
      getAttentionSharedLayout({Chip::sm_80, 128, 64, 4, 1}, 64, 2);
  EXPECT_EQ(ampere.queryBuffers, 1u);
  EXPECT_EQ(ampere.outputBytes, 0u);
}

TEST(TileConfig, Sm80AccumulatorRegistersAreOAndSPerThread) {
  // blockM * (headDim + blockN) / threads, at the default tiles.
  EXPECT_EQ(getSm80AccumulatorRegisters({Chip::sm_80, 128, 64, 4, 1}, 64),
            128u);
  EXPECT_EQ(getSm80AccumulatorRegisters({Chip::sm_80, 128, 64, 4, 1}, 128),
            192u);
  EXPECT_EQ(getSm80AccumulatorRegisters({Chip::sm_80, 128, 64, 8, 1}, 256),
            160u);
  // Only d64 is under the budget, where a tile copy's passes share a base.
  EXPECT_LT(getSm80AccumulatorRegisters({Chip::sm_80, 128, 64, 4, 1}, 64),
            kSm80AccumulatorRegisterBudget);
  EXPECT_EQ(getSm80AccumulatorRegisters({Chip::sm_80, 128, 64, 8, 1}, 256),
            kSm80AccumulatorRegisterBudget);
}

TEST(TileConfig, Sm80RowSumsGoToSharedMemoryOnlyBeyondTheRegisterBudget) {
  // d128 at 128x64, 4 warps: 192 accumulators, over the budget; one held
  // sum per thread.
  EXPECT_EQ(getSm80RowSumSharedBytes({Chip::sm_80, 128, 64, 4, 1}, 128),
            4u * 128);
  // d256 with 4 warps: 64x64 has 64 * 320 / 128 = 160 (not over); 64x128
  // has 192, and with 2 rows per thread still one held sum per thread.
  EXPECT_EQ(getSm80RowSumSharedBytes({Chip::sm_80, 64, 64, 4, 1}, 256), 0u);
  EXPECT_EQ(getSm80RowSumSharedBytes({Chip::sm_80, 64, 128, 4, 1}, 256),
            4u * 128);
  // d256 at 128x64 with 8 warps (160) and d64 at 128x64 (128): registers.
  EXPECT_EQ(getSm80RowSumSharedBytes({Chip::sm_80, 128, 64, 8, 1}, 256), 0u);
  EXPECT_EQ(getSm80RowSumSharedBytes({Chip::sm_80, 128, 64, 4, 1}, 64), 0u);
  // The sm_90a kernel has no such sums.
  EXPECT_EQ(getSm80RowSumSharedBytes({Chip::sm_90a, 128, 64, 4, 1}, 128), 0u);
}

TEST(TileConfig, RejectsTilesThatDoNotFit) {
  AttentionTiling tiling{Chip::sm_90a, 128, 128, 12, 2};
  EXPECT_EQ(errorText(checkAttentionTilingFits(tiling, 256, 2)),
            "tile needs 328784 bytes of shared memory at head dim 256 "
            "((block_m + 2 * stages * block_n) * 256 * 2 bytes + 1024 of "
            "alignment + 8 per mbarrier), but sm_90a allows 232448 per block");
  // The same tile fits at head dim 128.
  EXPECT_EQ(errorText(checkAttentionTilingFits(tiling, 128, 2)), "");
}

TEST(TileConfig, OutputStagingPassesFitTheLastValueBuffer) {
  // Every consumer warp's 16 rows of head_dim / passes columns in the
  // block_n x head_dim V buffer.
  EXPECT_EQ(getAttentionOutputPasses({Chip::sm_90a, 128, 128, 12, 2}, 128), 1u);
  EXPECT_EQ(getAttentionOutputPasses({Chip::sm_90a, 128, 80, 12, 2}, 256), 2u);
  EXPECT_EQ(getAttentionOutputPasses({Chip::sm_90a, 192, 128, 16, 2}, 64), 2u);
  EXPECT_EQ(getAttentionOutputPasses({Chip::sm_90a, 128, 32, 12, 2}, 64), 4u);
  // 192 columns (head dims 144 to 192): slabs of 64, a power of two.
  EXPECT_EQ(getAttentionOutputPasses({Chip::sm_90a, 128, 80, 12, 2}, 160), 3u);
  EXPECT_EQ(getAttentionOutputPasses({Chip::sm_90a, 128, 32, 12, 2}, 192), 6u);
  // In O's own buffer (block_m rows) every warp's slab holds its rows'
  // columns whole where they are a power of two, else the widest power of
  // two that divides them: d160's 192 in 3 passes.
  EXPECT_EQ(getAttentionOutputPasses({Chip::sm_90a, 128, 96, 12, 2}, 128,
                                     /*inOwnBuffer=*/true),
            1u);
  EXPECT_EQ(getAttentionOutputPasses({Chip::sm_90a, 128, 96, 12, 2}, 160,
                                     /*inOwnBuffer=*/true),
            3u);
  EXPECT_EQ(getAttentionOutputPasses({Chip::sm_90a, 128, 16, 12, 2}, 64,
                                     /*inOwnBuffer=*/true),
            1u);
  // 16-column slabs at least: 8 passes at head dim 64 are too many.
  EXPECT_EQ(getAttentionOutputPasses({Chip::sm_90a, 128, 16, 12, 2}, 64), 0u);
  // Which matters only where O's own buffer does not fit
  // (AttentionSharedLayout): at 2 stages it does, at 49 not.
  EXPECT_EQ(errorText(checkAttentionTilingFits({Chip::sm_90a, 128, 16, 12, 2},
                                               64, 2)),
            "");
  EXPECT_EQ(errorText(checkAttentionTilingFits({Chip::sm_90a, 128, 16, 12, 49},
                                               64, 2)),
            "sm_90a stages O in the last V buffer where a buffer of its own "
            "does not fit, 16 columns of every consumer warp's 16 rows at "
            "least: block_n must be at least 32 with 2 consumer warpgroups at "
            "head dim 64, got 16");
  // The same tile at head dim 128 stages in 8 passes of 16 columns.
  EXPECT_EQ(errorText(checkAttentionTilingFits({Chip::sm_90a, 128, 16, 12, 2},
                                               128, 2)),
            "");
}

TEST(TileConfig, RejectsIllegalWarpLayouts) {
  EXPECT_EQ(errorText(checkAttentionTiling({Chip::sm_80, 96, 64, 4, 1})),
            "sm_80 stacks 4 warps of 16 query rows: block_m must be a "
            "multiple of 64, got 96");
  EXPECT_EQ(errorText(checkAttentionTiling({Chip::sm_90a, 128, 64, 6, 2})),
            "sm_90a schedules whole warpgroups: warps must be a multiple of "
            "4, got 6");
  EXPECT_EQ(errorText(checkAttentionTiling({Chip::sm_90a, 64, 64, 4, 2})),
            "sm_90a needs a producer and at least one consumer warpgroup: "
            "warps must be at least 8, got 4");
  EXPECT_EQ(errorText(checkAttentionTiling({Chip::sm_90a, 64, 64, 12, 2})),
            "sm_90a gives each of 2 consumer warpgroups 64 query rows: "
            "block_m must be a multiple of 128, got 64");
  EXPECT_EQ(errorText(checkAttentionTiling({Chip::sm_90a, 128, 272, 12, 1})),
            "sm_90a uses block_n as a WGMMA N: it must be at most 256, got "
            "272");
  EXPECT_EQ(errorText(checkAttentionTiling({Chip::sm_80, 128, 40, 4, 1})),
            "block_n must be a multiple of 16 (the k extent of the P*V MMA), "
            "got 40");
  EXPECT_EQ(errorText(checkAttentionTiling({Chip::sm_80, 1024, 64, 64, 1})),
            "warps must be at most 32 (1024 threads per block), got 64");
}

TEST(TileConfig, ResampleDefaultsAreLegalAndBadThreadCountsAreNot) {
  for (Chip chip : kChips)
    EXPECT_EQ(errorText(checkResampleTiling(getDefaultResampleTiling(chip))),
              "");
  EXPECT_EQ(errorText(checkResampleTiling({Chip::sm_80, 64, 48})),
            "threads must be a positive multiple of 32 and at most 1024, got "
            "48");
  EXPECT_EQ(errorText(checkResampleTiling({Chip::sm_80, 0, 256})),
            "block_t must be positive, got 0");
}

} // namespace
