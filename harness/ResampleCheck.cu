//===- ResampleCheck.cu - checking and timing resample kernels ------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "Harness.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

namespace fmha_harness {
namespace {

struct StreamData {
  int samples = 0, features = 0;
  std::vector<float> times;  // [B, S], non-decreasing per row
  std::vector<float> values; // [B, S, D], quantized
  std::vector<int> lengths;  // [B], empty when not used
};

struct ResampleProblem {
  fmhaRefDType dtype = FMHA_REF_BF16;
  fmhaRefResampleMode mode = FMHA_REF_LINEAR;
  int batch = 1, targets = 1, totalFeatures = 0;
  bool withLengths = false;
  std::vector<StreamData> streams;
  std::vector<float> targetTimes; // [B, T], sorted per row

  /// Minimum traffic: every input read once, the output written once.
  double bytes() const {
    double total = double(batch) * targets * (4 + totalFeatures *
                                                      elementBytes(dtype));
    for (const StreamData &s : streams)
      total += double(batch) * s.samples *
                   (4 + s.features * elementBytes(dtype)) +
               (withLengths ? 4.0 * batch : 0.0);
    return total;
  }
};

std::vector<int> parseList(const std::string &text) {
  std::vector<int> values;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ','))
    values.push_back(std::atoi(item.c_str()));
  return values;
}

/// Sorted times with irregular gaps, some repeated (zero-width intervals).
void makeTimes(Random &random, float start, int count, float *out) {
  float t = start;
  for (int i = 0; i < count; ++i) {
    out[i] = t;
    if (random.integer(0, 9) != 0) // 1 in 10 gaps is zero
      t += random.uniform(0.05f, 1.5f);
  }
}

/// The double-precision oracle of the semantics documented in
/// kernels-ref/resample.cu.
void resampleOnCpu(const ResampleProblem &p, std::vector<float> &out) {
  out.assign(size_t(p.batch) * p.targets * p.totalFeatures, 0.0f);
  for (int b = 0; b < p.batch; ++b)
    for (int t = 0; t < p.targets; ++t) {
      double target = p.targetTimes[size_t(b) * p.targets + t];
      int offset = 0;
      for (const StreamData &s : p.streams) {
        int n = s.samples;
        if (!s.lengths.empty())
          n = std::min(std::max(s.lengths[b], 0), s.samples);
        const float *times = &s.times[size_t(b) * s.samples];
        const float *values = &s.values[size_t(b) * s.samples * s.features];
        float *row = &out[(size_t(b) * p.targets + t) * p.totalFeatures + offset];
        int count = int(std::upper_bound(times, times + n, float(target)) - times);
        for (int d = 0; d < s.features; ++d) {
          auto value = [&](int i) { return double(values[size_t(i) * s.features + d]); };
          double result;
          if (n == 0)
            result = 0;
          else if (count == 0)
            result = value(0);
          else if (count == n)
            result = value(n - 1);
          else {
            int i = count - 1;
            double t0 = times[i], t1 = times[i + 1];
            if (p.mode == FMHA_REF_PREVIOUS)
              result = value(i);
            else if (p.mode == FMHA_REF_NEAREST)
              result = target - t0 <= t1 - target ? value(i) : value(i + 1);
            else
              result = value(i) + (target - t0) / (t1 - t0) * (value(i + 1) - value(i));
          }
          row[d] = float(result);
        }
        offset += s.features;
      }
    }
}

/// One copy of every device buffer a launch reads and writes.
struct DeviceSet {
  std::vector<DeviceBuffer> times, values, lengths;
  DeviceBuffer targets, out;
};

fmhaRefResampleArgs makeArgs(const ResampleProblem &p, const DeviceSet &dev) {
  fmhaRefResampleArgs a;
  std::memset(&a, 0, sizeof(a));
  a.dtype = p.dtype;
  a.mode = p.mode;
  a.batch = p.batch;
  a.targets = p.targets;
  a.numStreams = int(p.streams.size());
  for (size_t i = 0; i < p.streams.size(); ++i) {
    const StreamData &s = p.streams[i];
    a.streams[i].times = static_cast<const float *>(dev.times[i].get());
    a.streams[i].timesStride = s.samples;
    a.streams[i].values = dev.values[i].get();
    a.streams[i].valuesStride[0] = (long long)s.samples * s.features;
    a.streams[i].valuesStride[1] = s.features;
    a.streams[i].lengths =
        p.withLengths ? static_cast<const int *>(dev.lengths[i].get())
                      : nullptr;
    a.streams[i].samples = s.samples;
    a.streams[i].features = s.features;
  }
  a.targetTimes = static_cast<const float *>(dev.targets.get());
  a.targetStride = p.targets;
  a.out = dev.out.get();
  a.outStride[0] = (long long)p.targets * p.totalFeatures;
  a.outStride[1] = p.totalFeatures;
  return a;
}

/// Uploads the problem's inputs into a fresh DeviceSet.
DeviceSet upload(const ResampleProblem &p) {
  DeviceSet dev;
  for (const StreamData &s : p.streams) {
    dev.times.emplace_back(s.times.size() * 4);
    dev.times.back().upload(s.times.data(), s.times.size() * 4);
    std::vector<uint8_t> bytes = encode(s.values, p.dtype);
    dev.values.emplace_back(bytes.size());
    dev.values.back().upload(bytes.data(), bytes.size());
    dev.lengths.emplace_back(s.lengths.size() * 4);
    if (!s.lengths.empty())
      dev.lengths.back().upload(s.lengths.data(), s.lengths.size() * 4);
  }
  dev.targets = DeviceBuffer(p.targetTimes.size() * 4);
  dev.targets.upload(p.targetTimes.data(), p.targetTimes.size() * 4);
  dev.out = DeviceBuffer(size_t(p.batch) * p.targets * p.totalFeatures *
                         elementBytes(p.dtype));
  return dev;
}

/// The checking mode: runs \p sortedCheck (fmha.check_sorted) on the
/// uploaded problem and prints what it found per stream; kMismatch unless
/// stream 0's first unsorted pair is \p expectedFirst (row -1: sorted) and
/// every other stream is sorted.
int runSortedCheck(const ResampleProblem &p, const DeviceSet &dev,
                   SortedCheck sortedCheck, UnsortedPair expectedFirst) {
  std::vector<UnsortedPair> first(p.streams.size());
  fmhaRefResampleArgs args = makeArgs(p, dev);
  FMHA_CUDA(sortedCheck(&args, first.data(), nullptr));
  bool asExpected = true;
  for (size_t s = 0; s < first.size(); ++s) {
    UnsortedPair expected = s == 0 ? expectedFirst : UnsortedPair{};
    if (first[s].row < 0) {
      std::printf("check-sorted: stream %zu: sorted\n", s);
    } else {
      const float *times =
          &p.streams[s].times[size_t(first[s].row) * p.streams[s].samples];
      std::printf("check-sorted: stream %zu: times not sorted: row %lld, "
                  "samples %lld and %lld (%g > %g)\n",
                  s, first[s].row, first[s].sample, first[s].sample + 1,
                  times[first[s].sample], times[first[s].sample + 1]);
    }
    if (first[s].row != expected.row || first[s].sample != expected.sample) {
      std::printf("check-sorted: FAIL: stream %zu expected %s (row %lld, "
                  "sample %lld)\n",
                  s, expected.row < 0 ? "sorted" : "unsorted", expected.row,
                  expected.sample);
      asExpected = false;
    }
  }
  if (!asExpected)
    return kMismatch;
  if (expectedFirst.row >= 0)
    std::printf("check-sorted: PASS (found the first unsorted pair)\n");
  return kPass;
}

ResampleLauncher launcherNamed(const std::string &name) {
  if (name == "ref")
    return fmhaRefResample;
  if (name == "broken-tail")
    return fmhaBrokenTailResample;
  if (name == "jit")
    return getJitResampleLauncher();
  if (name == "aot")
    return getAotResampleLauncher();
  return nullptr;
}

} // namespace

int runResampleCheck(const Options &opt) {
  ResampleProblem p;
  std::string dtype = opt.get("dtype", "bf16");
  p.dtype = dtype == "f32"   ? FMHA_REF_F32
            : dtype == "f16" ? FMHA_REF_F16
                             : FMHA_REF_BF16;
  std::string mode = opt.get("mode", "linear");
  p.mode = mode == "nearest"    ? FMHA_REF_NEAREST
           : mode == "previous" ? FMHA_REF_PREVIOUS
                                : FMHA_REF_LINEAR;
  if ((dtype != "f32" && dtype != "f16" && dtype != "bf16") ||
      (mode != "linear" && mode != "nearest" && mode != "previous")) {
    std::fprintf(stderr, "fmha-runner: --dtype is f32, f16 or bf16 and --mode "
                         "linear, nearest or previous\n");
    return kUsageOrCudaError;
  }
  p.batch = opt.getInt("batch", 4);
  p.targets = opt.getInt("targets", 50);
  std::vector<int> samples = parseList(opt.get("samples", "100"));
  std::vector<int> features = parseList(opt.get("features", "32"));
  p.withLengths = opt.flag("lengths");
  // edges: targets run past both ends of the sources (every edge rule is
  // exercised); inside: targets spread over the sources' span, as the
  // benchmark rows of ANCHORS.md and bench/peers do.
  std::string targetRange = opt.get("target-range", "edges");
  if (targetRange != "edges" && targetRange != "inside") {
    std::fprintf(stderr, "fmha-runner: --target-range is edges or inside\n");
    return kUsageOrCudaError;
  }
  RunOptions runOptions = parseRunOptions(opt);
  const std::string &candidateName = runOptions.candidate,
                    &oracleName = runOptions.oracle;
  bool time = runOptions.time, check = runOptions.check;
  ResampleLauncher candidate = launcherNamed(candidateName);
  if (!candidate || (oracleName != "ref" && oracleName != "cpu")) {
    std::fprintf(stderr, "fmha-runner: --candidate is ref, broken-tail or "
                         "jit (fmha-runner-jit) or aot (fmha-runner-aot), "
                         "--oracle ref or cpu\n");
    return kUsageOrCudaError;
  }
  if (samples.size() != features.size() || samples.empty() ||
      samples.size() > FMHA_REF_MAX_STREAMS || p.batch < 1 || p.targets < 1) {
    std::fprintf(stderr, "fmha-runner: --samples and --features list one "
                         "value per stream (1 to %d streams); sizes >= 1\n",
                 FMHA_REF_MAX_STREAMS);
    return kUsageOrCudaError;
  }
  // --check-sorted runs the JIT's checking mode (fmha.check_sorted) before
  // the resample; --unsort=ROW[,ROW...] breaks the order of stream 0's
  // times in those rows first, to test that mode: it must name the first.
  bool checkSorted = opt.flag("check-sorted");
  std::vector<int> unsortRows;
  if (opt.has("unsort"))
    unsortRows = parseList(opt.get("unsort", ""));
  SortedCheck sortedCheck = getJitSortedCheck();
  if ((checkSorted && !sortedCheck) || (!unsortRows.empty() && !checkSorted)) {
    std::fprintf(stderr, "fmha-runner: --check-sorted needs fmha-runner-jit; "
                         "--unsort needs --check-sorted\n");
    return kUsageOrCudaError;
  }
  uint64_t seed = chooseSeed(opt);
  if (opt.reportUnused())
    return kUsageOrCudaError;
  std::printf("resample %s %s B=%d T=%d streams=%zu%s targets %s, candidate "
              "%s, oracle %s\n",
              dtypeName(p.dtype), mode.c_str(), p.batch, p.targets,
              samples.size(), p.withLengths ? " lengths" : "",
              targetRange.c_str(), candidateName.c_str(), oracleName.c_str());

  Random random(seed);
  p.streams.resize(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    StreamData &s = p.streams[i];
    s.samples = samples[i];
    s.features = features[i];
    if (s.samples < 1 || s.features < 1) {
      std::fprintf(stderr, "fmha-runner: samples and features must be >= 1\n");
      return kUsageOrCudaError;
    }
    p.totalFeatures += s.features;
    s.times.resize(size_t(p.batch) * s.samples);
    s.values.resize(size_t(p.batch) * s.samples * s.features);
    for (int b = 0; b < p.batch; ++b)
      makeTimes(random, random.uniform(-2.0f, 2.0f), s.samples,
                &s.times[size_t(b) * s.samples]);
    for (float &x : s.values)
      x = quantize(random.normal(), p.dtype);
    if (p.withLengths) {
      // Rows with no sample and with one sample always appear.
      s.lengths.resize(p.batch);
      for (int b = 0; b < p.batch; ++b)
        s.lengths[b] = b == 0 ? 0 : b == 1 ? 1 : random.integer(0, s.samples);
    }
  }
  p.targetTimes.resize(size_t(p.batch) * p.targets);
  for (int b = 0; b < p.batch; ++b) {
    float *row = &p.targetTimes[size_t(b) * p.targets];
    const std::vector<float> &times = p.streams[0].times;
    float first = times[size_t(b) * samples[0]];
    float last = times[size_t(b) * samples[0] + samples[0] - 1];
    for (int t = 0; t < p.targets; ++t)
      row[t] = targetRange == "inside"
                   ? random.uniform(first, last)
                   : random.uniform(first - 3.0f, last + 3.0f);
    std::sort(row, row + p.targets);
  }

  // Each unsorted row gets times[row, i + 1] < times[row, i] at a random i
  // (all its samples valid), and no other pair out of order.
  UnsortedPair expectedFirst;
  for (int row : unsortRows) {
    StreamData &s = p.streams[0];
    if (row < 0 || row >= p.batch || s.samples < 2) {
      std::fprintf(stderr, "fmha-runner: --unsort rows must be in [0, %d) "
                           "and stream 0 needs 2 samples or more\n",
                   p.batch);
      return kUsageOrCudaError;
    }
    if (p.withLengths)
      s.lengths[row] = s.samples;
    int i = random.integer(0, s.samples - 2);
    float *times = &s.times[size_t(row) * s.samples];
    times[i + 1] = times[i] - 1.0f;
    if (expectedFirst.row < 0 || row < expectedFirst.row)
      expectedFirst = {row, i};
  }

  DeviceSet dev = upload(p);
  if (checkSorted) {
    int status = runSortedCheck(p, dev, sortedCheck, expectedFirst);
    // Resampling unsorted times is undefined: nothing more to check.
    if (status != kPass || expectedFirst.row >= 0)
      return status;
  }
  auto run = [&](ResampleLauncher launcher) {
    dev.out.poison();
    fmhaRefResampleArgs args = makeArgs(p, dev);
    FMHA_CUDA(launcher(&args, nullptr));
    FMHA_CUDA(cudaDeviceSynchronize());
    std::vector<uint8_t> bytes(dev.out.size());
    dev.out.download(bytes.data(), bytes.size());
    return decode(bytes, p.dtype);
  };

  int status = kPass;
  if (check) {
    std::vector<float> expected;
    if (oracleName == "cpu")
      resampleOnCpu(p, expected);
    else
      expected = run(fmhaRefResample);
    Comparison c = compare(run(candidate), expected, outputTolerance(p.dtype));
    printComparison("out", c);
    status = c.passed() ? kPass : kMismatch;
  }
  if (time) {
    // Whole copies of inputs and output, so no launch finds its data in L2.
    int copies = copiesToDefeatL2(size_t(p.bytes()));
    std::vector<DeviceSet> sets;
    for (int c = 0; c < copies; ++c)
      sets.push_back(upload(p));
    auto launch = [&](int copy) {
      fmhaRefResampleArgs args = makeArgs(p, sets[copy]);
      FMHA_CUDA(candidate(&args, nullptr));
    };
    double ms = timeMedianMs(launch, copies);
    std::printf("time: median %.4f ms of 30 runs (%d input copies rotated): "
                "%.1f GB/s (minimum bytes %.1f MB)\n",
                ms, copies, p.bytes() / (ms * 1e-3) / 1e9, p.bytes() / 1e6);
    double gpuMs = timeMedianMs(launch, copies, 5, 30, Timing::StreamHeld);
    std::printf("gpu time: median %.4f ms of 30 runs, launch cost excluded "
                "(stream held): %.1f GB/s\n",
                gpuMs, p.bytes() / (gpuMs * 1e-3) / 1e9);
  }
  return status;
}

} // namespace fmha_harness
