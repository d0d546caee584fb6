//===- AotCandidates.cpp - kernels from fmha-aot as the `aot` candidate ---===//
//
// Part of FlashCore. fmha-runner-aot links the C that fmha-aot generated
// with --name=fmha_aot (FMHA_AOT_DIR) and checks its kernels against
// kernels-ref: for each problem it picks the generated kernel that computes
// it (dtype, head dim, causality, LSE, window, scale; mode, streams,
// lengths) and launches it through the generated launcher, with the
// problem's pointers, sizes and strides. No MLIR: C, C++ and libcuda.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"

#include "fmha_aot.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

using namespace fmha_harness;

/// The generated kernels, loaded into the runtime's context (current on this
/// thread: the harness allocated the inputs before the first launch).
static fmha_aot_module *getModule() {
  static fmha_aot_module module;
  static bool loaded = [] {
    if (fmha_aot_load(&module) != FMHA_AOT_SUCCESS) {
      std::fprintf(stderr, "fmha-runner: %s\n", module.message);
      return false;
    }
    std::printf("aot: the %s image of fmha_aot (holds",
                fmha_aot_archs[module.cubin]);
    for (int i = 0; i < FMHA_AOT_NUM_CUBINS; ++i)
      std::printf(" %s", fmha_aot_archs[i]);
    std::printf(")\n");
    return true;
  }();
  return loaded ? &module : nullptr;
}

static const char *getDtypeName(fmhaRefDType dtype) {
  return dtype == FMHA_REF_F16 ? "f16" : dtype == FMHA_REF_BF16 ? "bf16" : "f32";
}

/// Lists the kernels of \p op held, for a problem none of them computes.
static void reportNoKernel(const char *op, const std::string &problem) {
  std::fprintf(stderr, "fmha-runner: no kernel in fmha_aot computes %s %s; "
                       "it holds:\n", op, problem.c_str());
  for (const fmha_aot_kernel_info &k : fmha_aot_kernels) {
    if (std::strcmp(k.op, op) != 0)
      continue;
    if (k.launch_attention)
      std::fprintf(stderr, "  %s: %s d%d%s%s window %s[%lld, %lld] scale %g\n",
                   k.name, k.dtype, k.head_dim, k.causal ? " causal" : "",
                   k.lse ? " lse" : "", k.has_window ? "" : "none ",
                   (long long)k.window[0], (long long)k.window[1], k.scale);
    else
      std::fprintf(stderr, "  %s: %s %s, %d stream(s)%s\n", k.name, k.mode,
                   k.dtype, k.num_streams, k.lengths ? ", lengths" : "");
  }
}

static cudaError_t launchAotAttention(const fmhaRefAttentionArgs *a,
                                      cudaStream_t stream) {
  fmha_aot_module *module = getModule();
  if (!module)
    return cudaErrorInitializationError;
  long long window[2] = {0, 0};
  bool hasWindow = getOpWindow(*a, window);
  const fmha_aot_kernel_info *kernel = nullptr;
  for (const fmha_aot_kernel_info &k : fmha_aot_kernels) {
    // The scale is baked in: within float rounding of the problem's (the
    // runner's default spells 1/sqrt(D) with 6 decimals).
    if (k.launch_attention &&
        std::strcmp(k.dtype, getDtypeName(a->dtype)) == 0 &&
        k.head_dim == a->headDim && k.value_head_dim == a->headDim &&
        k.causal == (a->causal != 0) && k.lse == (a->lse != nullptr) &&
        k.has_window == hasWindow &&
        (!hasWindow ||
         (k.window[0] == window[0] && k.window[1] == window[1])) &&
        std::fabs(k.scale - a->scale) <= 1e-5f * std::fabs(a->scale)) {
      kernel = &k;
      break;
    }
  }
  if (!kernel) {
    char problem[256];
    std::snprintf(problem, sizeof problem,
                  "%s d%d%s%s window %s[%lld, %lld] scale %g",
                  getDtypeName(a->dtype), a->headDim,
                  a->causal ? " causal" : "", a->lse ? " lse" : "",
                  hasWindow ? "" : "none ", window[0], window[1], a->scale);
    reportNoKernel("attention", problem);
    return cudaErrorInvalidValue;
  }

  fmha_aot_attention_args args = {};
  args.q = a->q;
  args.k = a->k;
  args.v = a->v;
  args.o = a->o;
  args.lse = a->lse;
  args.batch = a->batch;
  args.q_heads = a->queryHeads;
  args.kv_heads = a->kvHeads;
  args.q_seq = a->querySeq;
  args.k_seq = a->keySeq;
  const long long *from[] = {a->qStride, a->kStride, a->vStride, a->oStride};
  int64_t *to[] = {args.q_strides, args.k_strides, args.v_strides,
                   args.o_strides};
  for (int i = 0; i < 4; ++i) {
    for (int d = 0; d < 3; ++d)
      to[i][d] = from[i][d];
    to[i][3] = 1;
  }
  for (int d = 0; d < 3; ++d)
    args.lse_strides[d] = a->lseStride[d];
  if (kernel->launch_attention(module, &args,
                               reinterpret_cast<CUstream>(stream)) !=
      FMHA_AOT_SUCCESS) {
    std::fprintf(stderr, "fmha-runner: %s\n", module->message);
    return cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

static cudaError_t launchAotResample(const fmhaRefResampleArgs *a,
                                     cudaStream_t stream) {
  fmha_aot_module *module = getModule();
  if (!module)
    return cudaErrorInitializationError;
  static const char *const modes[] = {"linear", "nearest", "previous"};
  const char *mode = modes[a->mode];
  bool withLengths = a->streams[0].lengths != nullptr;
  const fmha_aot_kernel_info *kernel = nullptr;
  for (const fmha_aot_kernel_info &k : fmha_aot_kernels) {
    if (!k.launch_resample || std::strcmp(k.mode, mode) != 0 ||
        std::strcmp(k.dtype, getDtypeName(a->dtype)) != 0 ||
        k.num_streams != a->numStreams || k.lengths != withLengths)
      continue;
    bool same = true;
    for (int s = 0; s < a->numStreams; ++s)
      same &= k.features[s] == a->streams[s].features;
    if (same) {
      kernel = &k;
      break;
    }
  }
  if (!kernel) {
    std::string problem = std::string(mode) + " " + getDtypeName(a->dtype) +
                          ", features";
    for (int s = 0; s < a->numStreams; ++s)
      problem += " " + std::to_string(a->streams[s].features);
    if (withLengths)
      problem += ", lengths";
    reportNoKernel("resample", problem);
    return cudaErrorInvalidValue;
  }

  fmha_aot_resample_stream streams[FMHA_REF_MAX_STREAMS] = {};
  for (int s = 0; s < a->numStreams; ++s) {
    const fmhaRefStream &from = a->streams[s];
    streams[s].times = from.times;
    streams[s].values = from.values;
    streams[s].lengths = from.lengths;
    streams[s].samples = from.samples;
    streams[s].times_strides[0] = from.timesStride;
    streams[s].times_strides[1] = 1;
    streams[s].values_strides[0] = from.valuesStride[0];
    streams[s].values_strides[1] = from.valuesStride[1];
    streams[s].values_strides[2] = 1;
  }
  fmha_aot_resample_args args = {};
  args.batch = a->batch;
  args.targets = a->targets;
  args.num_streams = a->numStreams;
  args.streams = streams;
  args.target_times = a->targetTimes;
  args.target_strides[0] = a->targetStride;
  args.target_strides[1] = 1;
  args.out = a->out;
  args.out_strides[0] = a->outStride[0];
  args.out_strides[1] = a->outStride[1];
  args.out_strides[2] = 1;
  if (kernel->launch_resample(module, &args,
                              reinterpret_cast<CUstream>(stream)) !=
      FMHA_AOT_SUCCESS) {
    std::fprintf(stderr, "fmha-runner: %s\n", module->message);
    return cudaErrorLaunchFailure;
  }
  return cudaSuccess;
}

AttentionLauncher fmha_harness::getAotAttentionLauncher() {
  return launchAotAttention;
}

ResampleLauncher fmha_harness::getAotResampleLauncher() {
  return launchAotResample;
}
