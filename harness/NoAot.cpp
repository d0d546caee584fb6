//===- NoAot.cpp - runners without fmha-aot's kernels ---------------------===//
//
// Part of FlashCore. fmha-runner and fmha-runner-jit have no `aot`
// candidate; fmha-runner-aot links AotCandidates.cpp instead.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"

fmha_harness::ResampleLauncher fmha_harness::getAotResampleLauncher() {
  return nullptr;
}

fmha_harness::AttentionLauncher fmha_harness::getAotAttentionLauncher() {
  return nullptr;
}
