//===- NoJit.cpp - the nvcc-only runner has no JIT candidate --------------===//
//
// Part of FlashCore. fmha-runner builds without MLIR (on the GPU machine);
// fmha-runner-jit links JitCandidates.cpp instead.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"

fmha_harness::ResampleLauncher fmha_harness::getJitResampleLauncher() {
  return nullptr;
}

fmha_harness::AttentionLauncher fmha_harness::getJitAttentionLauncher() {
  return nullptr;
}

fmha_harness::SortedCheck fmha_harness::getJitSortedCheck() { return nullptr; }
