//===- Checks.h - the attention and resample checks -------------*- C++ -*-===//
//
// Part of FlashCore. Each check builds a problem from command-line options,
// makes seeded random inputs, runs an oracle (the CUDA reference, or a
// double-precision CPU implementation on small sizes) and a candidate kernel
// on a poisoned output, compares, and optionally times the candidate.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_HARNESS_CHECKS_H
#define FMHA_HARNESS_CHECKS_H

#include "FmhaRef.h"

#include <cstdint>
#include <map>
#include <string>

namespace fmha_harness {

/// Parsed `--key=value` and `--flag` options.
class Options {
public:
  /// Parses argv[first..]; returns false with a message on a malformed one.
  bool parse(int argc, char **argv, int first, std::string &error);
  bool has(const std::string &key) const { return values.count(key) != 0; }
  /// Whether `--key` was given; marks it used.
  bool flag(const std::string &key) const;
  std::string get(const std::string &key, const std::string &fallback) const;
  long long getInt(const std::string &key, long long fallback) const;
  /// Reports options nobody asked for (typos), after a check ran get/has.
  bool reportUnused() const;

private:
  std::map<std::string, std::string> values;
  mutable std::map<std::string, bool> used;
};

/// The options every check takes: which kernel runs (--candidate), what it
/// is compared with (--oracle=ref|cpu), --time and --no-check.
struct RunOptions {
  std::string candidate, oracle;
  bool time = false, check = true;
};
RunOptions parseRunOptions(const Options &options);

/// The seed: --seed, or a fresh one from the clock. Printed either way.
uint64_t chooseSeed(const Options &options);

/// A kernel under test, called like the reference it is checked against.
using AttentionLauncher = cudaError_t (*)(const fmhaRefAttentionArgs *,
                                          cudaStream_t);
using ResampleLauncher = cudaError_t (*)(const fmhaRefResampleArgs *,
                                         cudaStream_t);

/// The `jit` candidate: the kernel FlashCore's JIT generates for the
/// problem, in runners built with the JIT (fmha-runner-jit); nullptr in the
/// nvcc-only fmha-runner.
ResampleLauncher getJitResampleLauncher();
AttentionLauncher getJitAttentionLauncher();

/// A stream's first out-of-order timestamps: times[row, sample] is not at or
/// before times[row, sample + 1]; row -1 when the stream is sorted.
struct UnsortedPair {
  long long row = -1, sample = -1;
};

/// The `jit` candidate's checking mode: runs fmha.check_sorted over the
/// problem's streams (their times and lengths) and stores what it found for
/// each stream in \p first (host memory, one entry per stream). nullptr in
/// runners without the JIT.
using SortedCheck = cudaError_t (*)(const fmhaRefResampleArgs *,
                                    UnsortedPair *first, cudaStream_t);
SortedCheck getJitSortedCheck();

/// The `aot` candidate: the kernel for the problem among those fmha-aot
/// generated (FMHA_AOT_DIR), in fmha-runner-aot; nullptr in the others.
ResampleLauncher getAotResampleLauncher();
AttentionLauncher getAotAttentionLauncher();

/// The op's `window` attribute for the reference's window (-1: unbounded):
/// false when both sides are unbounded (no window); an unbounded side is
/// one longer than any sequence (fixed, so that one kernel serves every
/// length), and a causal query sees no later key.
inline bool getOpWindow(const fmhaRefAttentionArgs &a, long long window[2]) {
  if (a.windowLeft < 0 && a.windowRight < 0)
    return false;
  constexpr long long kUnbounded = 1LL << 30;
  window[0] = a.windowLeft < 0 ? kUnbounded : a.windowLeft;
  window[1] = a.causal ? 0 : a.windowRight < 0 ? kUnbounded : a.windowRight;
  return true;
}

/// Returns an ExitStatus.
int runAttentionCheck(const Options &options);
int runResampleCheck(const Options &options);
/// Measures the device-to-device copy bandwidth and a bf16 GEMM.
int runCeilings(const Options &options);

} // namespace fmha_harness

// Deliberately broken copies of the references (harness/broken/*.cu), which
// the harness must reject: proof that it catches wrong masks and unwritten
// elements.
extern "C" {
cudaError_t fmhaBrokenMaskAttention(const fmhaRefAttentionArgs *, cudaStream_t);
cudaError_t fmhaBrokenTailAttention(const fmhaRefAttentionArgs *, cudaStream_t);
cudaError_t fmhaBrokenTailResample(const fmhaRefResampleArgs *, cudaStream_t);
}

#endif // FMHA_HARNESS_CHECKS_H
