//===- fmha-runner.cu - check and time fmha kernels on the GPU ------------===//
//
// Part of FlashCore.
//
//   fmha-runner attention [--batch= --heads= --kv-heads= --seq-q= --seq-k=
//       --head-dim= --dtype=bf16|f16 --causal --window=L,R --layout=bhsd|bshd
//       --lse --scale=] [--candidate=ref|broken-mask|broken-tail|jit|aot]
//       [--oracle=ref|cpu] [--seed=N] [--time] [--no-check]
//   fmha-runner resample [--batch= --targets= --samples=S0,S1 --features=D0,D1
//       --dtype=f32|f16|bf16 --mode=linear|nearest|previous --lengths]
//       [--candidate=ref|broken-tail|jit|aot] [--oracle=ref|cpu] [--seed=N]
//       [--time]
//   fmha-runner ceilings [--copy-mib=1024 --gemm=8192]
//
// attention --time prints the median of single launches ("time:") and of
// back-to-back launches ("back-to-back time:", what a framework's loop
// gets from a chip at its power cap).
//
// Exit status: 0 pass, 1 mismatch (or NaN, or an unwritten element),
// 2 usage or CUDA error, 77 no GPU.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "Harness.h"

#include <cstdio>
#include <string>

using namespace fmha_harness;

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fmha-runner attention|resample|ceilings "
                         "[--options]\n");
    return kUsageOrCudaError;
  }
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "fmha-runner: skipped: no CUDA device (%s)\n",
                 err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    return kNoGpu;
  }
  Options options;
  std::string error;
  if (!options.parse(argc, argv, 2, error)) {
    std::fprintf(stderr, "fmha-runner: %s\n", error.c_str());
    return kUsageOrCudaError;
  }
  std::string command = argv[1];
  if (command == "attention")
    return runAttentionCheck(options);
  if (command == "resample")
    return runResampleCheck(options);
  if (command == "ceilings")
    return runCeilings(options);
  std::fprintf(stderr, "fmha-runner: unknown command '%s' (attention, "
                       "resample, ceilings)\n",
               command.c_str());
  return kUsageOrCudaError;
}
