//===- Pipelines.h - named fmha pipelines -----------------------*- C++ -*-===//
//
// Part of FlashCore. The pipelines fmha-opt exposes and the JIT runs.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_PIPELINES_PIPELINES_H
#define FMHA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir {
class OpPassManager;

namespace fmha {

/// Options of `fmha-to-ptx`.
struct FmhaToPTXOptions : public PassPipelineOptions<FmhaToPTXOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("target GPU architecture: sm_80 or sm_90a"),
      llvm::cl::init("sm_90a")};
};

/// fmha ops -> tiles materialized for the chip -> gpu kernels over nvgpu ->
/// NVVM -> PTX attached to each gpu.module as a `gpu.binary` (format isa).
void buildFmhaToPTXPipeline(OpPassManager &pm, const FmhaToPTXOptions &options);

/// Registers every named fmha pipeline (`--fmha-to-ptx`).
void registerFmhaPipelines();

} // namespace fmha
} // namespace mlir

#endif // FMHA_PIPELINES_PIPELINES_H
