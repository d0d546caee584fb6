//===- main.cpp - a program that uses fmha-aot's output, and nothing else -===//
//
// Part of FlashCore. Built with a plain C++ compiler and libcuda: no MLIR, no
// LLVM, no nvcc, no FlashCore library. flashcore_attn.{h,c} come from
//
//   fmha-aot $(cat examples/aot-consumer/fmha-aot.args) -o generated/
//
// that is, --op=attention --dtype=bf16 --head-dim=128 --causal --lse
// --archs=sm_80,sm_90 --name=flashcore_attn
// (the sm_80 lowering, linked for sm_80 and sm_90: it runs on A100 and H100).
// It creates a context, loads the cubin for the device, runs causal GQA
// attention (B=2, 8 query heads over 2 KV heads, 300 queries over 300 keys,
// BSHD layout) and checks sampled rows of O and LSE against a
// double-precision CPU reference. Exit status: 0 correct, 1 wrong or
// failed, 77 no GPU.
//
//===----------------------------------------------------------------------===//

#include "flashcore_attn.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int kSkipped = 77;
constexpr int64_t kBatch = 2, kQueryHeads = 8, kKvHeads = 2, kSeq = 300,
                  kHeadDim = 128;

bool check(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return true;
  const char *name = "an unknown CUresult";
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "aot-consumer: %s failed: %s\n", call, name);
  return false;
}

uint16_t toBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

float fromBf16(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

/// Index of element (b, h, s, d) of a BSHD tensor with `heads` heads.
int64_t bshd(int64_t b, int64_t h, int64_t s, int64_t d, int64_t heads) {
  return ((b * kSeq + s) * heads + h) * kHeadDim + d;
}

} // namespace

int main() {
  if (cuInit(0) != CUDA_SUCCESS) {
    std::fprintf(stderr, "aot-consumer: skipped: no CUDA driver or GPU\n");
    return kSkipped;
  }
  CUdevice device;
  CUcontext context;
  char name[256];
  int major = 0, minor = 0;
  if (!check(cuDeviceGet(&device, 0), "cuDeviceGet") ||
      !check(cuDeviceGetName(name, sizeof name, device), "cuDeviceGetName") ||
      !check(cuDeviceGetAttribute(
                 &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
             "cuDeviceGetAttribute") ||
      !check(cuDeviceGetAttribute(
                 &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
             "cuDeviceGetAttribute") ||
      !check(cuDevicePrimaryCtxRetain(&context, device),
             "cuDevicePrimaryCtxRetain") ||
      !check(cuCtxSetCurrent(context), "cuCtxSetCurrent"))
    return 1;
  std::printf("device: %s (compute capability %d.%d)\n", name, major, minor);

  flashcore_attn_module module;
  if (flashcore_attn_load(&module) != FLASHCORE_ATTN_SUCCESS) {
    std::fprintf(stderr, "aot-consumer: %s\n", module.message);
    return 1;
  }
  const flashcore_attn_kernel_info &info = flashcore_attn_kernels[0];
  std::printf("loaded: the %s cubin of flashcore_attn (holds", 
              flashcore_attn_archs[module.cubin]);
  for (int i = 0; i < FLASHCORE_ATTN_NUM_CUBINS; ++i)
    std::printf(" %s", flashcore_attn_archs[i]);
  std::printf("); kernel %s: %s %s d%d%s%s\n", info.name, info.op, info.dtype,
              info.head_dim, info.causal ? " causal" : "",
              info.lse ? " lse" : "");

  // Inputs: a fixed pseudo-random sequence, rounded to bf16.
  int64_t queryElements = kBatch * kSeq * kQueryHeads * kHeadDim;
  int64_t keyElements = kBatch * kSeq * kKvHeads * kHeadDim;
  std::vector<uint16_t> q(queryElements), k(keyElements), v(keyElements);
  uint32_t state = 12345;
  auto next = [&]() {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f;
  };
  for (std::vector<uint16_t> *tensor : {&q, &k, &v})
    for (uint16_t &x : *tensor)
      x = toBf16(next());

  CUdeviceptr dq, dk, dv, dO, dLse;
  int64_t lseElements = kBatch * kQueryHeads * kSeq;
  if (!check(cuMemAlloc(&dq, queryElements * 2), "cuMemAlloc") ||
      !check(cuMemAlloc(&dk, keyElements * 2), "cuMemAlloc") ||
      !check(cuMemAlloc(&dv, keyElements * 2), "cuMemAlloc") ||
      !check(cuMemAlloc(&dO, queryElements * 2), "cuMemAlloc") ||
      !check(cuMemAlloc(&dLse, lseElements * 4), "cuMemAlloc") ||
      !check(cuMemcpyHtoD(dq, q.data(), queryElements * 2), "cuMemcpyHtoD") ||
      !check(cuMemcpyHtoD(dk, k.data(), keyElements * 2), "cuMemcpyHtoD") ||
      !check(cuMemcpyHtoD(dv, v.data(), keyElements * 2), "cuMemcpyHtoD"))
    return 1;

  // BSHD: strides in elements for (batch, head, sequence, head dim).
  flashcore_attn_attention_args args = {};
  args.q = reinterpret_cast<const void *>(dq);
  args.k = reinterpret_cast<const void *>(dk);
  args.v = reinterpret_cast<const void *>(dv);
  args.o = reinterpret_cast<void *>(dO);
  args.lse = reinterpret_cast<float *>(dLse);
  args.batch = kBatch;
  args.q_heads = kQueryHeads;
  args.kv_heads = kKvHeads;
  args.q_seq = args.k_seq = kSeq;
  const int64_t queryStrides[4] = {kSeq * kQueryHeads * kHeadDim, kHeadDim,
                                   kQueryHeads * kHeadDim, 1};
  const int64_t keyStrides[4] = {kSeq * kKvHeads * kHeadDim, kHeadDim,
                                 kKvHeads * kHeadDim, 1};
  std::memcpy(args.q_strides, queryStrides, sizeof queryStrides);
  std::memcpy(args.o_strides, queryStrides, sizeof queryStrides);
  std::memcpy(args.k_strides, keyStrides, sizeof keyStrides);
  std::memcpy(args.v_strides, keyStrides, sizeof keyStrides);
  args.lse_strides[0] = kQueryHeads * kSeq;
  args.lse_strides[1] = kSeq;
  args.lse_strides[2] = 1;

  CUevent start, stop;
  if (!check(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate") ||
      !check(cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate"))
    return 1;
  constexpr int kRuns = 20;
  for (int run = 0; run <= kRuns; ++run) {
    // Run 0 is the warm-up; the others are timed together.
    if (run == 1 && !check(cuEventRecord(start, nullptr), "cuEventRecord"))
      return 1;
    if (info.launch_attention(&module, &args, nullptr) !=
        FLASHCORE_ATTN_SUCCESS) {
      std::fprintf(stderr, "aot-consumer: %s\n", module.message);
      return 1;
    }
  }
  float ms = 0;
  if (!check(cuEventRecord(stop, nullptr), "cuEventRecord") ||
      !check(cuEventSynchronize(stop), "cuEventSynchronize") ||
      !check(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime"))
    return 1;

  std::vector<uint16_t> o(queryElements);
  std::vector<float> lse(lseElements);
  if (!check(cuMemcpyDtoH(o.data(), dO, queryElements * 2), "cuMemcpyDtoH") ||
      !check(cuMemcpyDtoH(lse.data(), dLse, lseElements * 4), "cuMemcpyDtoH"))
    return 1;

  // The CPU reference on sampled rows: every head, first, middle and last
  // queries (causal: query i sees keys 0..i).
  double scale = info.scale, maxError = 0, maxLseError = 0;
  int rows = 0;
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t h = 0; h < kQueryHeads; ++h)
      for (int64_t i : {int64_t(0), int64_t(1), kSeq / 2, kSeq - 1}) {
        int64_t kvHead = h / (kQueryHeads / kKvHeads);
        std::vector<double> scores(i + 1);
        double maxScore = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < kHeadDim; ++d)
            dot += fromBf16(q[bshd(b, h, i, d, kQueryHeads)]) *
                   fromBf16(k[bshd(b, kvHead, j, d, kKvHeads)]);
          scores[j] = dot * scale;
          maxScore = std::fmax(maxScore, scores[j]);
        }
        double sum = 0;
        for (double &s : scores)
          sum += s = std::exp(s - maxScore);
        for (int64_t d = 0; d < kHeadDim; ++d) {
          double expected = 0;
          for (int64_t j = 0; j <= i; ++j)
            expected += scores[j] / sum *
                        fromBf16(v[bshd(b, kvHead, j, d, kKvHeads)]);
          double actual = fromBf16(o[bshd(b, h, i, d, kQueryHeads)]);
          maxError = std::fmax(maxError, std::fabs(actual - expected));
          if (std::isnan(actual))
            maxError = INFINITY;
        }
        double expectedLse = maxScore + std::log(sum);
        double actualLse = lse[(b * kQueryHeads + h) * kSeq + i];
        maxLseError = std::fmax(maxLseError, std::fabs(actualLse - expectedLse));
        if (std::isnan(actualLse))
          maxLseError = INFINITY;
        ++rows;
      }
  // bf16 output: 8 significant bits, values below 1 in magnitude.
  bool passed = maxError <= 1.0 / 64 && maxLseError <= 1e-3;
  std::printf("attention B=%lld Hq=%lld Hkv=%lld S=%lld D=%lld causal bshd: "
              "%.3f ms per launch\n",
              (long long)kBatch, (long long)kQueryHeads, (long long)kKvHeads,
              (long long)kSeq, (long long)kHeadDim, ms / kRuns);
  std::printf("checked %d rows against the CPU: max abs error o %.3g, lse "
              "%.3g: %s\n",
              rows, maxError, maxLseError, passed ? "PASS" : "FAIL");

  flashcore_attn_unload(&module);
  cuMemFree(dq);
  cuMemFree(dk);
  cuMemFree(dv);
  cuMemFree(dO);
  cuMemFree(dLse);
  cuDevicePrimaryCtxRelease(device);
  return passed ? 0 : 1;
}
