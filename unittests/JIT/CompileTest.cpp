//===- CompileTest.cpp - the JIT's compile path, without a GPU ------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/Compile.h"
#include "fmha/JIT/JIT.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cmath>
#include <functional>
#include <set>

using namespace mlir::fmha;
namespace fs = llvm::sys::fs;

namespace {

constexpr const char *kScaleKernel = R"mlir(
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%x: memref<?xf32>, %n: index, %s: f32) kernel {
      %i = gpu.thread_id x
      %inside = arith.cmpi ult, %i, %n : index
      scf.if %inside {
        %v = memref.load %x[%i] : memref<?xf32>
        %r = arith.mulf %v, %s : f32
        memref.store %r, %x[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
)mlir";

std::string errorOf(llvm::Expected<CompiledModule> compiled) {
  return compiled ? std::string("<no error>")
                  : llvm::toString(compiled.takeError());
}

TEST(Compile, PtxAndCubinForBothChips) {
  for (auto [chip, arch] :
       {std::pair{Chip::sm_80, "sm_80"}, std::pair{Chip::sm_90a, "sm_90a"}}) {
    CompileOptions options;
    options.chip = chip;
    options.linkArch = arch;
    llvm::Expected<CompiledModule> compiled =
        compileModule(kScaleKernel, options);
    ASSERT_TRUE(static_cast<bool>(compiled))
        << llvm::toString(compiled.takeError());
    EXPECT_NE(compiled->ptx.find(std::string(".target ") + arch),
              std::string::npos);
    EXPECT_NE(compiled->ptx.find(".version 9.0"), std::string::npos);
    ASSERT_GT(compiled->cubin.size(), 4u);
    EXPECT_EQ(compiled->cubin.substr(0, 4), "\x7f"
                                            "ELF");
    EXPECT_NE(compiled->linkLog.find("0 bytes spill stores"), std::string::npos)
        << compiled->linkLog;
    ASSERT_EQ(compiled->kernelNames.size(), 1u);
    EXPECT_EQ(compiled->kernelNames.front(), "scale");
    // A kernel written by hand has no launch contract.
    EXPECT_TRUE(compiled->contracts.empty());
  }
}

TEST(Compile, DumpsEveryStage) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(fs::createUniqueDirectory("fmha-dump-test", dir));
  CompileOptions options;
  options.linkArch = "sm_90a";
  options.dumpDirectory = dir.str().str();
  ASSERT_TRUE(static_cast<bool>(compileModule(kScaleKernel, options)));
  for (const char *name :
       {"00-input.mlir", "01-fmha-materialize-tiles.mlir", "kernel.ll",
        "kernel.opt.ll", "kernel.ptx", "kernel.cubin", "nvjitlink.log"}) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    EXPECT_TRUE(fs::exists(path)) << name;
  }
  fs::remove_directories(dir);
}

TEST(Compile, ParseErrorsCarryTheDiagnostic) {
  CompileOptions options;
  options.sourceName = "broken.mlir";
  EXPECT_EQ(errorOf(compileModule("func.func @f(", options)),
            "cannot parse the MLIR source:\nbroken.mlir:1:13: error: expected "
            "non-function type\nfunc.func @f(\n            ^\n");
}

TEST(Compile, InvalidSpecIsAnErrorWithTheVerifiersWords) {
  KernelSpec spec;
  spec.headDim = 76;
  std::string error = errorOf(compileKernelSpec(spec, {}));
  EXPECT_EQ(error.rfind("invalid kernel spec (attention bf16 d76):\n", 0), 0u)
      << error;
  EXPECT_NE(error.find("head dim must be a multiple of 8 from 32 to 256, "
                       "got 76"),
            std::string::npos)
      << error;
}

// Every field a kernel is specialized on is in the spec's key.
TEST(Compile, SpecKeysTellSpecsApart) {
  std::vector<KernelSpec> specs(13);
  specs[1].elementType = ElementType::F16;
  specs[2].headDim = 64;
  specs[3].causal = true;
  specs[4].withLse = true;
  specs[5].window = std::array<int64_t, 2>{128, 0};
  specs[6].scale = 0.125f;
  specs[7].scale = std::nextafter(0.125f, 1.0f);
  specs[8].attentionTile = AttentionTiling{Chip::sm_90a, 128, 128, 12, 2};
  specs[9].softcap = 30.0f;
  specs[10].softcap = 50.0f;
  specs[11].withSinks = true;
  specs[12].valueHeadDim = 64;
  std::set<std::string> keys;
  for (const KernelSpec &spec : specs)
    EXPECT_TRUE(keys.insert(spec.getKey()).second) << spec.getKey();
  KernelSpec resample;
  resample.kind = OpKind::Resample;
  resample.streamFeatures = {6, 32};
  KernelSpec other = resample;
  other.streamFeatures = {32, 6};
  EXPECT_NE(resample.getKey(), other.getKey());
  other = resample;
  other.kind = OpKind::CheckSorted;
  EXPECT_NE(resample.getKey(), other.getKey());
  EXPECT_EQ(resample.getKey(), "resample bf16 linear streams 6 32");
  // A value head dim equal to headDim is no value head dim: one kernel.
  KernelSpec same;
  same.valueHeadDim = same.headDim;
  EXPECT_EQ(same.getKey(), specs[0].getKey());
  EXPECT_EQ(specs[12].getKey(), "attention bf16 d128 dv64");
}

TEST(Compile, TileForAnotherChipIsAnErrorNamingBoth) {
  KernelSpec spec;
  spec.headDim = 64;
  spec.attentionTile = AttentionTiling{Chip::sm_80, 128, 64, 4, 1};
  CompileOptions options;
  options.chip = Chip::sm_90a;
  std::string error = errorOf(compileKernelSpec(spec, options));
  EXPECT_NE(error.find("lowering to NVVM for sm_90a failed"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("tile configuration is for sm_80 but the target chip "
                       "is sm_90a"),
            std::string::npos)
      << error;
}

// Every head dim and dtype compiles for both chips, with each chip's MMA.
TEST(Compile, AttentionSpecCompilesForEveryChipAndHeadDim) {
  for (Chip chip : {Chip::sm_80, Chip::sm_90a})
    for (ElementType type : {ElementType::BF16, ElementType::F16})
      for (unsigned headDim : {64u, 128u, 256u}) {
        KernelSpec spec;
        spec.elementType = type;
        spec.headDim = headDim;
        spec.causal = headDim == 128;
        spec.withLse = true;
        spec.window = {{64, headDim == 128 ? 0 : 16}};
        CompileOptions options;
        options.chip = chip;
        llvm::Expected<CompiledModule> compiled =
            compileKernelSpec(spec, options);
        ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
        EXPECT_NE(compiled->ptx.find(".visible .entry attention("),
                  std::string::npos);
        const char *mma = chip == Chip::sm_80
                              ? "mma.sync.aligned.m16n8k16.row.col.f32"
                              : "wgmma.mma_async.sync.aligned.m64n";
        EXPECT_NE(compiled->ptx.find(mma), std::string::npos)
            << stringifyChip(chip).str() << " d" << headDim;
      }
}

// v's head dim apart from q's (DeepSeek's 192/128): v and o take it, and
// the kernel asks for the shared memory of both tiles' widths.
TEST(Compile, ValueHeadDimSpecCompilesForBothChips) {
  for (Chip chip : {Chip::sm_80, Chip::sm_90a}) {
    KernelSpec spec;
    spec.headDim = 192;
    spec.valueHeadDim = 128;
    spec.causal = true;
    EXPECT_NE(spec.toMLIR().find("v(%arg2 : memref<?x?x?x128xbf16"),
              std::string::npos)
        << spec.toMLIR();
    CompileOptions options;
    options.chip = chip;
    llvm::Expected<CompiledModule> compiled = compileKernelSpec(spec, options);
    ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
    AttentionTiling tiling =
        getDefaultAttentionTiling(chip, spec.getHeadDims(), spec.causal);
    EXPECT_EQ(compiled->contracts.at("attention").sharedBytes,
              getAttentionSharedLayout(tiling, {192, 128}, 2).totalBytes)
        << stringifyChip(chip).str();
  }
}

/// Compile options for the chip of \p spec's tile, if it has one.
CompileOptions getOptionsForTile(const KernelSpec &spec) {
  CompileOptions options;
  if (spec.attentionTile)
    options.chip = spec.attentionTile->chip;
  if (spec.resampleTile)
    options.chip = spec.resampleTile->chip;
  return options;
}

/// The launch contract of \p spec's kernel, as compileKernelSpec hands it
/// out.
LaunchContract compileContract(const KernelSpec &spec) {
  llvm::Expected<CompiledModule> compiled =
      compileKernelSpec(spec, getOptionsForTile(spec));
  if (!compiled) {
    ADD_FAILURE() << llvm::toString(compiled.takeError());
    return {};
  }
  auto found = compiled->contracts.find(spec.getKernelName().str());
  if (found == compiled->contracts.end()) {
    ADD_FAILURE() << "no contract for " << spec.getKernelName().str();
    return {};
  }
  return found->second;
}

/// The grid of \p contract for attention operands of these sizes.
std::array<unsigned, 3> attentionGrid(const LaunchContract &contract,
                                      int64_t batch, int64_t heads,
                                      int64_t seq, int64_t headDim,
                                      unsigned residentCtas = 0) {
  llvm::SmallVector<int64_t> tensor = {batch, heads, seq, headDim};
  llvm::Expected<std::array<unsigned, 3>> grid = contract.computeGrid(
      {tensor, tensor, tensor, tensor}, residentCtas);
  if (!grid) {
    ADD_FAILURE() << llvm::toString(grid.takeError());
    return {};
  }
  return *grid;
}

TEST(Contract, AttentionSm80) {
  KernelSpec spec;
  spec.attentionTile = AttentionTiling{Chip::sm_80, 128, 64, 4, 1};
  LaunchContract contract = compileContract(spec);
  EXPECT_EQ(contract.operands,
            (std::vector<std::string>{"q", "k", "v", "o"}));
  EXPECT_EQ(contract.threads, 128u);
  // Q, K and V tiles, and one held row sum per thread (4 of its 4 rows).
  EXPECT_EQ(contract.sharedBytes, (128u + 2 * 64) * 128 * 2 + 4 * 128);
  EXPECT_FALSE(contract.persistent);
  EXPECT_EQ(contract.getLeadingTensorMaps(), 0u);
  EXPECT_EQ(attentionGrid(contract, 100000, 16, 1000, 128),
            (std::array<unsigned, 3>{8, 16, 65535}));
}

TEST(Contract, AttentionSm90) {
  // 3 consumer warpgroups: 512 threads; two Q buffers, two stages of K and
  // V and O's staging buffer (AttentionSharedLayout), plus the alignment
  // slack and the mbarriers.
  KernelSpec spec;
  spec.headDim = 64;
  spec.attentionTile = AttentionTiling{Chip::sm_90a, 192, 128, 16, 2};
  LaunchContract contract = compileContract(spec);
  EXPECT_EQ(contract.threads, 512u);
  EXPECT_EQ(contract.sharedBytes, (2 * 192u + 2 * 2 * 128 + 192) * 64 * 2 +
                                      1024 + 8 * (2 * 2 + 4 * 2));
  EXPECT_TRUE(contract.persistent);
  // The maps of q, k and v first: rows x 64 boxes, 128-byte swizzle.
  ASSERT_EQ(contract.getLeadingTensorMaps(), 3u);
  const uint32_t rows[] = {192, 128, 128};
  for (unsigned index = 0; index < 3; ++index) {
    const KernelParameter &map = contract.parameters[index];
    EXPECT_EQ(map.operand, index);
    EXPECT_EQ(map.box, (llvm::SmallVector<uint32_t, 4>{rows[index], 64u}));
    EXPECT_EQ(map.swizzleBytes, 128u);
    EXPECT_EQ(map.element, TensorMapElement::BF16);
  }
  // One CTA per row block of each (batch, head), or fewer when persistent.
  EXPECT_EQ(attentionGrid(contract, 3, 32, 1000, 64),
            (std::array<unsigned, 3>{6 * 32 * 3, 1, 1}));
  EXPECT_EQ(attentionGrid(contract, 3, 32, 1000, 64, 132),
            (std::array<unsigned, 3>{132, 1, 1}));
  EXPECT_EQ(attentionGrid(contract, 1, 2, 100, 64, 132),
            (std::array<unsigned, 3>{2, 1, 1}));
  // Batches past the grid's y and z limits need no clamp on x.
  EXPECT_EQ(attentionGrid(contract, 100000, 1, 64, 64)[0], 100000u);

  // Causal pairs: 6 row blocks make 3 units, 7 make 4.
  spec.causal = true;
  LaunchContract causal = compileContract(spec);
  EXPECT_EQ(attentionGrid(causal, 3, 32, 1000, 64)[0], 3u * 32 * 3);
  EXPECT_EQ(attentionGrid(causal, 1, 1, 7 * 192, 64)[0], 4u);
}

TEST(Contract, ResampleGridCoversEveryTargetOfEveryRow) {
  KernelSpec spec;
  spec.kind = OpKind::Resample;
  spec.streamFeatures = {6};
  spec.resampleTile = ResampleTiling{Chip::sm_80, 64, 256};
  LaunchContract contract = compileContract(spec);
  EXPECT_EQ(contract.operands,
            (std::vector<std::string>{"times0", "values0", "targets", "out"}));
  EXPECT_EQ(contract.threads, 256u);
  auto grid = [&](int64_t batch, int64_t targets) {
    llvm::SmallVector<int64_t> times = {batch, 10}, values = {batch, 10, 6},
                               target = {batch, targets},
                               out = {batch, targets, 6};
    llvm::Expected<std::array<unsigned, 3>> extents =
        contract.computeGrid({times, values, target, out}, 0);
    EXPECT_TRUE(static_cast<bool>(extents));
    return extents ? *extents : std::array<unsigned, 3>{};
  };
  EXPECT_EQ(grid(7, 129), (std::array<unsigned, 3>{3, 7, 1}));
  // Past CUDA's grid y limit, the kernel strides over rows.
  EXPECT_EQ(grid(100000, 10)[1], 65535u);
}

TEST(Contract, CheckSortedOneCtaPerRow) {
  KernelSpec spec;
  spec.kind = OpKind::CheckSorted;
  spec.streamFeatures = {6, 32};
  spec.withLengths = true;
  LaunchContract contract = compileContract(spec);
  EXPECT_EQ(contract.operands,
            (std::vector<std::string>{"times0", "times1", "lengths0",
                                      "lengths1", "first"}));
  EXPECT_EQ(contract.threads, kCheckSortedThreads);
  llvm::SmallVector<int64_t> times = {100000, 5}, lengths = {100000},
                             first = {2};
  llvm::Expected<std::array<unsigned, 3>> grid =
      contract.computeGrid({times, times, lengths, lengths, first}, 0);
  ASSERT_TRUE(static_cast<bool>(grid));
  EXPECT_EQ(*grid, (std::array<unsigned, 3>{65535, 1, 1}));
}

/// The error of checkAttentionTensors, or "" when it passes.
std::string checkError(const KernelSpec &spec, const AttentionTensors &t) {
  llvm::Error err = checkAttentionTensors(spec, t);
  return err ? llvm::toString(std::move(err)) : "";
}

TEST(AttentionTensors, ChecksNameTheOffendingValue) {
  KernelSpec spec;
  spec.headDim = 64;
  spec.withLse = true;
  AttentionTensors t;
  // Fake device addresses: only their alignment is looked at.
  auto at = [](uintptr_t address) { return reinterpret_cast<void *>(address); };
  t.q = at(0x10000);
  t.k = at(0x20000);
  t.v = at(0x30000);
  t.o = at(0x40000);
  t.lse = static_cast<float *>(at(0x50000));
  t.batch = 2;
  t.queryHeads = 8;
  t.kvHeads = 2;
  t.querySeq = 100;
  t.keySeq = 33;
  t.setDenseStrides(spec.headDim);
  EXPECT_EQ(t.qStrides, (std::array<int64_t, 3>{8 * 100 * 64, 100 * 64, 64}));
  EXPECT_EQ(t.vStrides, (std::array<int64_t, 3>{2 * 33 * 64, 33 * 64, 64}));
  EXPECT_EQ(t.lseStrides, (std::array<int64_t, 3>{800, 100, 1}));
  EXPECT_EQ(checkError(spec, t), "");
  // An empty batch is nothing to do, not an error.
  AttentionTensors empty = t;
  empty.batch = 0;
  EXPECT_EQ(checkError(spec, empty), "");

  auto expectError = [&](const AttentionTensors &bad, const KernelSpec &s,
                         llvm::StringRef expected) {
    std::string error = checkError(s, bad);
    EXPECT_NE(error.find(expected.str()), std::string::npos) << error;
  };
  AttentionTensors bad = t;
  bad.kvHeads = 3;
  expectError(bad, spec, "queryHeads (Hq) 8 and kvHeads (Hkv) 3: expected "
                         "both at least 1 and Hq % Hkv == 0");
  bad = t;
  bad.keySeq = 0;
  expectError(bad, spec, "keySeq (Sk) is 0, expected 1 to 2147483647");
  bad = t;
  bad.o = at(0x40008);
  expectError(bad, spec, "o is at 0x40008, expected a 16-byte aligned address");
  bad = t;
  bad.kStrides[2] = 68;
  expectError(bad, spec,
              "k's row stride is 68 elements, expected a non-negative "
              "multiple of 8");
  bad = t;
  bad.lse = nullptr;
  expectError(bad, spec, "the spec has an LSE output but no lse tensor");
  KernelSpec noLse = spec;
  noLse.withLse = false;
  expectError(t, noLse, "an lse tensor is given but the spec has no LSE");
  KernelSpec f32 = spec;
  f32.elementType = ElementType::F32;
  expectError(t, f32, "q, k, v and o are f16 or bf16, got f32");
  KernelSpec resample = spec;
  resample.kind = OpKind::Resample;
  expectError(t, resample, "not an attention spec");
}

TEST(ResampleTensors, ChecksNameTheOffendingValue) {
  KernelSpec spec;
  spec.kind = OpKind::Resample;
  spec.streamFeatures = {6, 32};
  spec.withLengths = true;
  auto at = [](uintptr_t address) { return reinterpret_cast<void *>(address); };
  auto times = [&](uintptr_t address) {
    return static_cast<const float *>(at(address));
  };
  auto lengths = [&](uintptr_t address) {
    return static_cast<const int32_t *>(at(address));
  };
  ResampleTensors t;
  t.streams = {{times(0x1000), at(0x2000), lengths(0x3000), 400},
               {times(0x4000), at(0x5000), lengths(0x6000), 100}};
  t.targets = times(0x7000);
  t.out = at(0x8000);
  t.batch = 5;
  t.targetCount = 60;
  std::string error;
  auto check = [&](const KernelSpec &s, const ResampleTensors &tensors) {
    llvm::Error err = checkResampleTensors(s, tensors);
    return err ? llvm::toString(std::move(err)) : std::string();
  };
  EXPECT_EQ(check(spec, t), "");

  ResampleTensors bad = t;
  bad.streams.pop_back();
  EXPECT_EQ(check(spec, bad), "resample: 1 streams given, the spec has 2");
  bad = t;
  bad.streams[1].samples = 0;
  EXPECT_EQ(check(spec, bad),
            "resample: stream 1 has 0 samples, expected at least 1");
  bad = t;
  bad.streams[0].lengths = nullptr;
  EXPECT_EQ(check(spec, bad), "resample: stream 0: the spec has lengths but "
                              "the stream has none");
  bad = t;
  bad.streams[1].values = at(0x5004);
  EXPECT_EQ(check(spec, bad), "resample: stream 1's values are at 0x5004, "
                              "expected a 16-byte aligned address");
  bad = t;
  bad.targetCount = 0;
  EXPECT_EQ(check(spec, bad),
            "resample: targetCount (T) is 0, expected at least 1");
  // check_sorted reads times and lengths only.
  KernelSpec sorted = spec;
  sorted.kind = OpKind::CheckSorted;
  ResampleTensors timesOnly = t;
  timesOnly.targets = nullptr;
  timesOnly.out = nullptr;
  timesOnly.targetCount = 0;
  for (ResampleStream &stream : timesOnly.streams)
    stream.values = nullptr;
  EXPECT_EQ(check(sorted, timesOnly), "");
  KernelSpec attention;
  EXPECT_EQ(check(attention, t),
            "resample: the kernel spec is not a resample or check_sorted spec");
}

TEST(Compile, ArchMismatchCarriesNvJitLinksLog) {
  CompileOptions options;
  options.chip = Chip::sm_90a;
  options.linkArch = "sm_80";
  std::string error = errorOf(compileModule(kScaleKernel, options));
  EXPECT_NE(error.find("failed linking PTX for sm_80"), std::string::npos)
      << error;
  EXPECT_NE(error.find("NVJITLINK_ERROR_PTX_COMPILE"), std::string::npos)
      << error;
  EXPECT_NE(error.find("SM version specified by .target is higher"),
            std::string::npos)
      << error;
}

TEST(Compile, NoGpuModuleIsAnError) {
  EXPECT_EQ(errorOf(compileModule("func.func @f() { return }", {})),
            "expected exactly one gpu.module after lowering, found 0");
}

// Every spec the JIT can be asked for is valid IR that verifies and
// compiles to a kernel named after the op.
TEST(KernelSpec, GeneratedSourceVerifiesAndResampleCompiles) {
  std::vector<KernelSpec> specs(7);
  specs[0].causal = true;
  specs[0].withLse = true;
  specs[0].window = std::array<int64_t, 2>{128, 0};
  specs[0].scale = 0.125f;
  specs[1].headDim = 256;
  specs[1].elementType = ElementType::F16;
  specs[1].attentionTile = AttentionTiling{Chip::sm_90a, 128, 80, 12, 2};
  specs[2].kind = OpKind::Resample;
  specs[2].streamFeatures = {6, 32};
  specs[2].withLengths = true;
  specs[2].mode = ResampleMode::previous;
  specs[3].kind = OpKind::Resample;
  specs[3].elementType = ElementType::F32;
  specs[3].streamFeatures = {7};
  specs[3].resampleTile = ResampleTiling{Chip::sm_90a, 32, 128};
  specs[4].kind = OpKind::CheckSorted;
  specs[4].streamFeatures = {6, 32};
  specs[4].withLengths = true;
  // Split-KV decode's two kernels.
  specs[5].splitKeys = specs[5].withLse = true;
  specs[6].kind = OpKind::Merge;
  specs[6].elementType = ElementType::F32;
  specs[6].headDim = 40;
  specs[6].withLse = true;
  for (const KernelSpec &spec : specs) {
    CompileOptions options = getOptionsForTile(spec);
    llvm::Expected<CompiledModule> compiled = compileKernelSpec(spec, options);
    ASSERT_TRUE(static_cast<bool>(compiled))
        << spec.toMLIR() << "\n"
        << llvm::toString(compiled.takeError());
    // The built op is the op its text reads back as: the same kernel.
    llvm::Expected<CompiledModule> fromText =
        compileModule(spec.toMLIR(), options);
    ASSERT_TRUE(static_cast<bool>(fromText))
        << llvm::toString(fromText.takeError());
    EXPECT_EQ(compiled->ptx, fromText->ptx) << spec.getKey();
    ASSERT_EQ(compiled->kernelNames.size(), 1u);
    EXPECT_EQ(compiled->kernelNames.front(), spec.getKernelName());
    // Every kernel of an fmha op comes with its launch contract.
    EXPECT_EQ(compiled->contracts.count(spec.getKernelName().str()), 1u);
  }
}

// A tensor map is one 128-byte parameter between memref descriptors.
TEST(KernelArguments, TensorMapIsOneParameter) {
  KernelArguments arguments;
  CUtensorMap map;
  for (size_t i = 0; i < sizeof(map); ++i)
    reinterpret_cast<unsigned char *>(&map)[i] = static_cast<unsigned char>(i);
  int data = 0;
  arguments.addTensorMap(map);
  arguments.addMemRef(&data, {4}, {1});
  void **slots = arguments.get();
  EXPECT_EQ(std::memcmp(slots[0], &map, sizeof(map)), 0);
  EXPECT_EQ(*static_cast<int64_t *>(slots[1]),
            static_cast<int64_t>(reinterpret_cast<uintptr_t>(&data)));
  EXPECT_EQ(*static_cast<int64_t *>(slots[4]), 4); // the size
}

TEST(KernelArguments, MemRefDescriptorsInOrder) {
  KernelArguments arguments;
  int data = 0;
  arguments.addMemRef(&data, {4, 5}, {5, 1});
  arguments.addMemRef(&data, {4}, {1});
  void **slots = arguments.get();
  auto at = [&](int i) { return *static_cast<int64_t *>(slots[i]); };
  int64_t address = static_cast<int64_t>(reinterpret_cast<uintptr_t>(&data));
  // allocated, aligned, offset, sizes..., strides...
  EXPECT_EQ(at(0), address);
  EXPECT_EQ(at(1), address);
  EXPECT_EQ(at(2), 0);
  EXPECT_EQ(at(3), 4);
  EXPECT_EQ(at(4), 5);
  EXPECT_EQ(at(5), 5);
  EXPECT_EQ(at(6), 1);
  EXPECT_EQ(at(7), address);
  EXPECT_EQ(at(9), 0);
  EXPECT_EQ(at(10), 4);
  EXPECT_EQ(at(11), 1);
}

} // namespace

// What precompile and fmha-seed compile for a spec: one kernel per tile a
// query length picks on the chip, for one query the non-causal kernel, and
// decode's split-KV kernel and merge.
TEST(KernelSpec, LaunchSpecsCoverEveryQueryLengthsKernel) {
  KernelSpec spec;
  spec.headDim = 64;
  spec.causal = true;
  KernelSpec nonCausal = spec;
  nonCausal.causal = false;
  // sm_90a's one query: a tile of its own (TileConfig's decode tile).
  KernelSpec decode = nonCausal;
  decode.attentionTile =
      getDefaultAttentionTiling(Chip::sm_90a, 64, /*causal=*/false, 1);
  ASSERT_NE(*decode.attentionTile,
            getDefaultAttentionTiling(Chip::sm_90a, 64, /*causal=*/false));
  KernelSpec split = decode;
  split.splitKeys = split.withLse = true;
  KernelSpec merge;
  merge.kind = OpKind::Merge;
  merge.headDim = 64;
  // A few queries (up to kDecodeTileQueryRows rows): decode's tile, causal.
  KernelSpec few = spec;
  few.attentionTile = decode.attentionTile;
  // One query: causal without a window is non-causal; sm_90a's causal d64
  // takes a tile of its own from 4k queries.
  std::vector<KernelSpec> specs = getLaunchSpecs(spec, Chip::sm_90a);
  ASSERT_EQ(specs.size(), 6u);
  EXPECT_EQ(specs[0].getKey(), decode.getKey());
  EXPECT_EQ(specs[1].getKey(), few.getKey());
  EXPECT_EQ(specs[2].getKey(), spec.getKey());
  EXPECT_TRUE(specs[3].attentionTile.has_value());
  EXPECT_EQ(specs[3].getKey(),
            getAttentionLaunchSpec(spec, Chip::sm_90a, 16384).getKey());
  EXPECT_EQ(specs[4].getKey(), split.getKey());
  EXPECT_EQ(specs[5].getKey(), merge.getKey());
  EXPECT_EQ(specs[5].getKey(), getMergeSpec(spec).getKey());
  EXPECT_EQ(getAttentionLaunchSpec(spec, Chip::sm_90a, 1).getKey(),
            decode.getKey());
  EXPECT_EQ(
      getAttentionLaunchSpec(spec, Chip::sm_90a, kDecodeTileQueryRows).getKey(),
      few.getKey());
  EXPECT_EQ(getAttentionLaunchSpec(spec, Chip::sm_90a, 100).getKey(),
            spec.getKey());
  EXPECT_EQ(getAttentionQueryLengthClasses(1),
            (llvm::SmallVector<int64_t, 4>{1, 2, kDecodeTileQueryRows + 1,
                                           kShortAttentionQueries + 1,
                                           kLongAttentionQueries}));
  EXPECT_EQ(getAttentionQueryLengthClasses(4),
            (llvm::SmallVector<int64_t, 4>{1, 2, 17, kShortAttentionQueries + 1,
                                           kLongAttentionQueries}));
  EXPECT_EQ(getAttentionQueryLengthClasses(64),
            (llvm::SmallVector<int64_t, 4>{1, 2, kShortAttentionQueries + 1,
                                           kLongAttentionQueries}));
  // One length: its kernel, and for one query the split-KV pair.
  specs = getLaunchSpecs(spec, Chip::sm_90a, 100);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].getKey(), spec.getKey());
  specs = getLaunchSpecs(spec, Chip::sm_90a, 1);
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].getKey(), decode.getKey());
  EXPECT_EQ(specs[1].getKey(), split.getKey());
  EXPECT_EQ(specs[2].getKey(), merge.getKey());
  // A window keeps a causal query causal.
  KernelSpec windowed = spec;
  windowed.window = {{16, 0}};
  windowed.attentionTile = decode.attentionTile;
  EXPECT_EQ(getAttentionLaunchSpec(windowed, Chip::sm_90a, 1).getKey(),
            windowed.getKey());
  // One tile for every length: the causal kernel, the one-query one, the
  // split one and the merge.
  EXPECT_EQ(getLaunchSpecs(spec, Chip::sm_80).size(), 4u);
  EXPECT_EQ(getLaunchSpecs(nonCausal, Chip::sm_80).size(), 3u);
  // With sinks too: the split kernel has them (split 0 adds them).
  KernelSpec sinks = nonCausal;
  sinks.withSinks = true;
  std::vector<KernelSpec> sinkSpecs = getLaunchSpecs(sinks, Chip::sm_80);
  ASSERT_EQ(sinkSpecs.size(), 3u);
  EXPECT_TRUE(sinkSpecs[1].splitKeys && sinkSpecs[1].withSinks);
  spec.headDim = 128;
  EXPECT_EQ(getLaunchSpecs(spec, Chip::sm_90a).size(), 5u);
  // A spec with a tile keeps it.
  spec.attentionTile = getDefaultAttentionTiling(Chip::sm_90a, 128, true);
  specs = getLaunchSpecs(spec, Chip::sm_90a);
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].attentionTile, spec.attentionTile);
  EXPECT_FALSE(specs[0].causal);
  KernelSpec resample;
  resample.kind = OpKind::Resample;
  resample.streamFeatures = {8};
  ASSERT_EQ(getLaunchSpecs(resample, Chip::sm_90a).size(), 1u);
  EXPECT_EQ(getLaunchSpecs(resample, Chip::sm_90a)[0].getKey(),
            resample.getKey());
}

// On a device with less shared memory than the chip (sm_80's kernels on a
// 99 KB sm_86 or sm_89 GPU), a launch whose default tile does not fit it
// names one that does, so its kernel is a spec of its own; where the
// chip's tile fits (or the device is not known), the spec is as before.
// The backward that runs by default (Python's autograd, fmha-seed): the
// one-pass kernel (a dq workspace) with sm_90a's kernels always; with
// sm_80's on an A100 or a Hopper GPU from head dim 64 at the head dims it
// takes, unless deterministic; elsewhere the deterministic kernels.
TEST(KernelSpec, DefaultBackwardTakesAWorkspaceWhereMeasuredFaster) {
  const ComputeCapability a100{8, 0}, hopper{9, 0};
  for (bool deterministic : {false, true}) {
    for (unsigned headDim : {40u, 64u, 128u, 192u, 256u})
      EXPECT_TRUE(isDefaultAttentionGradOnePass(Chip::sm_90a, hopper, headDim,
                                                deterministic));
    for (ComputeCapability device : {a100, hopper}) {
      for (unsigned headDim : {64u, 72u, 128u, 160u, 192u, 224u, 256u})
        EXPECT_EQ(isDefaultAttentionGradOnePass(Chip::sm_80, device, headDim,
                                                deterministic),
                  !deterministic)
            << device.arch() << " d" << headDim;
      for (unsigned headDim : {32u, 56u, 176u, 208u, 240u})
        EXPECT_FALSE(isDefaultAttentionGradOnePass(Chip::sm_80, device, headDim,
                                                   deterministic))
            << device.arch() << " d" << headDim;
    }
    // 99 KB GPUs, and GPUs where it was never measured.
    for (ComputeCapability device :
         {ComputeCapability{8, 6}, ComputeCapability{8, 9},
          ComputeCapability{10, 0}})
      EXPECT_FALSE(isDefaultAttentionGradOnePass(Chip::sm_80, device, 128,
                                                 deterministic))
          << device.arch();
  }
}

// The backward a launch runs with a dq workspace or without: the one-pass
// kernel with one (ordered where deterministic on sm_90a; on sm_80
// deterministic is the kernels without a workspace), else those.
TEST(KernelSpec, GradSpecFollowsTheWorkspace) {
  KernelSpec spec;
  spec.headDim = 128;
  for (Chip chip : {Chip::sm_80, Chip::sm_90a}) {
    KernelSpec anyOrder = getAttentionGradSpec(spec, chip, true, false);
    EXPECT_TRUE(anyOrder.withQueryGradAccumulator());
    EXPECT_FALSE(anyOrder.orderedQueryGrad);
    for (bool deterministic : {false, true})
      EXPECT_FALSE(getAttentionGradSpec(spec, chip, false, deterministic)
                       .withQueryGradAccumulator());
  }
  EXPECT_TRUE(
      getAttentionGradSpec(spec, Chip::sm_90a, true, true).orderedQueryGrad);
  EXPECT_FALSE(getAttentionGradSpec(spec, Chip::sm_80, true, true)
                   .withQueryGradAccumulator());
}

// getAttentionGradSlices' model on an H100's 132 SMs, at d128 (tiles of
// 128 columns: blocks of 128 keys and 64 queries).
TEST(KernelSpec, GradSlicesFillTheGpu) {
  AttentionGradBlocks d128 = getSm90aAttentionGradBlocks(128);
  EXPECT_EQ(d128.keys, 128);
  EXPECT_EQ(d128.queries, 64);
  EXPECT_EQ(getSm90aAttentionGradBlocks(64).queries, 128);
  EXPECT_EQ(getSm90aAttentionGradBlocks(192).keys, 64);
  // The causal order's sections: as many heads as 132 CTAs hold.
  EXPECT_EQ(getSm90aGradSectionHeads(64), 2);
  EXPECT_EQ(getSm90aGradSectionHeads(33), 4);
  EXPECT_EQ(getSm90aGradSectionHeads(200), 1);
  // MQA 4 x 4096 x 16:1 under a causal mask: 128 CTAs, the longest (key
  // block 0's) twice the average, in one wave. Slices let the SMs even
  // out: 2 of 8 heads (256 CTAs, the longest of each section first), and
  // in the ordered kernel's order (each head's key blocks from the last)
  // 8 of 2 heads (1024 CTAs).
  EXPECT_EQ(getAttentionGradSlices(4, 1, 16, 4096, 4096, 128, true, false, 132),
            2u);
  EXPECT_EQ(getAttentionGradSlices(4, 1, 16, 4096, 4096, 128, true, true, 132),
            8u);
  // Without the mask the 128 CTAs are one even wave already.
  EXPECT_EQ(
      getAttentionGradSlices(4, 1, 16, 4096, 4096, 128, false, false, 132), 1u);
  // 16 CTAs of 8 heads each: slices of one head fill the GPU.
  EXPECT_EQ(getAttentionGradSlices(2, 1, 8, 1024, 1024, 128, false, false, 132),
            8u);
  // GQA 64:8 at 8192 keys: 512 CTAs, four waves.
  EXPECT_EQ(getAttentionGradSlices(1, 8, 8, 8192, 8192, 128, true, false, 132),
            1u);
  // No groups, or nothing to time.
  EXPECT_EQ(getAttentionGradSlices(4, 16, 1, 4096, 4096, 128, true, false, 132),
            1u);
  EXPECT_EQ(getAttentionGradSlices(4, 1, 16, 4096, 4096, 128, true, false, 0),
            1u);

  KernelSpec spec;
  spec.headDim = 128;
  KernelSpec grad = getAttentionGradSpec(spec, Chip::sm_90a, true, false);
  EXPECT_TRUE(canSliceAttentionGradQueryHeads(grad, Chip::sm_90a));
  EXPECT_FALSE(canSliceAttentionGradQueryHeads(grad, Chip::sm_80));
  EXPECT_FALSE(canSliceAttentionGradQueryHeads(
      getAttentionGradSpec(spec, Chip::sm_90a, false, true), Chip::sm_90a));
  KernelSpec windowed = grad;
  windowed.window = std::array<int64_t, 2>{128, 0};
  EXPECT_FALSE(canSliceAttentionGradQueryHeads(windowed, Chip::sm_90a));
  KernelSpec sliced = grad;
  sliced.slicedQueryHeads = true;
  EXPECT_NE(sliced.getKey(), grad.getKey());
  EXPECT_EQ(sliced.getKernelNames().back(), "attention_grad_dkv_reduce");
  EXPECT_EQ(sliced.getKernelNames().size(), grad.getKernelNames().size() + 1);
}

TEST(KernelSpec, LaunchSpecFitsTheDevicesSharedMemory) {
  KernelSpec spec;
  spec.headDim = 256;
  KernelSpec fitted = getAttentionLaunchSpec(spec, Chip::sm_80, 4096, 1,
                                             kSm8xSharedBytesPerBlock);
  ASSERT_TRUE(fitted.attentionTile.has_value());
  EXPECT_EQ(*fitted.attentionTile,
            (AttentionTiling{Chip::sm_80, 64, 64, 4, 1}));
  EXPECT_NE(fitted.getKey(), spec.getKey());
  EXPECT_EQ(getAttentionLaunchSpec(spec, Chip::sm_80, 4096).getKey(),
            spec.getKey());
  EXPECT_EQ(
      getAttentionLaunchSpec(spec, Chip::sm_80, 4096, 1,
                             getChipLimits(Chip::sm_80).maxSharedBytesPerBlock)
          .getKey(),
      spec.getKey());
  // Every kernel a launch of it may compile there fits.
  for (const KernelSpec &launched : getLaunchSpecs(
           spec, Chip::sm_80, std::nullopt, 1, kSm8xSharedBytesPerBlock))
    if (launched.kind == OpKind::Attention)
      EXPECT_EQ(launched.attentionTile, fitted.attentionTile)
          << launched.getKey();
  KernelSpec d128 = spec;
  d128.headDim = 128;
  EXPECT_EQ(getAttentionLaunchSpec(d128, Chip::sm_80, 4096, 1,
                                   kSm8xSharedBytesPerBlock)
                .getKey(),
            d128.getKey());
}

// The backward's kernels on a 99 KB GPU: past head dim 128 the
// deterministic spec names the device's limit (its kernels tile to fit
// it: their own cache key), which compiles to kernels that fit; specs
// whose kernels already fit, the A100's, sm_90a's one-pass kernel and
// sm_80's past 128 (which has no such tiling) stay as they are.
TEST(KernelSpec, GradLaunchSpecFitsTheDevicesSharedMemory) {
  KernelSpec forward;
  forward.headDim = 256;
  forward.causal = true;
  KernelSpec spec = getAttentionGradSpec(forward);
  KernelSpec fitted =
      getAttentionGradLaunchSpec(spec, Chip::sm_80, kSm8xSharedBytesPerBlock);
  EXPECT_EQ(fitted.maxSharedBytes, kSm8xSharedBytesPerBlock);
  EXPECT_EQ(fitted.getKey(), spec.getKey() + " max_shared_bytes " +
                                 std::to_string(kSm8xSharedBytesPerBlock));
  EXPECT_EQ(getLaunchSpecs(spec, Chip::sm_80, std::nullopt, 1,
                           kSm8xSharedBytesPerBlock)
                .front()
                .getKey(),
            fitted.getKey());
  CompileOptions options;
  options.chip = Chip::sm_80;
  llvm::Expected<CompiledModule> compiled = compileKernelSpec(fitted, options);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  EXPECT_EQ(compiled->contracts.size(), fitted.getKernelNames().size());
  for (const auto &[name, contract] : compiled->contracts)
    EXPECT_LE(contract.sharedBytes, kSm8xSharedBytesPerBlock) << name;
  uint64_t a100 = getChipLimits(Chip::sm_80).maxSharedBytesPerBlock;
  for (const KernelSpec &unchanged :
       {getAttentionGradLaunchSpec(spec, Chip::sm_80, a100),
        getAttentionGradLaunchSpec(spec, Chip::sm_80, 0),
        getAttentionGradLaunchSpec(getAttentionGradSpec(forward, false),
                                   Chip::sm_80, kSm8xSharedBytesPerBlock),
        getAttentionGradLaunchSpec(getAttentionGradSpec(forward, true, true),
                                   Chip::sm_90a, kSm8xSharedBytesPerBlock)})
    EXPECT_EQ(unchanged.maxSharedBytes, 0u) << unchanged.getKey();
  // At head dim 128 the deterministic kernels fit; the one-pass kernel
  // takes 64-row tiles with one buffer.
  forward.headDim = 128;
  EXPECT_EQ(getAttentionGradLaunchSpec(getAttentionGradSpec(forward),
                                       Chip::sm_80, kSm8xSharedBytesPerBlock)
                .maxSharedBytes,
            0u);
  EXPECT_EQ(getAttentionGradLaunchSpec(getAttentionGradSpec(forward, false),
                                       Chip::sm_80, kSm8xSharedBytesPerBlock)
                .maxSharedBytes,
            kSm8xSharedBytesPerBlock);
}

// A few queries of a grouped-query launch pack a group's heads into a
// tile's rows where that fills the tiles better (FlashAttention-3's rule),
// and such a kernel splits its keys as decode does.
TEST(KernelSpec, GroupedQueriesPackWhereTheyFillTiles) {
  KernelSpec spec;
  spec.headDim = 128;
  spec.causal = true;
  EXPECT_TRUE(shouldPackQueryHeads(spec, 4, 4, 128));
  EXPECT_TRUE(shouldPackQueryHeads(spec, 16, 8, 128));
  // 77 rows fill 0.60 of 128, 308 fill 0.80 of 384, but in 3 tiles
  // against 4: not half.
  EXPECT_FALSE(shouldPackQueryHeads(spec, 77, 4, 128));
  EXPECT_TRUE(shouldPackQueryHeads(spec, 64, 4, 128));
  // 1000 rows fill 1024 about as well as 4000 fill 4096.
  EXPECT_FALSE(shouldPackQueryHeads(spec, 1000, 4, 128));
  EXPECT_FALSE(shouldPackQueryHeads(spec, 4, 1, 128));
  // One query folds the group's heads with a view instead, but not under a
  // window.
  EXPECT_FALSE(shouldPackQueryHeads(spec, 1, 4, 128));
  KernelSpec windowed = spec;
  windowed.window = {{64, 0}};
  EXPECT_TRUE(shouldPackQueryHeads(windowed, 1, 4, 128));
  EXPECT_TRUE(
      getAttentionLaunchSpec(windowed, Chip::sm_90a, 1, 4).packQueryHeads);
  // Packed sequences, by their longest: one query each packs too (no view
  // folds them), a long one does not.
  KernelSpec varlen = spec;
  varlen.withQueryOffsets = true;
  EXPECT_TRUE(shouldPackQueryHeads(varlen, 4, 4, 128));
  EXPECT_TRUE(shouldPackQueryHeads(varlen, 1, 8, 128));
  EXPECT_FALSE(shouldPackQueryHeads(varlen, 1000, 4, 128));
  EXPECT_TRUE(
      getAttentionLaunchSpec(varlen, Chip::sm_90a, 1, 4).packQueryHeads);
  EXPECT_FALSE(
      getAttentionLaunchSpec(varlen, Chip::sm_80, 1, 4).packQueryHeads);

  KernelSpec packed = getAttentionLaunchSpec(spec, Chip::sm_90a, 4, 4);
  EXPECT_TRUE(packed.packQueryHeads);
  EXPECT_TRUE(packed.causal);
  EXPECT_NE(packed.getKey().find(" pack_query_heads"), std::string::npos);
  EXPECT_NE(packed.toMLIR().find("pack_query_heads"), std::string::npos);
  EXPECT_FALSE(getAttentionLaunchSpec(spec, Chip::sm_90a, 4).packQueryHeads);
  EXPECT_TRUE(getAttentionLaunchSpec(spec, Chip::sm_80, 4, 4).packQueryHeads);

  // One length: the packed kernel, its split-KV kernel and the merge.
  std::vector<KernelSpec> specs = getLaunchSpecs(spec, Chip::sm_90a, 4, 4);
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].getKey(), packed.getKey());
  EXPECT_TRUE(specs[1].packQueryHeads && specs[1].splitKeys);
  EXPECT_EQ(specs[2].getKey(), getMergeSpec(spec).getKey());
  // Every length: the packed kernels of the few queries (decode's tile, 2
  // to 16 queries, which always pack) and of the middle class (whose longer
  // lengths fill their tiles unpacked, so it keeps that kernel too), each
  // with its split-KV kernel, beside the one query's and the long ones'.
  std::vector<KernelSpec> all = getLaunchSpecs(spec, Chip::sm_90a, {}, 4);
  std::vector<KernelSpec> ungrouped = getLaunchSpecs(spec, Chip::sm_90a);
  auto has = [&](const KernelSpec &wanted) {
    return llvm::any_of(all, [&](const KernelSpec &s) {
      return s.getKey() == wanted.getKey();
    });
  };
  KernelSpec fewUnpacked = packed;
  fewUnpacked.packQueryHeads = false;
  EXPECT_EQ(ungrouped[1].getKey(), fewUnpacked.getKey());
  EXPECT_FALSE(has(fewUnpacked));
  EXPECT_EQ(all.size(), ungrouped.size() + 3);
  EXPECT_TRUE(has(packed));
  for (const KernelSpec &s : ungrouped)
    if (s.getKey() != fewUnpacked.getKey())
      EXPECT_TRUE(has(s)) << s.getKey();
  KernelSpec packedSplit = packed;
  packedSplit.splitKeys = packedSplit.withLse = true;
  EXPECT_TRUE(has(packedSplit));
}

// Decode of packed sequences splits its keys on sm_90a (the sm_80 lowering
// refuses split_keys with query_offsets): the packed kernel, its split_keys
// kernel, and a merge of the sequences' rows only; both compile.
TEST(KernelSpec, PackedSequencesSplitTheirKeysOnSm90a) {
  KernelSpec varlen;
  varlen.headDim = 128;
  varlen.withQueryOffsets = true;
  std::vector<KernelSpec> specs = getLaunchSpecs(varlen, Chip::sm_90a, 1, 4);
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_TRUE(specs[0].packQueryHeads && !specs[0].splitKeys);
  // One query each: the decode tile, as for dense decode.
  EXPECT_EQ(specs[0].attentionTile,
            getDefaultAttentionTiling(Chip::sm_90a, 128, false, 1));
  EXPECT_TRUE(specs[1].packQueryHeads && specs[1].splitKeys &&
              specs[1].withQueryOffsets && specs[1].withLse);
  EXPECT_EQ(specs[2].kind, OpKind::Merge);
  EXPECT_TRUE(specs[2].withQueryOffsets);
  EXPECT_EQ(specs[2].getKey(), "merge_attention bf16 d128 query_offsets");
  EXPECT_NE(specs[2].getKey(), getMergeSpec(KernelSpec()).getKey());
  ASSERT_EQ(getLaunchSpecs(varlen, Chip::sm_80, 1, 4).size(), 1u);
  EXPECT_FALSE(getLaunchSpecs(varlen, Chip::sm_80, 1, 4)[0].splitKeys);
  CompileOptions options;
  options.chip = Chip::sm_90a;
  for (const KernelSpec &spec : {specs[1], specs[2]}) {
    llvm::Expected<CompiledModule> compiled = compileKernelSpec(spec, options);
    ASSERT_TRUE(static_cast<bool>(compiled))
        << spec.toMLIR() << "\n"
        << llvm::toString(compiled.takeError());
    const LaunchContract &contract =
        compiled->contracts.at(spec.getKernelName().str());
    EXPECT_EQ(contract.operands.back(), spec.kind == OpKind::Merge
                                            ? "query_offsets"
                                            : "max_query_length");
  }
  // The sm_80 lowering says why it refuses the pair.
  // (without its sm_90a tile, which sm_80 would refuse first).
  KernelSpec split = specs[1];
  split.packQueryHeads = false;
  split.attentionTile.reset();
  options.chip = Chip::sm_80;
  llvm::Expected<CompiledModule> refused = compileKernelSpec(split, options);
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_NE(llvm::toString(refused.takeError())
                .find("split_keys with query_offsets is sm_90a's"),
            std::string::npos);
}

// Split-KV only where the tiles leave SMs idle, and then no split is empty.
TEST(KernelSpec, KeySplitsFillTheSms) {
  // B = 64 x 8 KV heads of decode: 512 tiles fill 132 SMs.
  EXPECT_EQ(getKeySplits(512, 64, 132), 1u);
  // Four key blocks or fewer: not worth a merge.
  EXPECT_EQ(getKeySplits(8, 4, 132), 1u);
  // 64 tiles: two splits make 128 CTAs; 16 tiles: eight.
  EXPECT_EQ(getKeySplits(64, 64, 132), 2u);
  EXPECT_EQ(getKeySplits(16, 256, 132), 8u);
  // Batch 1, 8 KV heads, a 64k or 128k cache: 16 splits, 128 CTAs.
  EXPECT_EQ(getKeySplits(8, 512, 132), 16u);
  EXPECT_EQ(getKeySplits(8, 1024, 132), 16u);
  // 100 tiles on 132 SMs: a single wave leaves a quarter idle; 9 splits
  // make 7 waves of ninths (0.78 of the unsplit time).
  EXPECT_EQ(getKeySplits(100, 512, 132), 9u);
  for (int64_t blocks : {5, 9, 100, 3000})
    for (int64_t units : {1, 3, 8, 50}) {
      unsigned splits = getKeySplits(units, blocks, 132);
      ASSERT_GE(splits, 1u);
      ASSERT_LE(splits, std::min<int64_t>(128, blocks));
      int64_t perSplit = (blocks + splits - 1) / splits;
      EXPECT_LT((splits - 1) * perSplit, blocks)
          << units << " tiles, " << blocks << " blocks: an empty split";
    }
}

// Decode with GQA: a group's query heads become the rows of one head.
TEST(AttentionTensors, DecodeFoldsGroupedQueryHeadsIntoRows) {
  KernelSpec spec;
  spec.headDim = 128;
  spec.causal = true;
  spec.withLse = true;
  AttentionTensors t;
  t.batch = 2;
  t.queryHeads = 32;
  t.kvHeads = 8;
  t.querySeq = 1;
  t.keySeq = 100;
  t.setDenseStrides(spec.headDim);
  // BSHD q: the row stride is Hq * D, the head stride D.
  t.qStrides = {32 * 128, 128, 32 * 128};
  AttentionTensors folded = foldGroupedQueries(spec, t);
  EXPECT_EQ(folded.queryHeads, 8);
  EXPECT_EQ(folded.querySeq, 4);
  EXPECT_EQ(folded.kvHeads, 8);
  EXPECT_EQ(folded.keySeq, 100);
  // Query head 4 * g + i at row 0 is row i of head g.
  EXPECT_EQ(folded.qStrides, (std::array<int64_t, 3>{32 * 128, 4 * 128, 128}));
  EXPECT_EQ(folded.oStrides, (std::array<int64_t, 3>{32 * 128, 4 * 128, 128}));
  EXPECT_EQ(folded.lseStrides, (std::array<int64_t, 3>{32, 4, 1}));
  EXPECT_EQ(folded.kStrides, t.kStrides);
  // Sinks [Hq] fold to [Hkv, G]: row i of head g reads sinks[G g + i].
  EXPECT_EQ(folded.sinksStrides, (std::array<int64_t, 2>{4, 1}));
  // Not folded: more than one query, no GQA, a window.
  for (auto change : std::initializer_list<
           std::function<void(KernelSpec &, AttentionTensors &)>>{
           [](KernelSpec &, AttentionTensors &u) { u.querySeq = 2; },
           [](KernelSpec &, AttentionTensors &u) { u.kvHeads = 32; },
           [](KernelSpec &s, AttentionTensors &) { s.window = {{8, 0}}; }}) {
    KernelSpec s = spec;
    AttentionTensors u = t;
    change(s, u);
    AttentionTensors same = foldGroupedQueries(s, u);
    EXPECT_EQ(same.querySeq, u.querySeq);
    EXPECT_EQ(same.queryHeads, u.queryHeads);
    EXPECT_EQ(same.qStrides, u.qStrides);
  }
}

TEST(KernelSpec, CheckAttentionSpecNamesTheValue) {
  KernelSpec spec;
  EXPECT_FALSE(static_cast<bool>(checkAttentionSpec(spec)));
  spec.headDim = 96;
  EXPECT_FALSE(static_cast<bool>(checkAttentionSpec(spec)));
  spec.headDim = 72;
  EXPECT_FALSE(static_cast<bool>(checkAttentionSpec(spec)));
  spec.headDim = 76;
  llvm::Error err = checkAttentionSpec(spec);
  EXPECT_TRUE(err.isA<OperandError>());
  EXPECT_EQ(llvm::toString(std::move(err)),
            "attention: headDim is 76, expected a multiple of 8 from 32 to "
            "256");
  spec.headDim = 128;
  spec.softcap = -2.0f;
  EXPECT_EQ(llvm::toString(checkAttentionSpec(spec)),
            "attention: softcap is -2.000000e+00, expected a positive finite "
            "value (0 "
            "in the C API: none)");
  spec.softcap = 30.0f;
  EXPECT_FALSE(static_cast<bool>(checkAttentionSpec(spec)));
  spec.softcap.reset();
  spec.causal = true;
  spec.window = {{16, 4}};
  EXPECT_EQ(llvm::toString(checkAttentionSpec(spec)),
            "attention: window right is 4 with causal, expected 0 (a causal "
            "query sees no later key)");
  spec.window = {{-1, 0}};
  EXPECT_EQ(llvm::toString(checkAttentionSpec(spec)),
            "attention: window is [-1, 0], expected non-negative sizes");
  spec.window.reset();
  spec.headDim = 192;
  spec.valueHeadDim = 128;
  EXPECT_FALSE(static_cast<bool>(checkAttentionSpec(spec)));
  spec.valueHeadDim = 100;
  EXPECT_EQ(llvm::toString(checkAttentionSpec(spec)),
            "attention: valueHeadDim is 100, expected 0 (headDim's) or a "
            "multiple of 8 from 32 to 256");
}
