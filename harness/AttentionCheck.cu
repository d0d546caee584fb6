//===- AttentionCheck.cu - checking and timing attention kernels ----------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "Harness.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace fmha_harness {
namespace {

struct AttentionProblem {
  fmhaRefDType dtype = FMHA_REF_BF16;
  int batch = 1, queryHeads = 1, kvHeads = 1, querySeq = 1, keySeq = 1,
      headDim = 64;
  bool causal = false, withLse = false, bshd = false;
  long long windowLeft = -1, windowRight = -1;
  float scale = 0;

  size_t queryElements() const {
    return size_t(batch) * queryHeads * querySeq * headDim;
  }
  size_t keyElements() const {
    return size_t(batch) * kvHeads * keySeq * headDim;
  }
  size_t lseElements() const { return size_t(batch) * queryHeads * querySeq; }
  /// Strides [batch, head, sequence] of a [B, H, S, D] tensor in this layout.
  void strides(int heads, int seq, long long out[3]) const {
    out[0] = (long long)heads * seq * headDim;
    out[1] = bshd ? headDim : (long long)seq * headDim;
    out[2] = bshd ? (long long)heads * headDim : headDim;
  }
  /// The convention of ../shared/ANCHORS.md: 4 B H Sq Sk D, halved if causal.
  double flops() const {
    double f = 4.0 * batch * queryHeads * double(querySeq) * keySeq * headDim;
    return causal ? f / 2 : f;
  }
};

struct AttentionInputs {
  std::vector<float> q, k, v; // quantized values, in layout order
};

/// Double-precision attention over the quantized inputs: the oracle for the
/// reference itself. Output is [B, H, Sq, D] in the problem's layout, LSE
/// [B, H, Sq].
void attentionOnCpu(const AttentionProblem &p, const AttentionInputs &in,
                    std::vector<float> &o, std::vector<float> &lse) {
  long long qs[3], ks[3];
  p.strides(p.queryHeads, p.querySeq, qs);
  p.strides(p.kvHeads, p.keySeq, ks);
  o.assign(p.queryElements(), 0.0f);
  lse.assign(p.lseElements(), 0.0f);
  std::vector<double> scores(p.keySeq), acc(p.headDim);
  int group = p.queryHeads / p.kvHeads;
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.queryHeads; ++h)
      for (long long i = 0; i < p.querySeq; ++i) {
        const float *q = &in.q[b * qs[0] + h * qs[1] + i * qs[2]];
        long long diagonal = i + p.keySeq - p.querySeq;
        double maxScore = -std::numeric_limits<double>::infinity();
        for (long long j = 0; j < p.keySeq; ++j) {
          bool visible = (!p.causal || j <= diagonal) &&
                         (p.windowRight < 0 || j <= diagonal + p.windowRight) &&
                         (p.windowLeft < 0 || j >= diagonal - p.windowLeft);
          if (!visible) {
            scores[j] = -std::numeric_limits<double>::infinity();
            continue;
          }
          const float *k =
              &in.k[b * ks[0] + (h / group) * ks[1] + j * ks[2]];
          double dot = 0;
          for (int d = 0; d < p.headDim; ++d)
            dot += double(q[d]) * k[d];
          scores[j] = dot * p.scale;
          maxScore = std::max(maxScore, scores[j]);
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        double sum = 0;
        if (std::isfinite(maxScore))
          for (long long j = 0; j < p.keySeq; ++j) {
            if (!std::isfinite(scores[j]))
              continue;
            double w = std::exp(scores[j] - maxScore);
            sum += w;
            const float *v =
                &in.v[b * ks[0] + (h / group) * ks[1] + j * ks[2]];
            for (int d = 0; d < p.headDim; ++d)
              acc[d] += w * v[d];
          }
        float *out = &o[b * qs[0] + h * qs[1] + i * qs[2]];
        for (int d = 0; d < p.headDim; ++d)
          out[d] = sum > 0 ? float(acc[d] / sum) : 0.0f;
        lse[(size_t(b) * p.queryHeads + h) * p.querySeq + i] =
            sum > 0 ? float(maxScore + std::log(sum))
                    : std::numeric_limits<float>::infinity();
      }
}

/// Device copies of the inputs, and the outputs of one run.
struct AttentionDevice {
  DeviceBuffer q, k, v, o, lse;
};

fmhaRefAttentionArgs makeArgs(const AttentionProblem &p, AttentionDevice &dev) {
  fmhaRefAttentionArgs a;
  std::memset(&a, 0, sizeof(a));
  a.dtype = p.dtype;
  a.batch = p.batch;
  a.queryHeads = p.queryHeads;
  a.kvHeads = p.kvHeads;
  a.querySeq = p.querySeq;
  a.keySeq = p.keySeq;
  a.headDim = p.headDim;
  a.q = dev.q.get();
  a.k = dev.k.get();
  a.v = dev.v.get();
  a.o = dev.o.get();
  a.lse = p.withLse ? static_cast<float *>(dev.lse.get()) : nullptr;
  p.strides(p.queryHeads, p.querySeq, a.qStride);
  p.strides(p.kvHeads, p.keySeq, a.kStride);
  p.strides(p.kvHeads, p.keySeq, a.vStride);
  p.strides(p.queryHeads, p.querySeq, a.oStride);
  a.lseStride[0] = (long long)p.queryHeads * p.querySeq;
  a.lseStride[1] = p.querySeq;
  a.lseStride[2] = 1;
  a.scale = p.scale;
  a.causal = p.causal;
  a.windowLeft = p.windowLeft;
  a.windowRight = p.windowRight;
  return a;
}

/// Runs \p launcher on a poisoned output and returns O (and LSE) as floats.
void runOnce(AttentionLauncher launcher, const AttentionProblem &p,
             AttentionDevice &dev, std::vector<float> &o,
             std::vector<float> &lse) {
  dev.o.poison();
  dev.lse.poison();
  fmhaRefAttentionArgs args = makeArgs(p, dev);
  FMHA_CUDA(launcher(&args, nullptr));
  FMHA_CUDA(cudaDeviceSynchronize());
  std::vector<uint8_t> bytes(dev.o.size());
  dev.o.download(bytes.data(), bytes.size());
  o = decode(bytes, p.dtype);
  lse.assign(p.lseElements(), 0.0f);
  if (p.withLse)
    dev.lse.download(lse.data(), lse.size() * sizeof(float));
}

AttentionLauncher launcherNamed(const std::string &name) {
  if (name == "ref")
    return fmhaRefAttention;
  if (name == "broken-mask")
    return fmhaBrokenMaskAttention;
  if (name == "broken-tail")
    return fmhaBrokenTailAttention;
  if (name == "jit")
    return getJitAttentionLauncher();
  if (name == "aot")
    return getAotAttentionLauncher();
  return nullptr;
}

bool parseProblem(const Options &opt, AttentionProblem &p) {
  std::string dtype = opt.get("dtype", "bf16");
  if (dtype == "bf16")
    p.dtype = FMHA_REF_BF16;
  else if (dtype == "f16")
    p.dtype = FMHA_REF_F16;
  else {
    std::fprintf(stderr, "fmha-runner: --dtype must be bf16 or f16, got '%s'\n",
                 dtype.c_str());
    return false;
  }
  p.batch = opt.getInt("batch", 1);
  p.queryHeads = opt.getInt("heads", 4);
  p.kvHeads = opt.getInt("kv-heads", p.queryHeads);
  p.querySeq = opt.getInt("seq-q", 128);
  p.keySeq = opt.getInt("seq-k", p.querySeq);
  p.headDim = opt.getInt("head-dim", 64);
  p.causal = opt.flag("causal");
  p.withLse = opt.flag("lse");
  std::string layout = opt.get("layout", "bhsd");
  p.bshd = layout == "bshd";
  if (layout != "bhsd" && layout != "bshd") {
    std::fprintf(stderr, "fmha-runner: --layout must be bhsd or bshd\n");
    return false;
  }
  std::string window = opt.get("window", "");
  if (!window.empty() &&
      std::sscanf(window.c_str(), "%lld,%lld", &p.windowLeft,
                  &p.windowRight) != 2) {
    std::fprintf(stderr, "fmha-runner: --window expects LEFT,RIGHT (-1 for "
                         "unbounded), got '%s'\n",
                 window.c_str());
    return false;
  }
  p.scale = std::stof(opt.get("scale", std::to_string(1.0 / std::sqrt(p.headDim))));
  if (p.batch < 1 || p.queryHeads < 1 || p.kvHeads < 1 ||
      p.queryHeads % p.kvHeads || p.querySeq < 1 || p.keySeq < 1 ||
      p.headDim < 1 || p.headDim > FMHA_REF_MAX_HEAD_DIM) {
    std::fprintf(stderr, "fmha-runner: invalid attention shape (need sizes "
                         ">= 1, heads %% kv-heads == 0, head-dim <= %d)\n",
                 FMHA_REF_MAX_HEAD_DIM);
    return false;
  }
  return true;
}

} // namespace

int runAttentionCheck(const Options &opt) {
  AttentionProblem p;
  if (!parseProblem(opt, p))
    return kUsageOrCudaError;
  RunOptions runOptions = parseRunOptions(opt);
  const std::string &candidateName = runOptions.candidate,
                    &oracleName = runOptions.oracle;
  bool time = runOptions.time, check = runOptions.check;
  AttentionLauncher candidate = launcherNamed(candidateName);
  if (!candidate) {
    std::fprintf(stderr, "fmha-runner: unknown --candidate '%s' (ref, "
                         "broken-mask, broken-tail, jit in fmha-runner-jit, aot in "
                         "fmha-runner-aot)\n",
                 candidateName.c_str());
    return kUsageOrCudaError;
  }
  if (oracleName != "ref" && oracleName != "cpu") {
    std::fprintf(stderr, "fmha-runner: --oracle must be ref or cpu\n");
    return kUsageOrCudaError;
  }
  uint64_t seed = chooseSeed(opt);
  if (opt.reportUnused())
    return kUsageOrCudaError;
  std::printf("attention %s B=%d Hq=%d Hkv=%d Sq=%d Sk=%d D=%d%s%s%s "
              "window=[%lld,%lld] scale=%g, candidate %s, oracle %s\n",
              dtypeName(p.dtype), p.batch, p.queryHeads, p.kvHeads, p.querySeq,
              p.keySeq, p.headDim, p.causal ? " causal" : "",
              p.withLse ? " lse" : "", p.bshd ? " bshd" : " bhsd",
              p.windowLeft, p.windowRight, p.scale, candidateName.c_str(),
              oracleName.c_str());

  AttentionInputs in;
  uint64_t stream = 0;
  for (auto *tensor : {&in.q, &in.k, &in.v}) {
    tensor->resize(tensor == &in.q ? p.queryElements() : p.keyElements());
    fillNormal(*tensor, seed, stream++, p.dtype);
  }
  // The first getDumpCount() elements of q, k and v (FMHA_DUMP_FIRST).
  for (auto [name, tensor] : {std::pair{"q", &in.q}, std::pair{"k", &in.k},
                              std::pair{"v", &in.v}})
    for (size_t i = 0; i < std::min(getDumpCount(), tensor->size()); ++i)
      std::printf("  %s[%zu] = %.4f\n", name, i, (*tensor)[i]);
  size_t eb = elementBytes(p.dtype);
  AttentionDevice dev{DeviceBuffer(p.queryElements() * eb),
                      DeviceBuffer(p.keyElements() * eb),
                      DeviceBuffer(p.keyElements() * eb),
                      DeviceBuffer(p.queryElements() * eb),
                      DeviceBuffer(p.lseElements() * sizeof(float))};
  for (auto [tensor, buffer] : {std::pair{&in.q, &dev.q},
                                std::pair{&in.k, &dev.k},
                                std::pair{&in.v, &dev.v}}) {
    std::vector<uint8_t> bytes = encode(*tensor, p.dtype);
    buffer->upload(bytes.data(), bytes.size());
  }

  int status = kPass;
  if (check) {
    std::vector<float> expectedO, expectedLse, actualO, actualLse;
    if (oracleName == "cpu")
      attentionOnCpu(p, in, expectedO, expectedLse);
    else
      runOnce(fmhaRefAttention, p, dev, expectedO, expectedLse);
    runOnce(candidate, p, dev, actualO, actualLse);
    Comparison o = compare(actualO, expectedO, outputTolerance(p.dtype));
    printComparison("o", o);
    bool passed = o.passed();
    if (p.withLse) {
      // LSE is f32: a few f32 ulps of a value of order log(Sk) + max score.
      Comparison lse = compare(actualLse, expectedLse, 1e-4);
      printComparison("lse", lse);
      passed &= lse.passed();
    }
    status = passed ? kPass : kMismatch;
  }

  if (time) {
    size_t bytesPerCopy = (p.queryElements() + 2 * p.keyElements()) * eb;
    int copies = copiesToDefeatL2(bytesPerCopy);
    std::vector<AttentionDevice> rotated;
    for (int c = 0; c < copies; ++c) {
      rotated.push_back({DeviceBuffer(p.queryElements() * eb),
                         DeviceBuffer(p.keyElements() * eb),
                         DeviceBuffer(p.keyElements() * eb),
                         DeviceBuffer(p.queryElements() * eb),
                         DeviceBuffer(p.lseElements() * sizeof(float))});
      for (auto [from, to] : {std::pair{&dev.q, &rotated.back().q},
                              std::pair{&dev.k, &rotated.back().k},
                              std::pair{&dev.v, &rotated.back().v}})
        FMHA_CUDA(cudaMemcpy(to->get(), from->get(), from->size(),
                             cudaMemcpyDeviceToDevice));
    }
    auto launch = [&](int copy) {
      fmhaRefAttentionArgs args = makeArgs(p, rotated[copy]);
      FMHA_CUDA(candidate(&args, nullptr));
    };
    double ms = timeMedianMs(launch, copies);
    std::printf("time: median %.3f ms of 30 runs (%d input copies rotated): "
                "%.1f TFLOP/s\n",
                ms, copies, p.flops() / (ms * 1e-3) / 1e12);
    double sustainedMs =
        timeMedianMs(launch, copies, 5, 30, Timing::BackToBack);
    std::printf("back-to-back time: median %.3f ms a call of 30 runs of %d "
                "calls: %.1f TFLOP/s\n",
                sustainedMs, kBackToBackCalls,
                p.flops() / (sustainedMs * 1e-3) / 1e12);
  }
  return status;
}

} // namespace fmha_harness
