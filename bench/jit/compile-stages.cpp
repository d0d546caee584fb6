//===- compile-stages.cpp - where a cold kernel compile's time goes -------===//
//
// Part of FlashCore. Compiles every attention kernel the JIT makes (sm_80
// and sm_90a; head dim 64, 128, 256; bf16 and f16; causal or not; sm_90a's
// long-query tile), the backward's modules (bf16, each head dim, causal or
// not, deterministic or adding dq into a workspace where the chip has that
// kernel) and the resample kernels (each mode, f32 and bf16, two streams
// with lengths) as the JIT does under the PTX compiler's load plan,
// to a whole-program cubin, and prints each compile's time by stage
// (CompileTimes): context and module, MLIR passes, LLVM to PTX, PTX to
// cubin. Needs no GPU. Usage: compile-stages [--filter=SUBSTRING]
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/TileConfig.h"
#include "fmha/JIT/Compile.h"
#include "fmha/JIT/KernelSpec.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

using namespace mlir::fmha;

static llvm::cl::opt<std::string>
    filter("filter", llvm::cl::desc("only kernels whose row contains this"),
           llvm::cl::init(""));

namespace {
struct Row {
  std::string name;
  Chip chip;
  KernelSpec spec;
};
} // namespace

static std::vector<Row> getRows() {
  std::vector<Row> rows;
  for (Chip chip : {Chip::sm_90a, Chip::sm_80})
    for (unsigned headDim : {64u, 128u, 256u})
      for (ElementType type : {ElementType::BF16, ElementType::F16})
        for (bool causal : {false, true}) {
          KernelSpec spec;
          spec.headDim = headDim;
          spec.elementType = type;
          spec.causal = causal;
          std::string name = llvm::formatv(
              "{0} attention d{1} {2}{3}", stringifyChip(chip), headDim,
              type == ElementType::BF16 ? "bf16" : "f16",
              causal ? " causal" : "");
          rows.push_back({name, chip, spec});
          AttentionTiling tiling =
              getDefaultAttentionTiling(chip, headDim, causal);
          AttentionTiling longTiling = getDefaultAttentionTiling(
              chip, headDim, causal, kLongAttentionQueries);
          if (longTiling != tiling) {
            spec.attentionTile = longTiling;
            rows.push_back({name + " long queries", chip, spec});
          }
        }
  for (Chip chip : {Chip::sm_90a, Chip::sm_80})
    for (unsigned headDim : {64u, 128u, 256u})
      for (bool deterministic : {false, true})
        for (bool causal : {false, true}) {
          if (!deterministic && chip == Chip::sm_80 && headDim == 256)
            continue;
          KernelSpec forward;
          forward.headDim = headDim;
          forward.causal = causal;
          rows.push_back(
              {llvm::formatv("{0} attention_grad d{1} bf16{2}{3}",
                             stringifyChip(chip), headDim,
                             causal ? " causal" : "",
                             deterministic ? " deterministic" : ""),
               chip, getAttentionGradSpec(forward, deterministic)});
        }
  for (ResampleMode mode : {ResampleMode::linear, ResampleMode::nearest,
                            ResampleMode::previous})
    for (ElementType type : {ElementType::F32, ElementType::BF16}) {
      KernelSpec spec;
      spec.kind = OpKind::Resample;
      spec.mode = mode;
      spec.elementType = type;
      spec.streamFeatures = {8, 32};
      spec.withLengths = true;
      rows.push_back({llvm::formatv("sm_90a resample {0} {1}",
                                    stringifyResampleMode(mode),
                                    type == ElementType::F32 ? "f32" : "bf16"),
                      Chip::sm_90a, spec});
    }
  return rows;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "where a cold kernel compile's time goes");
  llvm::outs() << "| kernel | setup | MLIR passes | LLVM to PTX | PTX to "
                  "cubin | total (s) |\n|---|---|---|---|---|---|\n";
  CompileTimes sum;
  for (const Row &row : getRows()) {
    if (!llvm::StringRef(row.name).contains(filter))
      continue;
    CompileOptions options;
    options.chip = row.chip;
    // The PTX compiler's plan: a whole-program cubin for the chip's own
    // arch (sm_80's PTX for an sm_80 device).
    options.linkArch = row.chip == Chip::sm_90a ? "sm_90a" : "sm_80";
    options.cubinCompiler = CubinCompiler::PtxCompiler;
    llvm::Expected<CompiledModule> compiled =
        compileKernelSpec(row.spec, options);
    if (!compiled) {
      llvm::errs() << row.name << ": " << llvm::toString(compiled.takeError())
                   << "\n";
      return 1;
    }
    const CompileTimes &t = compiled->times;
    llvm::outs() << llvm::formatv(
        "| {0} | {1:f2} | {2:f2} | {3:f2} | {4:f2} | {5:f2} |\n", row.name,
        t.setup, t.mlirPasses, t.llvmToPtx, t.ptxToCubin, t.total());
    sum.setup += t.setup;
    sum.mlirPasses += t.mlirPasses;
    sum.llvmToPtx += t.llvmToPtx;
    sum.ptxToCubin += t.ptxToCubin;
    llvm::outs().flush();
  }
  llvm::outs() << llvm::formatv(
      "| sum | {0:f2} | {1:f2} | {2:f2} | {3:f2} | {4:f2} |\n", sum.setup,
      sum.mlirPasses, sum.llvmToPtx, sum.ptxToCubin, sum.total());
  return 0;
}
