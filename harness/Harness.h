//===- Harness.h - buffers, inputs, comparison and timing -------*- C++ -*-===//
//
// Part of FlashCore. The MLIR-free core of the on-GPU check and benchmark
// harness: device buffers, seeded random inputs quantized to the element
// type, poisoning, the comparison that decides pass or fail, and CUDA-event
// timing with inputs rotated out of L2. Builds with nvcc alone, here or on
// the GPU machine.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_HARNESS_HARNESS_H
#define FMHA_HARNESS_HARNESS_H

#include "FmhaRef.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace fmha_harness {

/// Exit statuses of the runner.
enum ExitStatus { kPass = 0, kMismatch = 1, kUsageOrCudaError = 2, kNoGpu = 77 };

/// Reports a CUDA error with the call that failed and exits.
void checkCuda(cudaError_t err, const char *what);
#define FMHA_CUDA(call) ::fmha_harness::checkCuda((call), #call)

size_t elementBytes(fmhaRefDType dtype);
const char *dtypeName(fmhaRefDType dtype);

/// Rounds \p x to \p dtype and back: the value a kernel actually reads.
float quantize(float x, fmhaRefDType dtype);
/// Encodes host floats as \p dtype bytes, and back.
std::vector<uint8_t> encode(const std::vector<float> &values, fmhaRefDType dtype);
std::vector<float> decode(const std::vector<uint8_t> &bytes, fmhaRefDType dtype);

/// A device allocation that frees itself.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  void *get() const { return pointer; }
  size_t size() const { return bytes; }
  void upload(const void *host, size_t count);
  void download(void *host, size_t count) const;
  /// Fills every byte with 0xff: NaN in f32, f16 and bf16, so an element a
  /// kernel never writes is caught.
  void poison();

private:
  void *pointer = nullptr;
  size_t bytes = 0;
};

/// Seeded generator; the seed is printed by the runner so that any failure
/// can be replayed.
class Random {
public:
  explicit Random(uint64_t seed) : engine(seed) {}
  float normal() { return normalDist(engine); }
  float uniform(float low, float high) {
    return std::uniform_real_distribution<float>(low, high)(engine);
  }
  int integer(int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(engine);
  }

private:
  std::mt19937_64 engine;
  std::normal_distribution<float> normalDist{0.0f, 1.0f};
};

/// Fills \p values with normal(0, 1) samples quantized to \p dtype, on all
/// cores: fixed chunks of 2^20 elements, each drawn by its own Random seeded
/// from (\p seed, \p stream, chunk), so the values depend on the seed and
/// the stream only, not on the thread count. One generator on one core drew
/// the 2.4 billion inputs of the 16x96x4096x128 attention row in about 70 s.
void fillNormal(std::vector<float> &values, uint64_t seed, uint64_t stream,
                fmhaRefDType dtype);

/// The result of comparing a kernel's output with the oracle's.
struct Comparison {
  size_t elements = 0;
  size_t nonFinite = 0; ///< NaN or inf where the oracle is finite: unwritten
                        ///< (poisoned) or broken
  size_t mismatchedInfinities = 0;
  double maxAbsError = 0;
  double maxReference = 0;
  /// Where the largest error is, and the two values there.
  size_t worstIndex = 0;
  double worstActual = 0, worstExpected = 0;
  /// maxAbsError / max |reference|: insensitive to the output's scale.
  double normalizedError() const {
    return maxReference > 0 ? maxAbsError / maxReference : maxAbsError;
  }
  double tolerance = 0;
  bool passed() const {
    return nonFinite == 0 && mismatchedInfinities == 0 &&
           normalizedError() <= tolerance;
  }
};

/// Compares \p actual with \p expected; infinities must match exactly.
Comparison compare(const std::vector<float> &actual,
                   const std::vector<float> &expected, double tolerance);

/// Prints one line: name, counts, errors, tolerance and PASS or FAIL.
void printComparison(const char *name, const Comparison &c);

/// The tolerance on normalized error for outputs stored as \p dtype: a few
/// units of its rounding error, since the oracle and the kernel round
/// differently ordered f32 sums.
double outputTolerance(fmhaRefDType dtype);

/// FMHA_DUMP_FIRST=N: how many leading elements of the inputs and outputs to
/// print, to see a layout bug's pattern (0 when unset or not a count).
size_t getDumpCount();

/// What the events around one timed launch include.
enum class Timing {
  /// Start, launch, stop on an idle stream: the host's launch cost is in
  /// the time (how torch's and Triton's benchmarks time a call).
  LaunchIncluded,
  /// The stream is held busy (holdDefaultStream) while start, launch and
  /// stop are queued behind it: the GPU's time alone, as nvbench's blocking
  /// kernel measures. Both matter for microsecond kernels.
  StreamHeld,
  /// Start, kBackToBackCalls launches, stop, the time divided by the count:
  /// a chip at its power cap runs the later launches at lower clocks, as a
  /// framework's loop does (bench.py's back_to_back_ms; docs/
  /// sm90-attention-notes.md, "Power-capped").
  BackToBack,
};

/// The launches between the events of one Timing::BackToBack run.
inline constexpr int kBackToBackCalls = 10;

/// Times \p launch (which receives the index of the input copy to use) with
/// CUDA events: warm-up, then the median of \p runs, in milliseconds.
template <typename Launch>
double timeMedianMs(Launch launch, int copies, int warmup = 5, int runs = 30,
                    Timing timing = Timing::LaunchIncluded);

/// Keeps the default stream's GPU busy for about \p microseconds (one
/// spinning thread), so that work the host queues meanwhile starts back to
/// back.
void holdDefaultStream(double microseconds);

/// Copies needed so that rotating through them leaves no input in L2.
int copiesToDefeatL2(size_t bytesPerCopy);

} // namespace fmha_harness

#include "Harness.inc"

#endif // FMHA_HARNESS_HARNESS_H
