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

/// Options of `fmha-to-nvvm` and `fmha-to-ptx`.
struct FmhaPipelineOptions : public PassPipelineOptions<FmhaPipelineOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("target GPU architecture: sm_80 or sm_90a"),
      llvm::cl::init("sm_90a")};
  PassOptions::Option<std::string> ptxIsa{
      *this, "ptx-isa",
      llvm::cl::desc("PTX ISA such as 9.0 (default: what nvJitLink accepts)"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> dumpDir{
      *this, "dump-dir",
      llvm::cl::desc("directory that receives the LLVM IR and PTX stages"),
      llvm::cl::init("")};
};

/// fmha ops -> tiles materialized for the chip -> gpu kernels over nvgpu ->
/// gpu.module in the LLVM and NVVM dialects. Host code is left alone.
void buildFmhaToNVVMPipeline(OpPassManager &pm,
                             const FmhaPipelineOptions &options);

/// `fmha-to-nvvm`, then each gpu.module to a gpu.binary holding PTX.
void buildFmhaToPTXPipeline(OpPassManager &pm,
                            const FmhaPipelineOptions &options);

/// Registers `--fmha-to-nvvm` and `--fmha-to-ptx`.
void registerFmhaPipelines();

} // namespace fmha
} // namespace mlir

#endif // FMHA_PIPELINES_PIPELINES_H
