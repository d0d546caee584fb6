//===- CAPITest.cpp - the C API's statuses and messages -------------------===//
//
// Part of FlashCore. Runs anywhere: without a driver it checks that the
// failure is reported with its message; with one it compiles and launches.
//
//===----------------------------------------------------------------------===//

#include "fmha-c/FlashCore.h"
#include "fmha/Runtime/CudaDriver.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

extern "C" int fmhaTestDenseStridesFromC(void);

namespace {

/// Takes ownership of a C API message.
std::string take(char *message) {
  std::string text = message ? message : "";
  fmhaFreeMessage(message);
  return text;
}

/// A JIT for \p chip (NULL: the device's best) without the disk cache, or
/// NULL with the reason in \p error (also when a success left a message).
fmhaJit createUncachedJit(const char *chip, std::string &error) {
  fmhaJitOptions options;
  fmhaJitOptionsInit(&options);
  options.chip = chip;
  options.cacheDirectory = "";
  fmhaJit jit = nullptr;
  char *message = nullptr;
  fmhaStatus status = fmhaJitCreate(&options, &jit, &message);
  if (status != FMHA_SUCCESS || message) {
    error = "fmhaJitCreate: status " + std::to_string(status) + ", message '" +
            take(message) + "'";
    fmhaJitDestroy(jit);
    return nullptr;
  }
  return jit;
}

TEST(CAPI, NullArgumentsAreRefusedWithAMessage) {
  char *message = nullptr;
  EXPECT_EQ(fmhaJitCreate(nullptr, nullptr, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(take(message), "fmhaJitCreate: jit must not be NULL");
  fmhaKernel kernel;
  EXPECT_EQ(fmhaJitGetKernelFromSource(nullptr, "", "k", &kernel, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(take(message).find("must not be NULL"), std::string::npos);
  unsigned dims[3] = {1, 1, 1};
  EXPECT_EQ(
      fmhaKernelLaunch(nullptr, nullptr, dims, dims, 0, nullptr, &message),
      FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(take(message).find("must not be NULL"), std::string::npos);
  EXPECT_EQ(fmhaAttention(nullptr, nullptr, nullptr, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(take(message), "fmhaAttention: jit and desc must not be NULL");
  EXPECT_EQ(fmhaResample(nullptr, nullptr, nullptr, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(take(message).find("must not be NULL"), std::string::npos);
  fmhaAttentionBackwardDesc grad = {};
  int uses = 0;
  EXPECT_EQ(fmhaAttentionBackwardUsesWorkspace(nullptr, &grad, &uses, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(take(message), "fmhaAttentionBackwardUsesWorkspace: jit, desc and "
                           "uses must not be NULL");
}

TEST(CAPI, AttentionDescFromC) { EXPECT_EQ(fmhaTestDenseStridesFromC(), 0); }

TEST(CAPI, UnknownChipIsAnInvalidArgument) {
  fmhaJitOptions options;
  fmhaJitOptionsInit(&options);
  options.chip = "sm_90";
  fmhaJit jit = nullptr;
  char *message = nullptr;
  EXPECT_EQ(fmhaJitCreate(&options, &jit, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(jit, nullptr);
  std::string text = take(message);
  EXPECT_NE(text.find("'sm_90a'"), std::string::npos) << text;
}

// The driver is loaded once per process, so this runs in a child process
// that points FMHA_LIBCUDA at a library that does not exist, whatever this
// machine has.
TEST(CAPI, AMissingDriverIsReportedNotFatal) {
  EXPECT_EXIT(
      {
        ::setenv("FMHA_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
        fmhaJit jit = nullptr;
        char *message = nullptr;
        fmhaStatus status = fmhaJitCreate(nullptr, &jit, &message);
        std::string text = take(message);
        std::fprintf(stderr, "%s\n", text.c_str());
        std::exit(status == FMHA_ERROR_FAILED && jit == nullptr ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "no CUDA driver: cannot open /nonexistent/libcuda.so.1");
}

TEST(CAPI, VersionAndDoctorNeedNoJit) {
  EXPECT_GT(std::strlen(fmhaVersion()), 0u);
  char *report = nullptr;
  int canWork = fmhaDoctor(&report);
  std::string text = take(report);
  EXPECT_NE(text.find(std::string("FlashCore ") + fmhaVersion()),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(canWork ? "verdict:    the JIT can work here"
                              : "verdict:    the JIT cannot run kernels here"),
            std::string::npos)
      << text;
  EXPECT_EQ(fmhaDoctor(nullptr), canWork);
}

/// A valid GQA 4:2 bf16 d64 attention description; the pointers are
/// aligned stand-ins (the checks read no memory).
fmhaAttentionDesc getCheckedDesc() {
  fmhaAttentionDesc desc;
  fmhaAttentionDescInit(&desc);
  desc.headDim = 64;
  desc.batch = 2;
  desc.queryHeads = 4;
  desc.kvHeads = 2;
  desc.querySeq = 100;
  desc.keySeq = 300;
  fmhaAttentionDescSetDenseStrides(&desc);
  alignas(16) static char standIn[16];
  desc.q = desc.k = desc.v = desc.o = standIn;
  return desc;
}

/// A change to a valid desc, and what fmhaAttentionCheck's message says of
/// it.
struct Refusal {
  void (*spoil)(fmhaAttentionDesc &);
  const char *expected;
};

/// Expects fmhaAttentionCheck to refuse \p desc after each spoil, with its
/// message.
static void expectRefusals(const fmhaAttentionDesc &desc,
                           std::initializer_list<Refusal> refusals) {
  char *message = nullptr;
  for (const Refusal &r : refusals) {
    SCOPED_TRACE(r.expected);
    fmhaAttentionDesc bad = desc;
    r.spoil(bad);
    EXPECT_EQ(fmhaAttentionCheck(&bad, &message), FMHA_ERROR_INVALID_ARGUMENT);
    std::string text = take(message);
    EXPECT_NE(text.find(r.expected), std::string::npos) << text;
    EXPECT_EQ(text.rfind("fmhaAttention: ", 0), 0u) << text;
  }
}

TEST(CAPI, AttentionCheckNeedsNoJitAndNamesTheValue) {
  fmhaAttentionDesc desc = getCheckedDesc();
  char *message = nullptr;
  EXPECT_EQ(fmhaAttentionCheck(&desc, &message), FMHA_SUCCESS);
  EXPECT_EQ(message, nullptr);
  expectRefusals(
      desc,
      {
          {[](fmhaAttentionDesc &d) { d.headDim = 264; },
           "headDim is 264, expected a multiple of 8 from 32 to 256"},
          {[](fmhaAttentionDesc &d) { d.kvHeads = 3; },
           "queryHeads (Hq) 4 and kvHeads (Hkv) 3"},
          {[](fmhaAttentionDesc &d) { d.vStride[2] = 12; },
           "v's row stride is 12 elements"},
          {[](fmhaAttentionDesc &d) { d.keySeq = 0; }, "keySeq (Sk) is 0"},
          {[](fmhaAttentionDesc &d) {
             d.elementType = static_cast<fmhaElementType>(FMHA_F32);
           },
           "elementType is 2, expected FMHA_BF16 (0) or FMHA_F16 (1)"},
      });
  EXPECT_EQ(fmhaAttentionCheck(nullptr, &message), FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(take(message), "fmhaAttention: desc must not be NULL");
}

// Variable-length batches (queryOffsets, keyOffsets, maxQueryLength) are
// checked without a JIT: q and o packed [querySeq, Hq, D] with batch
// strides that are not read, the offsets' alignment, the longest
// sequence's length, and key offsets only with query offsets and without
// pages.
TEST(CAPI, PackedSequencesAreCheckedWithoutAJit) {
  fmhaAttentionDesc desc = getCheckedDesc();
  alignas(16) static int offsets[8];
  // 2 sequences packed into 150 rows of q and o ([T, Hq, D]), 300 keys
  // each in k and v's entries.
  desc.querySeq = 150;
  for (long long *stride : {desc.qStride, desc.oStride}) {
    stride[0] = 0;
    stride[1] = 64;
    stride[2] = 4 * 64;
  }
  desc.queryOffsets = offsets;
  desc.maxQueryLength = 100;
  char *message = nullptr;
  EXPECT_EQ(fmhaAttentionCheck(&desc, &message), FMHA_SUCCESS) << take(message);
  expectRefusals(desc, {
                           {[](fmhaAttentionDesc &d) { d.maxQueryLength = 0; },
                            "maxQueryLength is 0, expected 1 to 2^31 - 1"},
                           {[](fmhaAttentionDesc &d) {
                              d.queryOffsets = reinterpret_cast<const int *>(
                                  reinterpret_cast<const char *>(offsets) + 2);
                            },
                            "attention: queryOffsets is at 0x"},
                           {[](fmhaAttentionDesc &d) {
                              d.queryOffsets = nullptr;
                              d.keyOffsets = offsets;
                            },
                            "the spec has key offsets but no query offsets"},
                           {[](fmhaAttentionDesc &d) {
                              d.keyOffsets = offsets;
                              d.pageTable = offsets;
                              d.pages = 4;
                              d.pageSize = 16;
                              d.keySeq = 64;
                            },
                            "the spec has key offsets and pages"},
                           {[](fmhaAttentionDesc &d) {
                              d.keyOffsets = reinterpret_cast<const int *>(
                                  reinterpret_cast<const char *>(offsets) + 1);
                            },
                            "attention: keyOffsets is at 0x"},
                           {[](fmhaAttentionDesc &d) { d.qStride[2] = 12; },
                            "q's row stride is 12 elements"},
                       });
  // Keys packed too ([keySeq, Hkv, D]), and queries over pages.
  fmhaAttentionDesc keys = desc;
  keys.keyOffsets = offsets + 4;
  for (long long *stride : {keys.kStride, keys.vStride}) {
    stride[0] = 0;
    stride[1] = 64;
    stride[2] = 2 * 64;
  }
  EXPECT_EQ(fmhaAttentionCheck(&keys, &message), FMHA_SUCCESS) << take(message);
  fmhaAttentionDesc pages = desc;
  pages.pageTable = offsets;
  pages.pages = 4;
  pages.pageSize = 16;
  pages.keySeq = 64;
  EXPECT_EQ(fmhaAttentionCheck(&pages, &message), FMHA_SUCCESS)
      << take(message);
}

// FlashCore.h: with queryOffsets "the batch strides [are] unread" (of q, o
// and lse; of k and v with keyOffsets), so any value passes.
TEST(CAPI, PackedBatchStridesAreUnread) {
  fmhaAttentionDesc desc = getCheckedDesc();
  alignas(16) static int offsets[3];
  desc.querySeq = 150;
  desc.queryOffsets = offsets;
  desc.maxQueryLength = 100;
  desc.keyOffsets = offsets;
  desc.keySeq = 500;
  for (long long *stride :
       {desc.qStride, desc.oStride, desc.kStride, desc.vStride}) {
    stride[0] = 3;
    stride[1] = 64;
    stride[2] = (stride == desc.qStride || stride == desc.oStride ? 4 : 2) * 64;
  }
  char *message = nullptr;
  EXPECT_EQ(fmhaAttentionCheck(&desc, &message), FMHA_SUCCESS) << take(message);
}

TEST(CAPI, ResampleCheckNeedsNoJit) {
  alignas(16) static float standIn[4];
  fmhaResampleStream stream = {standIn, standIn, nullptr, 10, 8};
  fmhaResampleDesc desc = {FMHA_F32, FMHA_LINEAR, 2,     5,
                           standIn,  standIn,     1,     &stream};
  char *message = nullptr;
  EXPECT_EQ(fmhaResampleCheck(&desc, &message), FMHA_SUCCESS);
  desc.mode = static_cast<fmhaResampleMode>(9);
  EXPECT_EQ(fmhaResampleCheck(&desc, &message), FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(take(message).find("mode is 9"), std::string::npos);
  desc.mode = FMHA_LINEAR;
  desc.numStreams = 0;
  EXPECT_EQ(fmhaResampleCheck(&desc, &message), FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(take(message),
            "fmhaResample: numStreams is 0, expected at least 1");
}

TEST(CAPI, UnknownCallFlagsAreRefused) {
  // Any non-NULL JIT handle: the flags are checked before it is used.
  fmhaAttentionDesc desc = getCheckedDesc();
  auto jit = reinterpret_cast<fmhaJit>(&desc);
  char *message = nullptr;
  EXPECT_EQ(fmhaAttentionEx(jit, &desc, nullptr, 8, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(take(message).find("flags is 8, expected FMHA_CALL_LOADED_ONLY"),
            std::string::npos);
}

TEST(CAPI, PrecompileNeedsAJit) {
  fmhaAttentionDesc desc = getCheckedDesc();
  char *message = nullptr;
  EXPECT_EQ(fmhaAttentionPrecompile(nullptr, &desc, 1, 0, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(take(message).find("jit and descs must not be NULL"),
            std::string::npos);
}

TEST(CAPI, OptionDefaults) {
  fmhaJitOptions options;
  fmhaJitOptionsInit(&options);
  EXPECT_EQ(options.chip, nullptr);
  EXPECT_EQ(options.cacheDirectory, nullptr);
  EXPECT_EQ(options.device, 0);
  EXPECT_EQ(options.cacheMaxBytes, 0u);
  EXPECT_EQ(options.seedDirectory, nullptr);
}

// On a machine with a GPU: compile, launch and check through the C API.
TEST(CAPI, CompilesAndLaunchesOnAGpu) {
  llvm::Expected<mlir::fmha::CudaDriver &> driver =
      mlir::fmha::CudaDriver::get();
  if (!driver)
    GTEST_SKIP() << llvm::toString(driver.takeError());
  std::string error;
  fmhaJit jit = createUncachedJit(nullptr, error);
  ASSERT_NE(jit, nullptr) << error;
  char *message = nullptr;

  const char *source = R"mlir(
    module attributes {gpu.container_module} {
      gpu.module @m {
        gpu.func @iota(%x: memref<?xi32>) kernel {
          %i = gpu.thread_id x
          %v = arith.index_cast %i : index to i32
          memref.store %v, %x[%i] : memref<?xi32>
          gpu.return
        }
      }
    })mlir";
  fmhaKernel kernel = nullptr;
  ASSERT_EQ(fmhaJitGetKernelFromSource(jit, source, "iota", &kernel, &message),
            FMHA_SUCCESS)
      << take(message);
  EXPECT_EQ(fmhaJitGetKernelFromSource(jit, source, "nope", &kernel, &message),
            FMHA_ERROR_FAILED);
  EXPECT_NE(take(message).find("cuModuleGetFunction(nope) failed"),
            std::string::npos);

  constexpr int n = 96;
  llvm::Expected<CUdeviceptr> buffer = driver->allocate(n * sizeof(int32_t));
  ASSERT_TRUE(static_cast<bool>(buffer));
  CUdeviceptr pointer = *buffer;
  int64_t offset = 0, size = n, stride = 1;
  void *arguments[] = {&pointer, &pointer, &offset, &size, &stride};
  unsigned grid[3] = {1, 1, 1}, block[3] = {n, 1, 1};
  ASSERT_EQ(
      fmhaKernelLaunch(kernel, nullptr, grid, block, 0, arguments, &message),
      FMHA_SUCCESS)
      << take(message);
  std::vector<int32_t> host(n, -1);
  ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));
  ASSERT_FALSE(static_cast<bool>(
      driver->copyToHost(host.data(), pointer, n * sizeof(int32_t))));
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(host[i], i);
  llvm::consumeError(driver->release(pointer));
  fmhaJitDestroy(jit);
}

/// The chips to run on device 0: sm_80 everywhere, and sm_90a on compute
/// capability 9.0; empty (with a failure) when the device cannot be read.
std::vector<const char *> getChipsToTest(mlir::fmha::CudaDriver &driver) {
  llvm::Expected<mlir::fmha::DeviceInfo> device = driver.getDevice(0);
  if (!device) {
    ADD_FAILURE() << llvm::toString(device.takeError());
    return {};
  }
  std::vector<const char *> chips = {"sm_80"};
  if (device->capability.major == 9 && device->capability.minor == 0)
    chips.push_back("sm_90a");
  return chips;
}

/// Reproducible inputs: a linear congruential generator, uniform in
/// [0, 1) (next) or [-1, 1) (signed).
struct Lcg {
  uint32_t state;
  float next() {
    state = state * 1664525u + 1013904223u;
    return float(state >> 8) / float(1 << 24);
  }
  float signedNext() { return next() * 2.0f - 1.0f; }
};

/// bf16 <-> f32 (round to nearest even), for inputs made on the host.
uint16_t toBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}
float fromBf16(uint16_t value) {
  uint32_t bits = uint32_t(value) << 16;
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

/// A causal GQA forward on dense [B, H, S, D] bf16 inputs made here, and
/// its o and lse by the op's definition (FmhaOps.td) computed in double:
/// logits scale * q . k (capped by softcap, where not 0), bottom-right
/// aligned causal mask, and with sinks (one per query head, where given)
/// in each row's denominator; with keyLengths (one per batch entry, where
/// given), batch b's first keyLengths[b] keys only, the mask aligned to
/// them (a row that sees no key: zeros and +inf); v and o of head dim Dv
/// (D where 0).
struct HostAttention {
  long long B, Hq, Hkv, Sq, Sk, D, Dv;
  double scale, softcap;
  std::vector<float> sinks;
  std::vector<int> keyLengths;
  std::vector<uint16_t> q, k, v;
  std::vector<double> o, lse;

  HostAttention(long long B, long long Hq, long long Hkv, long long Sq,
                long long Sk, long long D, double scale = 0, double softcap = 0,
                std::vector<float> sinks = {}, std::vector<int> keyLengths = {},
                long long Dv = 0)
      : B(B), Hq(Hq), Hkv(Hkv), Sq(Sq), Sk(Sk), D(D), Dv(Dv ? Dv : D),
        scale(scale != 0 ? scale : 1.0 / std::sqrt(double(D))),
        softcap(softcap), sinks(std::move(sinks)),
        keyLengths(std::move(keyLengths)), q(B * Hq * Sq * D),
        k(B * Hkv * Sk * D), v(B * Hkv * Sk * this->Dv),
        o(B * Hq * Sq * this->Dv), lse(B * Hq * Sq) {
    Lcg random{12345};
    for (auto *tensor : {&q, &k, &v})
      for (uint16_t &x : *tensor)
        x = toBf16(random.signedNext());
    for (long long b = 0; b < B; ++b)
      for (long long h = 0; h < Hq; ++h)
        for (long long i = 0; i < Sq; ++i)
          computeRow(b, h, i);
  }

  void computeRow(long long b, long long h, long long i) {
    long long kvh = h / (Hq / Hkv);
    const uint16_t *qi = &q[((b * Hq + h) * Sq + i) * D];
    std::vector<double> scores;
    double max = -std::numeric_limits<double>::infinity();
    long long keys = keyLengths.empty() ? Sk : keyLengths[b];
    for (long long j = 0; j < keys && j <= i + keys - Sq; ++j) {
      const uint16_t *kj = &k[((b * Hkv + kvh) * Sk + j) * D];
      double dot = 0;
      for (long long d = 0; d < D; ++d)
        dot += double(fromBf16(qi[d])) * fromBf16(kj[d]);
      double logit = dot * scale;
      if (softcap != 0)
        logit = softcap * std::tanh(logit / softcap);
      scores.push_back(logit);
      max = std::max(max, logit);
    }
    if (!sinks.empty())
      max = std::max(max, double(sinks[h]));
    if (max == -std::numeric_limits<double>::infinity()) {
      lse[(b * Hq + h) * Sq + i] = std::numeric_limits<double>::infinity();
      return; // o's row stays zero
    }
    double sum = sinks.empty() ? 0 : std::exp(sinks[h] - max);
    for (double &score : scores)
      sum += score = std::exp(score - max);
    lse[(b * Hq + h) * Sq + i] = max + std::log(sum);
    for (long long d = 0; d < Dv; ++d) {
      double out = 0;
      for (size_t j = 0; j < scores.size(); ++j)
        out += scores[j] * fromBf16(v[((b * Hkv + kvh) * Sk + j) * Dv + d]);
      o[((b * Hq + h) * Sq + i) * Dv + d] = out / sum;
    }
  }

  /// A descriptor of this problem (dense strides) on device buffers.
  fmhaAttentionDesc getDesc(void *q, void *k, void *v, void *o,
                            float *lse) const {
    fmhaAttentionDesc desc;
    fmhaAttentionDescInit(&desc);
    desc.headDim = D;
    desc.valueHeadDim = Dv == D ? 0 : Dv;
    desc.causal = 1;
    desc.batch = B;
    desc.queryHeads = Hq;
    desc.kvHeads = Hkv;
    desc.querySeq = Sq;
    desc.keySeq = Sk;
    desc.q = q;
    desc.k = k;
    desc.v = v;
    desc.o = o;
    desc.lse = lse;
    fmhaAttentionDescSetDenseStrides(&desc);
    return desc;
  }

  /// Expects the bf16 o and f32 lse read back from the device to match:
  /// a few units of o's rounding (8 bits), f32 sums in lse.
  void expectMatches(const std::vector<uint16_t> &gotO,
                     const std::vector<float> &gotLse) const {
    double outError = 0, lseError = 0;
    for (size_t i = 0; i < o.size(); ++i)
      outError = std::max(outError, std::fabs(fromBf16(gotO[i]) - o[i]));
    for (size_t i = 0; i < lse.size(); ++i)
      if (gotLse[i] != lse[i]) // +inf, for a row without keys
        lseError = std::max(lseError, std::fabs(gotLse[i] - lse[i]));
    EXPECT_LT(outError, 4.0 / 256);
    EXPECT_LT(lseError, 1e-3);
  }
};

/// Device memory that lives as long as its owner: upload copies a host
/// buffer (or, given none, allocates one), released on destruction.
struct DeviceBuffers {
  mlir::fmha::CudaDriver &driver;
  std::vector<CUdeviceptr> buffers;

  explicit DeviceBuffers(mlir::fmha::CudaDriver &driver) : driver(driver) {}
  DeviceBuffers(const DeviceBuffers &) = delete;
  DeviceBuffers &operator=(const DeviceBuffers &) = delete;
  ~DeviceBuffers() {
    for (CUdeviceptr p : buffers)
      llvm::consumeError(driver.release(p));
  }

  void *upload(const void *host, size_t bytes) {
    llvm::Expected<CUdeviceptr> buffer = driver.allocate(bytes);
    EXPECT_TRUE(static_cast<bool>(buffer));
    if (host) {
      EXPECT_FALSE(
          static_cast<bool>(driver.copyToDevice(*buffer, host, bytes)));
    }
    buffers.push_back(*buffer);
    return reinterpret_cast<void *>(*buffer);
  }
};

/// A HostAttention's inputs on the device, and its o, lse (and sinks)
/// buffers: run(jit, desc) launches a descriptor of them (getDesc, then
/// changed by the caller) and expects the host's answer.
struct DeviceAttention : DeviceBuffers {
  const HostAttention &expected;
  void *q, *k, *v, *o;
  float *lse;
  const float *sinks = nullptr;
  const int *keyLengths = nullptr;
  const int *pageTable = nullptr;
  long long pages = 0, pageSize = 0;
  /// k and v as uploaded (NaN past the key lengths).
  std::vector<uint16_t> cachedK, cachedV;
  static constexpr uint16_t kBf16NaN = 0x7fc0;

  DeviceAttention(mlir::fmha::CudaDriver &driver, const HostAttention &host)
      : DeviceBuffers(driver), expected(host), cachedK(host.k),
        cachedV(host.v) {
    q = upload(host.q.data(), host.q.size() * 2);
    // With key lengths, the keys and values past them are NaN on the
    // device: they must never reach the result.
    if (!host.keyLengths.empty()) {
      for (long long b = 0; b < host.B; ++b)
        for (long long h = 0; h < host.Hkv; ++h)
          for (long long j = host.keyLengths[b]; j < host.Sk; ++j) {
            size_t row = (b * host.Hkv + h) * host.Sk + j;
            std::fill_n(&cachedK[row * host.D], host.D, kBf16NaN);
            std::fill_n(&cachedV[row * host.Dv], host.Dv, kBf16NaN);
          }
      keyLengths = static_cast<const int *>(
          upload(host.keyLengths.data(), host.keyLengths.size() * sizeof(int)));
    }
    k = upload(cachedK.data(), cachedK.size() * 2);
    v = upload(cachedV.data(), cachedV.size() * 2);
    o = upload(nullptr, host.o.size() * 2);
    lse = static_cast<float *>(upload(nullptr, host.lse.size() * 4));
    if (!host.sinks.empty())
      sinks = static_cast<const float *>(
          upload(host.sinks.data(), host.sinks.size() * sizeof(float)));
  }

  /// Makes k and v a paged KV cache of \p rows-row pages (Sk a multiple
  /// of it): pools [pages, Hkv, rows, D] that hold each entry's pages in a
  /// shuffled order and a NaN spare page per entry that no table row lists,
  /// and the table [B, Sk / rows], whose entries of pages wholly past an
  /// entry's length are out of range (never read).
  void usePages(long long rows) {
    const HostAttention &h = expected;
    long long perSequence = h.Sk / rows;
    pageSize = rows;
    pages = h.B * (perSequence + 1);
    std::vector<int> order(pages);
    for (long long i = 0; i < pages; ++i)
      order[i] = int(i);
    Lcg random{77};
    for (long long i = pages - 1; i > 0; --i)
      std::swap(
          order[i],
          order[std::min<long long>(i, (long long)(random.next() * (i + 1)))]);
    std::vector<int> table(h.B * perSequence);
    std::vector<uint16_t> poolK(pages * h.Hkv * rows * h.D, kBf16NaN);
    std::vector<uint16_t> poolV(pages * h.Hkv * rows * h.Dv, kBf16NaN);
    for (long long b = 0; b < h.B; ++b)
      for (long long j = 0; j < perSequence; ++j) {
        long long page = order[b * perSequence + j];
        for (long long kvh = 0; kvh < h.Hkv; ++kvh)
          for (long long r = 0; r < rows; ++r) {
            size_t from = (b * h.Hkv + kvh) * h.Sk + j * rows + r;
            size_t to = (page * h.Hkv + kvh) * rows + r;
            std::copy_n(&cachedK[from * h.D], h.D, &poolK[to * h.D]);
            std::copy_n(&cachedV[from * h.Dv], h.Dv, &poolV[to * h.Dv]);
          }
        bool used = h.keyLengths.empty() || j * rows < h.keyLengths[b];
        table[b * perSequence + j] = used ? int(page) : -1000000;
      }
    k = upload(poolK.data(), poolK.size() * 2);
    v = upload(poolV.data(), poolV.size() * 2);
    pageTable = static_cast<const int *>(
        upload(table.data(), table.size() * sizeof(int)));
  }

  fmhaAttentionDesc getDesc() const {
    fmhaAttentionDesc desc = expected.getDesc(q, k, v, o, lse);
    desc.sinks = sinks;
    desc.keyLengths = keyLengths;
    if (pageTable) {
      const HostAttention &h = expected;
      desc.pageTable = pageTable;
      desc.pages = pages;
      desc.pageSize = pageSize;
      for (auto [stride, headDim] :
           {std::pair{desc.kStride, h.D}, {desc.vStride, h.Dv}}) {
        stride[0] = h.Hkv * pageSize * headDim;
        stride[1] = pageSize * headDim;
        stride[2] = headDim;
      }
    }
    return desc;
  }

  void run(fmhaJit jit, const fmhaAttentionDesc &desc) {
    char *message = nullptr;
    ASSERT_EQ(fmhaAttention(jit, &desc, nullptr, &message), FMHA_SUCCESS)
        << take(message);
    ASSERT_FALSE(static_cast<bool>(driver.synchronize(nullptr)));
    std::vector<uint16_t> gotO(expected.o.size());
    std::vector<float> gotLse(expected.lse.size());
    ASSERT_FALSE(static_cast<bool>(driver.copyToHost(
        gotO.data(), reinterpret_cast<CUdeviceptr>(o), gotO.size() * 2)));
    ASSERT_FALSE(static_cast<bool>(driver.copyToHost(
        gotLse.data(), reinterpret_cast<CUdeviceptr>(lse), gotLse.size() * 4)));
    expected.expectMatches(gotO, gotLse);
  }

  /// Runs \p desc as it is, then, where the call would split its keys
  /// (decode with SMs to spare), again with the workspace that lets it;
  /// returns that workspace's size (0: it would not split).
  size_t runUnsplitAndSplit(fmhaJit jit, fmhaAttentionDesc desc) {
    char *message = nullptr;
    size_t workspaceBytes = 0;
    EXPECT_EQ(fmhaAttentionWorkspaceSize(jit, &desc, &workspaceBytes, &message),
              FMHA_SUCCESS)
        << take(message);
    run(jit, desc);
    if (workspaceBytes) {
      desc.workspace = upload(nullptr, workspaceBytes);
      desc.workspaceBytes = workspaceBytes;
      run(jit, desc);
    }
    return workspaceBytes;
  }
};

/// The GPU tests of fmhaAttention against HostAttention: skipped without a
/// driver; the chips to run (getChipsToTest), and a JIT that keeps the
/// device's context current for the buffers the test makes before its own
/// JITs (run alone, no earlier test has).
class CAPIOnAGpu : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::Expected<mlir::fmha::CudaDriver &> found =
        mlir::fmha::CudaDriver::get();
    if (!found)
      GTEST_SKIP() << llvm::toString(found.takeError());
    driver = &*found;
    chips = getChipsToTest(*driver);
    std::string error;
    holder = createUncachedJit(nullptr, error);
    ASSERT_NE(holder, nullptr) << error;
  }
  void TearDown() override {
    if (holder)
      fmhaJitDestroy(holder);
  }

  /// fmhaAttention over KV caches of \p Sk positions filled to 0, 1, 129,
  /// 1000 and Sk keys (B = 5, GQA 8:2, d128; in pages of \p pageRows rows
  /// where not 0, DeviceAttention::usePages), causal prefill (77 queries)
  /// and decode (folded, and split with a workspace), against the host on
  /// each chip; the backward refuses
  /// such a forward, naming its key lengths, or without them its pages.
  void expectKvCacheMatchesTheHost(long long Sk, long long pageRows) {
    std::string error;
    std::vector<int> keyLengths = {0, 1, 129, 1000, int(Sk)};
    for (long long Sq : {77LL, 1LL}) {
      SCOPED_TRACE("Sq = " + std::to_string(Sq) + ", pages of " +
                   std::to_string(pageRows) + " rows");
      HostAttention expected(/*B=*/5, /*Hq=*/8, /*Hkv=*/2, Sq, Sk,
                             /*D=*/128, 0, 0, {}, keyLengths);
      DeviceAttention device(*driver, expected);
      if (pageRows)
        device.usePages(pageRows);
      for (const char *chip : chips) {
        SCOPED_TRACE(chip);
        fmhaJit jit = createUncachedJit(chip, error);
        ASSERT_NE(jit, nullptr) << error;
        fmhaAttentionDesc desc = device.getDesc();
        EXPECT_EQ(device.runUnsplitAndSplit(jit, desc) != 0, Sq == 1)
            << "decode splits its keys; 77 queries of GQA 4:1 neither "
               "pack (3 packed tiles against 4) nor split";

        char *message = nullptr;
        fmhaAttentionBackwardDesc grad{};
        grad.forward = desc;
        if (pageRows)
          grad.forward.keyLengths = nullptr;
        EXPECT_EQ(fmhaAttentionBackward(jit, &grad, nullptr, FMHA_CALL_DEFAULT,
                                        &message),
                  FMHA_ERROR_INVALID_ARGUMENT);
        EXPECT_NE(take(message).find(pageRows ? "the forward has pages"
                                              : "the forward has key lengths"),
                  std::string::npos);
        fmhaJitDestroy(jit);
      }
    }
  }

  mlir::fmha::CudaDriver *driver = nullptr;
  std::vector<const char *> chips;
  fmhaJit holder = nullptr;
};

// On a machine with a GPU: fmhaAttention for each chip the device runs,
// causal GQA with LSE at sizes that are no multiple of any tile, against
// attention computed here in double; and bad descriptions refused with the
// offending value.
TEST_F(CAPIOnAGpu, AttentionMatchesTheHost) {

  constexpr long long B = 2, Hq = 4, Sq = 77, D = 64;
  HostAttention expected(B, Hq, /*Hkv=*/2, Sq, /*Sk=*/130, D);
  const std::vector<uint16_t> &q = expected.q, &k = expected.k, &v = expected.v;
  size_t qCount = q.size();

  auto upload = [&](const std::vector<uint16_t> &host) {
    llvm::Expected<CUdeviceptr> buffer = driver->allocate(host.size() * 2);
    EXPECT_TRUE(static_cast<bool>(buffer));
    EXPECT_FALSE(static_cast<bool>(
        driver->copyToDevice(*buffer, host.data(), host.size() * 2)));
    return *buffer;
  };
  CUdeviceptr dq = upload(q), dk = upload(k), dv = upload(v);
  CUdeviceptr dout = upload(std::vector<uint16_t>(qCount));
  llvm::Expected<CUdeviceptr> dlse = driver->allocate(B * Hq * Sq * 4);
  ASSERT_TRUE(static_cast<bool>(dlse));
  auto pointer = [](CUdeviceptr p) { return reinterpret_cast<void *>(p); };

  for (const char *chip : chips) {
    SCOPED_TRACE(chip);
    std::string error;
    fmhaJit jit = createUncachedJit(chip, error);
    ASSERT_NE(jit, nullptr) << error;
    char *message = nullptr;

    fmhaAttentionDesc desc =
        expected.getDesc(pointer(dq), pointer(dk), pointer(dv), pointer(dout),
                         static_cast<float *>(pointer(*dlse)));
    ASSERT_EQ(fmhaAttention(jit, &desc, nullptr, &message), FMHA_SUCCESS)
        << take(message);
    ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));
    std::vector<uint16_t> out(qCount);
    std::vector<float> lse(B * Hq * Sq);
    ASSERT_FALSE(static_cast<bool>(
        driver->copyToHost(out.data(), dout, qCount * 2)));
    ASSERT_FALSE(static_cast<bool>(
        driver->copyToHost(lse.data(), *dlse, lse.size() * 4)));
    expected.expectMatches(out, lse);

    // Refused before any launch, naming the value.
    fmhaAttentionDesc bad = desc;
    bad.kvHeads = 3;
    EXPECT_EQ(fmhaAttention(jit, &bad, nullptr, &message),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(take(message).find("queryHeads (Hq) 4 and kvHeads (Hkv) 3"),
              std::string::npos);
    bad = desc;
    bad.k = static_cast<const char *>(desc.k) + 2;
    EXPECT_EQ(fmhaAttention(jit, &bad, nullptr, &message),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(take(message).find("expected a 16-byte aligned address"),
              std::string::npos);
    bad = desc;
    bad.lse = nullptr;
    bad.elementType = static_cast<fmhaElementType>(7);
    EXPECT_EQ(fmhaAttention(jit, &bad, nullptr, &message),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(take(message).find("elementType is 7"), std::string::npos);

    // Inside CUDA graph capture a call may only launch: a kernel not loaded
    // yet (another scale) is refused, and loaded by a prepare-only call,
    // which launches nothing; then the loaded-only call runs.
    fmhaAttentionDesc other = desc;
    other.scale = 0.25f;
    EXPECT_EQ(fmhaAttentionEx(jit, &other, nullptr, FMHA_CALL_LOADED_ONLY,
                              &message),
              FMHA_ERROR_NOT_LOADED);
    EXPECT_NE(take(message).find("is not loaded"), std::string::npos);
    EXPECT_EQ(fmhaAttentionEx(jit, &other, nullptr, FMHA_CALL_PREPARE_ONLY,
                              &message),
              FMHA_SUCCESS)
        << take(message);
    EXPECT_EQ(fmhaAttentionEx(jit, &other, nullptr, FMHA_CALL_LOADED_ONLY,
                              &message),
              FMHA_SUCCESS)
        << take(message);
    ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));

    // A precompiled description launches with FMHA_CALL_LOADED_ONLY; a bad
    // one is refused by its index before anything compiles.
    fmhaAttentionDesc variants[2] = {desc, desc};
    variants[0].scale = 0.5f;
    variants[1].scale = 0.5f;
    variants[1].causal = 1;
    variants[1].querySeq = 0; // every query length
    EXPECT_EQ(fmhaAttentionPrecompile(jit, variants, 2, 2, &message),
              FMHA_SUCCESS)
        << take(message);
    for (const fmhaAttentionDesc &variant : variants) {
      fmhaAttentionDesc launched = desc;
      launched.scale = variant.scale;
      launched.causal = variant.causal;
      EXPECT_EQ(fmhaAttentionEx(jit, &launched, nullptr,
                                FMHA_CALL_LOADED_ONLY, &message),
                FMHA_SUCCESS)
          << take(message);
    }
    variants[1].headDim = 90;
    EXPECT_EQ(fmhaAttentionPrecompile(jit, variants, 2, 0, &message),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(take(message).find("descs[1]: attention: headDim is 90"),
              std::string::npos);
    ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));
    fmhaJitDestroy(jit);
  }
  for (CUdeviceptr p : {dq, dk, dv, dout, *dlse})
    llvm::consumeError(driver->release(p));
}

// On a machine with a GPU, for each chip the device runs: logit
// softcapping at a head dim that is not 64, 128 or 256 (96: tiles of 128
// columns), with a scale of 1 so that the cap of 2 bends most logits;
// against the host (its backward: python_check against torch's autograd).
TEST_F(CAPIOnAGpu, SoftcapAtHeadDim96MatchesTheHost) {
  std::string error;

  HostAttention expected(/*B=*/2, /*Hq=*/4, /*Hkv=*/2, /*Sq=*/77, /*Sk=*/130,
                         /*D=*/96, /*scale=*/1.0, /*softcap=*/2.0);
  DeviceAttention device(*driver, expected);
  for (const char *chip : chips) {
    SCOPED_TRACE(chip);
    fmhaJit jit = createUncachedJit(chip, error);
    ASSERT_NE(jit, nullptr) << error;
    fmhaAttentionDesc desc = device.getDesc();
    desc.scale = 1.0f;
    desc.softcap = 2.0f;
    device.run(jit, desc);
    fmhaJitDestroy(jit);
  }
}

// On a machine with a GPU, for each chip the device runs: attention sinks
// (one at 8, which takes most of its rows' weight) on a causal GQA problem
// and on GQA decode (one query: folded, and with a workspace split over
// CTAs, split 0 adding the sinks), against the host.
TEST_F(CAPIOnAGpu, SinksMatchTheHost) {
  std::string error;

  std::vector<float> sinks = {-1.0f, 0.5f, 2.0f, 8.0f, 0.0f, -3.0f, 1.0f, 4.0f};
  for (long long Sq : {77LL, 1LL}) {
    SCOPED_TRACE("Sq = " + std::to_string(Sq));
    HostAttention expected(/*B=*/2, /*Hq=*/8, /*Hkv=*/2, Sq, /*Sk=*/1300,
                           /*D=*/128, 0, 0, sinks);
    DeviceAttention device(*driver, expected);
    for (const char *chip : chips) {
      SCOPED_TRACE(chip);
      fmhaJit jit = createUncachedJit(chip, error);
      ASSERT_NE(jit, nullptr) << error;
      size_t workspaceBytes = device.runUnsplitAndSplit(jit, device.getDesc());
      EXPECT_EQ(workspaceBytes != 0, Sq == 1)
          << "decode splits its keys; 77 queries of GQA 4:1 neither pack "
             "(3 packed tiles against 4) nor split";
      fmhaJitDestroy(jit);
    }
  }
}

// On a machine with a GPU, for each chip the device runs: a KV cache's
// filled lengths (0, 1, one past a key block, part of a block, full) on
// causal GQA prefill (77 queries: rows before a short cache's first key see
// none) and on decode (folded, and split over CTAs with a workspace), NaN
// in the cache past each length; against the host. The backward refuses
// key lengths by name.
// v's head dim apart from q's (DeepSeek's 192/128, a narrow q beside a
// wide v) and head dims of 8 mod 16 (the last k step of Q K^T half past D,
// an odd count of P V's n8 tiles): prefill and decode (folded, and split:
// the merge of states of v's head dim), over key lengths, decode over
// pages, on each chip; the backward refuses each forward by name.
TEST_F(CAPIOnAGpu, HeadDimsApartAndOf8MatchTheHost) {
  std::string error;
  for (auto [D, Dv] : {std::pair{192LL, 128LL},
                       {64LL, 256LL},
                       {40LL, 40LL},
                       {72LL, 72LL},
                       {88LL, 56LL}})
    for (long long Sq : {77LL, 1LL}) {
      SCOPED_TRACE("d" + std::to_string(D) + " dv" + std::to_string(Dv) +
                   " Sq = " + std::to_string(Sq));
      HostAttention expected(/*B=*/3, /*Hq=*/8, /*Hkv=*/2, Sq, /*Sk=*/1024, D,
                             0, 0, {}, {1, 300, 1024}, Dv);
      DeviceAttention device(*driver, expected);
      if (Sq == 1)
        device.usePages(64);
      for (const char *chip : chips) {
        SCOPED_TRACE(chip);
        fmhaJit jit = createUncachedJit(chip, error);
        ASSERT_NE(jit, nullptr) << error;
        fmhaAttentionDesc desc = device.getDesc();
        device.runUnsplitAndSplit(jit, desc);

        char *message = nullptr;
        fmhaAttentionBackwardDesc grad{};
        grad.forward = desc;
        grad.forward.keyLengths = nullptr;
        grad.forward.pageTable = nullptr;
        EXPECT_EQ(fmhaAttentionBackward(jit, &grad, nullptr, FMHA_CALL_DEFAULT,
                                        &message),
                  FMHA_ERROR_INVALID_ARGUMENT);
        // Named by v's head dim, or by q's where it has no backward at all.
        std::string refusal = D == 64 ? "valueHeadDim is " + std::to_string(Dv)
                                      : "headDim is " + std::to_string(D);
        EXPECT_NE(take(message).find(refusal), std::string::npos) << refusal;
        fmhaJitDestroy(jit);
      }
    }
}

TEST_F(CAPIOnAGpu, KeyLengthsMatchTheHost) {
  expectKvCacheMatchesTheHost(/*Sk=*/1300, /*pageRows=*/0);
}

// The same over a paged KV cache (pages of 16 and 64 rows, shuffled, a NaN
// spare page each, the table's entries past a length out of range). The
// backward refuses pages by name.
TEST_F(CAPIOnAGpu, PagedCachesMatchTheHost) {
  for (long long rows : {16LL, 64LL})
    expectKvCacheMatchesTheHost(/*Sk=*/1344, rows);
}

/// The mask of a HostVarlenAttention: none, causal, or a window (left,
/// right) without causal.
struct VarlenMask {
  bool causal = false;
  std::optional<std::pair<long long, long long>> window;
  std::string name() const {
    if (window)
      return "window " + std::to_string(window->first) + "," +
             std::to_string(window->second);
    return causal ? "causal" : "no mask";
  }
};

/// A variable-length batch (FlashAttention's varlen API): sequence b has
/// queryLengths[b] queries and keyLengths[b] keys. q and o are packed
/// [Tq, Hq, D] (FlashAttention's [total_q, Hq, D]) and lse [Hq, Tq], Tq
/// kSpareRows rows past the last sequence; k and v are packed [Tk, Hkv, D]
/// too (packedKeys: keyOffsets), or hold a batch entry per sequence
/// [B, Hkv, Sk, D] of which the desc's keyLengths keep each sequence's.
/// With keyLimits (packed keys only), the desc's keyLengths keep the first
/// keyLimits[b] of sequence b's keys. q, k and v hold NaN wherever no
/// sequence's (kept) row is. o and lse by the op's definition for each
/// sequence on its own (its Sq and kept Sk; masks bottom-right aligned to
/// them; a row that sees no key: zeros and +inf), in double.
struct HostVarlenAttention {
  std::vector<int> queryLengths, keyLengths, keyLimits;
  long long B, Hq, Hkv, D;
  bool packedKeys;
  VarlenMask mask;
  std::vector<int> queryOffsets = {0}, keyOffsets = {0};
  long long Tq, Tk, Sk, maxQueryLength = 0;
  std::vector<uint16_t> q, k, v;
  std::vector<double> o, lse;
  static constexpr long long kSpareRows = 7;
  static constexpr uint16_t kBf16NaN = 0x7fc0;

  HostVarlenAttention(std::vector<int> queryLengths,
                      std::vector<int> keyLengths, long long Hq, long long Hkv,
                      long long D, bool packedKeys, VarlenMask mask,
                      std::vector<int> keyLimits = {})
      : queryLengths(std::move(queryLengths)),
        keyLengths(std::move(keyLengths)), keyLimits(std::move(keyLimits)),
        B(this->queryLengths.size()), Hq(Hq), Hkv(Hkv), D(D),
        packedKeys(packedKeys), mask(std::move(mask)) {
    int longestKeys = 0;
    for (long long b = 0; b < B; ++b) {
      queryOffsets.push_back(queryOffsets.back() + this->queryLengths[b]);
      keyOffsets.push_back(keyOffsets.back() + this->keyLengths[b]);
      maxQueryLength =
          std::max<long long>(maxQueryLength, this->queryLengths[b]);
      longestKeys = std::max(longestKeys, this->keyLengths[b]);
    }
    Tq = queryOffsets.back() + kSpareRows;
    Sk = longestKeys + kSpareRows;
    Tk = packedKeys ? keyOffsets.back() + kSpareRows : B * Sk;
    q.assign(Tq * Hq * D, kBf16NaN);
    k.assign(Tk * Hkv * D, kBf16NaN);
    v = k;
    Lcg random{2024};
    for (long long b = 0; b < B; ++b) {
      for (long long i = 0; i < this->queryLengths[b]; ++i)
        for (long long h = 0; h < Hq; ++h)
          for (long long d = 0; d < D; ++d)
            q[queryAt(b, i, h) + d] = toBf16(random.signedNext());
      for (long long j = 0; j < keptKeys(b); ++j)
        for (long long h = 0; h < Hkv; ++h)
          for (long long d = 0; d < D; ++d) {
            k[keyAt(b, j, h) + d] = toBf16(random.signedNext());
            v[keyAt(b, j, h) + d] = toBf16(random.signedNext());
          }
    }
    o.assign(q.size(), 0.0);
    lse.assign(Hq * Tq, 0.0);
    for (long long b = 0; b < B; ++b)
      for (long long h = 0; h < Hq; ++h)
        for (long long i = 0; i < this->queryLengths[b]; ++i)
          computeRow(b, h, i);
  }

  /// The keys sequence \p b attends to: its own, or its limit's first.
  long long keptKeys(long long b) const {
    return keyLimits.empty() ? keyLengths[b]
                             : std::min(keyLengths[b], keyLimits[b]);
  }
  /// The desc's keyLengths: the limits, or per sequence entry its keys.
  const std::vector<int> *getKeyLengthsOperand() const {
    if (!keyLimits.empty())
      return &keyLimits;
    return packedKeys ? nullptr : &keyLengths;
  }

  /// Where row \p i of sequence \p b, head \p h starts in q and o; key
  /// \p j's in k and v; the row's lse.
  size_t queryAt(long long b, long long i, long long h) const {
    return ((queryOffsets[b] + i) * Hq + h) * D;
  }
  size_t keyAt(long long b, long long j, long long h) const {
    if (packedKeys)
      return ((keyOffsets[b] + j) * Hkv + h) * D;
    return ((b * Hkv + h) * Sk + j) * D;
  }
  size_t lseAt(long long b, long long i, long long h) const {
    return h * Tq + queryOffsets[b] + i;
  }

  void computeRow(long long b, long long h, long long i) {
    long long kvh = h / (Hq / Hkv);
    long long keys = keptKeys(b);
    // Query i's diagonal: the key it is aligned to (bottom-right).
    long long diagonal = i + keys - queryLengths[b];
    long long first = 0, last = keys - 1;
    if (mask.causal)
      last = std::min(last, diagonal);
    if (mask.window) {
      first = std::max(first, diagonal - mask.window->first);
      last = std::min(last, diagonal + mask.window->second);
    }
    const uint16_t *qi = &q[queryAt(b, i, h)];
    std::vector<double> scores;
    double max = -std::numeric_limits<double>::infinity();
    double scale = 1.0 / std::sqrt(double(D));
    for (long long j = first; j <= last; ++j) {
      const uint16_t *kj = &k[keyAt(b, j, kvh)];
      double dot = 0;
      for (long long d = 0; d < D; ++d)
        dot += double(fromBf16(qi[d])) * fromBf16(kj[d]);
      scores.push_back(dot * scale);
      max = std::max(max, scores.back());
    }
    if (scores.empty()) {
      lse[lseAt(b, i, h)] = std::numeric_limits<double>::infinity();
      return; // o's row stays zero
    }
    double sum = 0;
    for (double &score : scores)
      sum += score = std::exp(score - max);
    lse[lseAt(b, i, h)] = max + std::log(sum);
    for (long long d = 0; d < D; ++d) {
      double out = 0;
      for (size_t j = 0; j < scores.size(); ++j)
        out += scores[j] * fromBf16(v[keyAt(b, first + j, kvh) + d]);
      o[queryAt(b, i, h) + d] = out / sum;
    }
  }
};

/// A HostVarlenAttention's inputs on the device, its offsets (and key
/// lengths), and o and lse filled with sentinels (refill) that the rows
/// past the last sequence must keep. o and lse lie kGuardRows rows into
/// buffers with as many sentinel rows after them, which no launch may
/// write.
struct DeviceVarlenAttention : DeviceBuffers {
  const HostVarlenAttention &expected;
  void *q, *k, *v, *o, *oBuffer;
  float *lse, *lseBuffer;
  const int *queryOffsets, *keyOffsets = nullptr, *keyLengths = nullptr;
  /// A bf16 NaN of a payload the kernels never make, and an lse no row has.
  static constexpr uint16_t kOutSentinel = 0x7fa5;
  static constexpr float kLseSentinel = -1234.5f;
  static constexpr long long kGuardRows = 64;

  DeviceVarlenAttention(mlir::fmha::CudaDriver &driver,
                        const HostVarlenAttention &host)
      : DeviceBuffers(driver), expected(host) {
    q = upload(host.q.data(), host.q.size() * 2);
    k = upload(host.k.data(), host.k.size() * 2);
    v = upload(host.v.data(), host.v.size() * 2);
    oBuffer = upload(nullptr, getOutElements() * 2);
    o = static_cast<char *>(oBuffer) + kGuardRows * host.Hq * host.D * 2;
    lseBuffer = static_cast<float *>(upload(nullptr, getLseElements() * 4));
    lse = lseBuffer + kGuardRows;
    queryOffsets = static_cast<const int *>(upload(
        host.queryOffsets.data(), host.queryOffsets.size() * sizeof(int)));
    if (host.packedKeys)
      keyOffsets = static_cast<const int *>(
          upload(host.keyOffsets.data(), host.keyOffsets.size() * sizeof(int)));
    if (const std::vector<int> *lengths = host.getKeyLengthsOperand())
      keyLengths = static_cast<const int *>(
          upload(lengths->data(), lengths->size() * sizeof(int)));
  }

  /// o's buffer: the guard rows, [Tq, Hq, D], the guard rows; lse's: each
  /// head's Tq rows with kGuardRows before the first and after the last.
  size_t getOutElements() const {
    return (expected.Tq + 2 * kGuardRows) * expected.Hq * expected.D;
  }
  size_t getLseElements() const {
    return expected.Hq * expected.Tq + 2 * kGuardRows;
  }

  /// Fills o's and lse's buffers with the sentinels.
  void refill() {
    std::vector<uint16_t> out(getOutElements(), kOutSentinel);
    std::vector<float> rows(getLseElements(), kLseSentinel);
    EXPECT_FALSE(static_cast<bool>(driver.copyToDevice(
        reinterpret_cast<CUdeviceptr>(oBuffer), out.data(), out.size() * 2)));
    EXPECT_FALSE(static_cast<bool>(
        driver.copyToDevice(reinterpret_cast<CUdeviceptr>(lseBuffer),
                            rows.data(), rows.size() * 4)));
  }

  /// The packed layout's desc: q, o [Tq, Hq, D] and lse [Hq, Tq] with
  /// batch strides 0 (unread), k and v [Tk, Hkv, D] or [B, Hkv, Sk, D].
  fmhaAttentionDesc getDesc() const {
    const HostVarlenAttention &h = expected;
    fmhaAttentionDesc desc;
    fmhaAttentionDescInit(&desc);
    desc.headDim = h.D;
    desc.causal = h.mask.causal;
    if (h.mask.window) {
      desc.hasWindow = 1;
      desc.windowLeft = h.mask.window->first;
      desc.windowRight = h.mask.window->second;
    }
    desc.batch = h.B;
    desc.queryHeads = h.Hq;
    desc.kvHeads = h.Hkv;
    desc.querySeq = h.Tq;
    desc.keySeq = h.packedKeys ? h.Tk : h.Sk;
    desc.q = q;
    desc.k = k;
    desc.v = v;
    desc.o = o;
    desc.lse = lse;
    for (long long *stride : {desc.qStride, desc.oStride}) {
      stride[0] = 0;
      stride[1] = h.D;
      stride[2] = h.Hq * h.D;
    }
    desc.lseStride[0] = 0;
    desc.lseStride[1] = h.Tq;
    desc.lseStride[2] = 1;
    for (long long *stride : {desc.kStride, desc.vStride}) {
      stride[0] = h.packedKeys ? 0 : h.Hkv * h.Sk * h.D;
      stride[1] = h.packedKeys ? h.D : h.Sk * h.D;
      stride[2] = h.packedKeys ? h.Hkv * h.D : h.D;
    }
    desc.queryOffsets = queryOffsets;
    desc.keyOffsets = keyOffsets;
    desc.keyLengths = keyLengths;
    desc.maxQueryLength = h.maxQueryLength;
    return desc;
  }

  /// Reads back o's and lse's buffers after \p desc ran (with \p flags)
  /// on sentinel-filled ones; false where the launch failed.
  bool launch(fmhaJit jit, const fmhaAttentionDesc &desc, unsigned flags,
              std::vector<uint16_t> &gotO, std::vector<float> &gotLse) {
    refill();
    char *message = nullptr;
    fmhaStatus status = fmhaAttentionEx(jit, &desc, nullptr, flags, &message);
    EXPECT_EQ(status, FMHA_SUCCESS) << take(message);
    if (status != FMHA_SUCCESS)
      return false;
    llvm::Error err = driver.synchronize(nullptr);
    if (err) {
      ADD_FAILURE() << llvm::toString(std::move(err));
      return false;
    }
    gotO.resize(getOutElements());
    gotLse.resize(getLseElements());
    EXPECT_FALSE(static_cast<bool>(driver.copyToHost(
        gotO.data(), reinterpret_cast<CUdeviceptr>(oBuffer), gotO.size() * 2)));
    EXPECT_FALSE(static_cast<bool>(driver.copyToHost(
        gotLse.data(), reinterpret_cast<CUdeviceptr>(lseBuffer),
        gotLse.size() * 4)));
    return true;
  }

  /// Expects o's and lse's buffers to hold their sentinels outside o and
  /// lse, and in them from row \p firstUnwritten on.
  void expectUntouchedFrom(const std::vector<uint16_t> &gotO,
                           const std::vector<float> &gotLse,
                           long long firstUnwritten) const {
    const HostVarlenAttention &h = expected;
    size_t rowElements = h.Hq * h.D, touched = 0;
    size_t unwritten = (kGuardRows + firstUnwritten) * rowElements;
    size_t end = (kGuardRows + h.Tq) * rowElements;
    for (size_t i = 0; i < gotO.size(); ++i)
      if (i < kGuardRows * rowElements || i >= unwritten)
        touched += gotO[i] != kOutSentinel;
    EXPECT_EQ(touched, 0u) << "elements of o's buffer written outside its "
                              "sequences' rows (o ends at element "
                           << end << ")";
    touched = 0;
    for (size_t i = 0; i < gotLse.size(); ++i) {
      long long row = static_cast<long long>(i) - kGuardRows;
      bool inside =
          row >= 0 && row < h.Hq * h.Tq && row % h.Tq < firstUnwritten;
      touched += !inside && gotLse[i] != kLseSentinel;
    }
    EXPECT_EQ(touched, 0u) << "elements of lse's buffer written outside its "
                              "sequences' rows";
  }

  /// Launches \p desc (with \p flags) on sentinel-filled o and lse, and
  /// expects each sequence's rows to match the host and every other
  /// element of their buffers to keep its sentinel.
  void run(fmhaJit jit, const fmhaAttentionDesc &desc,
           unsigned flags = FMHA_CALL_DEFAULT) {
    const HostVarlenAttention &h = expected;
    std::vector<uint16_t> gotO;
    std::vector<float> gotLse;
    if (!launch(jit, desc, flags, gotO, gotLse))
      return;
    for (long long b = 0; b < h.B; ++b) {
      SCOPED_TRACE("sequence " + std::to_string(b) + " (Sq " +
                   std::to_string(h.queryLengths[b]) + ", Sk " +
                   std::to_string(h.keptKeys(b)) + ")");
      double outError = 0, lseError = 0;
      for (long long i = 0; i < h.queryLengths[b]; ++i)
        for (long long head = 0; head < h.Hq; ++head) {
          size_t at = h.queryAt(b, i, head);
          size_t got = at + kGuardRows * h.Hq * h.D;
          for (long long d = 0; d < h.D; ++d)
            outError = std::max(
                outError, std::fabs(fromBf16(gotO[got + d]) - h.o[at + d]));
          size_t row = h.lseAt(b, i, head);
          float gotRow = gotLse[kGuardRows + row];
          if (gotRow != h.lse[row]) // +inf, for a row without keys
            lseError = std::max(lseError, std::fabs(gotRow - h.lse[row]));
        }
      EXPECT_LT(outError, 4.0 / 256); // NaN fails too
      EXPECT_LT(lseError, 1e-3);
    }
    expectUntouchedFrom(gotO, gotLse, h.queryOffsets.back());
  }
};

/// fmhaAttention of HostVarlenAttentions of \p queryLengths and
/// \p keyLengths (GQA \p Hq : \p Hkv, head dim \p D; k and v packed or per
/// sequence; \p keyLimits where given), with each of \p masks, on each
/// chip, against the host: with maxQueryLength the longest sequence's and
/// larger (more row blocks, none computed past a sequence), and after
/// fmhaAttentionPrecompile of the desc, launched with
/// FMHA_CALL_LOADED_ONLY. Without maxKeyLength packed keys split none (no
/// workspace); with it, decode (one query per sequence) on sm_90a splits
/// each sequence's keys, and its merge writes the sequences' rows only.
/// The backward refuses packed sequences by name.
void expectVarlenMatchesTheHost(mlir::fmha::CudaDriver &driver,
                                const std::vector<const char *> &chips,
                                std::vector<int> queryLengths,
                                std::vector<int> keyLengths, long long Hq,
                                long long Hkv, long long D, bool packedKeys,
                                std::vector<VarlenMask> masks,
                                std::vector<int> keyLimits = {}) {
  std::string error;
  for (const VarlenMask &mask : masks) {
    SCOPED_TRACE(
        mask.name() + (packedKeys ? ", keys packed" : ", keys per sequence") +
        (keyLimits.empty() ? "" : " and limited") + ", d" + std::to_string(D));
    HostVarlenAttention expected(queryLengths, keyLengths, Hq, Hkv, D,
                                 packedKeys, mask, keyLimits);
    DeviceVarlenAttention device(driver, expected);
    for (const char *chip : chips) {
      SCOPED_TRACE(chip);
      fmhaJit jit = createUncachedJit(chip, error);
      ASSERT_NE(jit, nullptr) << error;
      fmhaAttentionDesc desc = device.getDesc();
      char *message = nullptr;
      ASSERT_EQ(fmhaAttentionCheck(&desc, &message), FMHA_SUCCESS)
          << take(message);
      EXPECT_EQ(
          fmhaAttentionEx(jit, &desc, nullptr, FMHA_CALL_LOADED_ONLY, &message),
          FMHA_ERROR_NOT_LOADED);
      take(message);
      EXPECT_EQ(fmhaAttentionPrecompile(jit, &desc, 1, 0, &message),
                FMHA_SUCCESS)
          << take(message);
      device.run(jit, desc, FMHA_CALL_LOADED_ONLY);
      size_t workspaceBytes = 1;
      EXPECT_EQ(
          fmhaAttentionWorkspaceSize(jit, &desc, &workspaceBytes, &message),
          FMHA_SUCCESS)
          << take(message);
      if (packedKeys) {
        EXPECT_EQ(workspaceBytes, 0u)
            << "packed keys of unknown length split no keys";
      }
      desc.maxKeyLength =
          *std::max_element(keyLengths.begin(), keyLengths.end());
      ASSERT_EQ(
          fmhaAttentionWorkspaceSize(jit, &desc, &workspaceBytes, &message),
          FMHA_SUCCESS)
          << take(message);
      bool splits = std::string(chip) == "sm_90a" &&
                    expected.maxQueryLength == 1 && desc.maxKeyLength > 512;
      EXPECT_EQ(workspaceBytes > 0, splits) << workspaceBytes;
      if (workspaceBytes) {
        SCOPED_TRACE("keys split, " + std::to_string(workspaceBytes) +
                     " bytes of workspace");
        desc.workspace = device.upload(nullptr, workspaceBytes);
        desc.workspaceBytes = workspaceBytes;
        device.run(jit, desc);
      }
      desc.maxQueryLength = expected.maxQueryLength + 300;
      device.run(jit, desc);

      fmhaAttentionBackwardDesc grad{};
      grad.forward = device.getDesc();
      grad.forward.keyLengths = nullptr;
      EXPECT_EQ(fmhaAttentionBackward(jit, &grad, nullptr, FMHA_CALL_DEFAULT,
                                      &message),
                FMHA_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(take(message).find("the forward has query offsets"),
                std::string::npos);
      fmhaJitDestroy(jit);
    }
  }
}

/// Ragged sequences, empty ones included: single rows, rows past a 128-row
/// block, more queries than keys (causal rows that see no key), a sequence
/// without keys.
const std::vector<int> kVarlenQueries = {5, 0, 1, 130, 77, 40, 260, 3};
const std::vector<int> kVarlenKeys = {9, 3, 1, 300, 77, 17, 260, 0};

// On a machine with a GPU, for each chip the device runs: a variable-length
// batch (FlashAttention's cu_seqlens) of kVarlenQueries over kVarlenKeys, q,
// k, v and o packed in the [T, H, D] layout with NaN rows past the last
// sequence, GQA 4:2, d128, without a mask, causal and with a window;
// against the host per sequence, nothing written outside the sequences'
// rows of o and lse.
TEST_F(CAPIOnAGpu, PackedSequencesMatchTheHost) {
  expectVarlenMatchesTheHost(
      *driver, chips, kVarlenQueries, kVarlenKeys,
      /*Hq=*/4, /*Hkv=*/2, /*D=*/128,
      /*packedKeys=*/true,
      {VarlenMask{}, VarlenMask{true, {}}, VarlenMask{false, {{40, 8}}}});
}

// The same with keyLengths limiting packed sequences' keys (NaN past each
// limit, inside the sequence's rows), causal, d64.
TEST_F(CAPIOnAGpu, PackedSequencesWithKeyLengthsMatchTheHost) {
  expectVarlenMatchesTheHost(*driver, chips, kVarlenQueries, kVarlenKeys,
                             /*Hq=*/4, /*Hkv=*/2, /*D=*/64,
                             /*packedKeys=*/true, {VarlenMask{true, {}}},
                             {9, 2, 1, 250, 0, 17, 100, 5});
}

// Packed queries only: k and v keep a batch entry per sequence (NaN past
// each one's keyLengths), d64, without a mask and causal.
TEST_F(CAPIOnAGpu, PackedQueriesOverPerSequenceKeysMatchTheHost) {
  expectVarlenMatchesTheHost(*driver, chips, kVarlenQueries, kVarlenKeys,
                             /*Hq=*/4, /*Hkv=*/2, /*D=*/64,
                             /*packedKeys=*/false,
                             {VarlenMask{}, VarlenMask{true, {}}});
}

// Packed decode: at most one query per sequence (maxQueryLength 1), GQA
// 8:2, a sequence without keys; no view folds the grouped query heads (on
// sm_90a they are packed into a tile's rows, pack_query_heads). Given
// maxKeyLength and a workspace, sm_90a splits each sequence's keys (10
// tiles leave most SMs idle) and merges the sequences' rows only.
TEST_F(CAPIOnAGpu, PackedDecodeMatchesTheHost) {
  expectVarlenMatchesTheHost(*driver, chips, {1, 1, 0, 1, 1},
                             {700, 1, 5, 0, 1300}, /*Hq=*/8, /*Hkv=*/2,
                             /*D=*/128, /*packedKeys=*/true,
                             {VarlenMask{}, VarlenMask{true, {}}});
}

// Bad offsets (decreasing, negative, past the packed rows) give wrong rows
// but never touch memory outside the tensors: each launch succeeds, the
// context stays usable, and nothing outside o and lse is written.
TEST_F(CAPIOnAGpu, BadOffsetsStayInsideTheTensors) {
  std::string error;
  HostVarlenAttention expected(kVarlenQueries, kVarlenKeys, /*Hq=*/4,
                               /*Hkv=*/2, /*D=*/128, /*packedKeys=*/true,
                               VarlenMask{true, {}});
  DeviceVarlenAttention device(*driver, expected);
  int T = 1 << 20;
  std::vector<int> bad = {-100, 50, 20, T, -T, 40, T, 10, 2 * T};
  const int *offsets = static_cast<const int *>(
      device.upload(bad.data(), bad.size() * sizeof(int)));
  for (const char *chip : chips) {
    SCOPED_TRACE(chip);
    fmhaJit jit = createUncachedJit(chip, error);
    ASSERT_NE(jit, nullptr) << error;
    for (int which = 0; which < 3; ++which) {
      SCOPED_TRACE(which == 0   ? "bad query offsets"
                   : which == 1 ? "bad key offsets"
                                : "both");
      fmhaAttentionDesc desc = device.getDesc();
      if (which != 1)
        desc.queryOffsets = offsets;
      if (which != 0)
        desc.keyOffsets = offsets;
      std::vector<uint16_t> gotO;
      std::vector<float> gotLse;
      ASSERT_TRUE(device.launch(jit, desc, FMHA_CALL_DEFAULT, gotO, gotLse));
      device.expectUntouchedFrom(gotO, gotLse, expected.Tq);
    }
    // Still a working context: good offsets give the host's answer.
    device.run(jit, device.getDesc());
    fmhaJitDestroy(jit);
  }
}

// On a machine with a GPU: fmhaAttentionBackward (GQA 2:1, causal with
// Sq < Sk, bf16, head dim \p D) against the gradients computed here in
// double from the same inputs, the forward's o and lse from the GPU; the
// same bits on a second run; with a workspace, the backward that adds dq
// into it (head dims 64 and 128, refused at 256: f32 atomics on sm_80,
// FlashAttention-3's WGMMA kernel with bulk reduce-adds on sm_90a), and
// deterministic with it (on sm_90a those adds in a fixed order), the same
// bits twice; refusals that name the value.
static void checkBackwardOnAGpu(long long D) {
  llvm::Expected<mlir::fmha::CudaDriver &> driver =
      mlir::fmha::CudaDriver::get();
  if (!driver)
    GTEST_SKIP() << llvm::toString(driver.takeError());
  std::vector<const char *> chips = getChipsToTest(*driver);

  // A JIT makes the device's context current for the buffers below (run
  // alone, as under compute-sanitizer, no earlier test has).
  std::string error;
  fmhaJit holder = createUncachedJit(nullptr, error);
  ASSERT_NE(holder, nullptr) << error;

  const long long B = 2, Hq = 4, Hkv = 2, Sq = 77, Sk = 130;
  const long long G = Hq / Hkv;
  size_t qCount = B * Hq * Sq * D, kCount = B * Hkv * Sk * D;
  size_t rows = B * Hq * Sq;
  std::vector<uint16_t> q(qCount), k(kCount), v(kCount), gradOut(qCount);
  Lcg random{2024};
  for (auto *tensor : {&q, &k, &v, &gradOut})
    for (uint16_t &x : *tensor)
      x = toBf16(random.signedNext());

  auto upload = [&](const void *host, size_t bytes) {
    llvm::Expected<CUdeviceptr> buffer = driver->allocate(bytes);
    EXPECT_TRUE(static_cast<bool>(buffer));
    if (host) {
      EXPECT_FALSE(
          static_cast<bool>(driver->copyToDevice(*buffer, host, bytes)));
    }
    return *buffer;
  };
  CUdeviceptr dQ = upload(q.data(), qCount * 2), dK = upload(k.data(), kCount * 2);
  CUdeviceptr dV = upload(v.data(), kCount * 2);
  CUdeviceptr dGradOut = upload(gradOut.data(), qCount * 2);
  CUdeviceptr dO = upload(nullptr, qCount * 2), dLse = upload(nullptr, rows * 4);
  CUdeviceptr dDelta = upload(nullptr, rows * 4);
  CUdeviceptr dGradQ = upload(nullptr, qCount * 2);
  CUdeviceptr dGradK = upload(nullptr, kCount * 2);
  CUdeviceptr dGradV = upload(nullptr, kCount * 2);
  auto pointer = [](CUdeviceptr p) { return reinterpret_cast<void *>(p); };
  auto at = [D](long long b, long long h, long long heads, long long seq,
               long long i) { return ((b * heads + h) * seq + i) * D; };

  for (const char *chip : chips) {
    SCOPED_TRACE(chip);
    fmhaJit jit = createUncachedJit(chip, error);
    ASSERT_NE(jit, nullptr) << error;
    char *message = nullptr;

    fmhaAttentionBackwardDesc desc;
    std::memset(&desc, 0, sizeof desc);
    fmhaAttentionDesc &forward = desc.forward;
    fmhaAttentionDescInit(&forward);
    forward.headDim = D;
    forward.causal = 1;
    forward.batch = B;
    forward.queryHeads = Hq;
    forward.kvHeads = Hkv;
    forward.querySeq = Sq;
    forward.keySeq = Sk;
    forward.q = pointer(dQ);
    forward.k = pointer(dK);
    forward.v = pointer(dV);
    forward.o = pointer(dO);
    forward.lse = static_cast<float *>(pointer(dLse));
    desc.dout = pointer(dGradOut);
    desc.dq = pointer(dGradQ);
    desc.dk = pointer(dGradK);
    desc.dv = pointer(dGradV);
    desc.delta = static_cast<float *>(pointer(dDelta));
    fmhaAttentionBackwardDescSetDenseStrides(&desc);
    ASSERT_EQ(fmhaAttention(jit, &forward, nullptr, &message), FMHA_SUCCESS)
        << take(message);
    ASSERT_EQ(fmhaAttentionBackward(jit, &desc, nullptr, FMHA_CALL_DEFAULT,
                                    &message),
              FMHA_SUCCESS)
        << take(message);
    ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));
    std::vector<uint16_t> o(qCount), gradQ(qCount), gradK(kCount),
        gradV(kCount);
    std::vector<float> lse(rows);
    for (auto [host, device, bytes] :
         {std::tuple{static_cast<void *>(o.data()), dO, qCount * 2},
          {gradQ.data(), dGradQ, qCount * 2},
          {gradK.data(), dGradK, kCount * 2},
          {gradV.data(), dGradV, kCount * 2},
          {lse.data(), dLse, rows * 4}})
      ASSERT_FALSE(
          static_cast<bool>(driver->copyToHost(host, device, bytes)));

    // The reference, from the GPU's o and lse: P = exp(s - lse),
    // dS = P (dout . v - dout . o), dq = scale dS k, dk = scale dS^T q,
    // dv = P^T dout, dk and dv summed over each KV head's query heads.
    double scale = 1.0 / std::sqrt(double(D));
    std::vector<double> expectQ(qCount), expectK(kCount), expectV(kCount);
    for (long long b = 0; b < B; ++b)
      for (long long h = 0; h < Hq; ++h)
        for (long long i = 0; i < Sq; ++i) {
          long long kvh = h / G;
          size_t qi = at(b, h, Hq, Sq, i);
          double delta = 0;
          for (long long d = 0; d < D; ++d)
            delta += double(fromBf16(gradOut[qi + d])) * fromBf16(o[qi + d]);
          for (long long j = 0; j <= i + Sk - Sq; ++j) {
            size_t kj = at(b, kvh, Hkv, Sk, j);
            double dot = 0, gradProb = 0;
            for (long long d = 0; d < D; ++d) {
              dot += double(fromBf16(q[qi + d])) * fromBf16(k[kj + d]);
              gradProb += double(fromBf16(gradOut[qi + d])) * fromBf16(v[kj + d]);
            }
            double p = std::exp(dot * scale - lse[(b * Hq + h) * Sq + i]);
            double gradScore = p * (gradProb - delta);
            for (long long d = 0; d < D; ++d) {
              expectQ[qi + d] += scale * gradScore * fromBf16(k[kj + d]);
              expectK[kj + d] += scale * gradScore * fromBf16(q[qi + d]);
              expectV[kj + d] += p * fromBf16(gradOut[qi + d]);
            }
          }
        }
    // bf16 results: a few units of their rounding, relative to the largest.
    auto check = [](const char *name, const std::vector<uint16_t> &got,
                    const std::vector<double> &expected) {
      double largest = 0, error = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        largest = std::max(largest, std::fabs(expected[i]));
        error = std::max(error, std::fabs(fromBf16(got[i]) - expected[i]));
      }
      EXPECT_LT(error, 4.0 / 256 * std::max(largest, 1.0)) << name;
      EXPECT_GT(largest, 0.0) << name;
    };
    check("dq", gradQ, expectQ);
    check("dk", gradK, expectK);
    check("dv", gradV, expectV);

    // No atomics: a second run gives the same bits.
    ASSERT_EQ(fmhaAttentionBackward(jit, &desc, nullptr, FMHA_CALL_DEFAULT,
                                    &message),
              FMHA_SUCCESS)
        << take(message);
    ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));
    std::vector<uint16_t> again(qCount), againK(kCount);
    ASSERT_FALSE(static_cast<bool>(
        driver->copyToHost(again.data(), dGradQ, qCount * 2)));
    ASSERT_FALSE(static_cast<bool>(
        driver->copyToHost(againK.data(), dGradK, kCount * 2)));
    EXPECT_EQ(again, gradQ);
    EXPECT_EQ(againK, gradK);

    // With a workspace, the backward that adds dq into it.
    size_t workspaceBytes = 0;
    ASSERT_EQ(fmhaAttentionBackwardWorkspaceSize(&desc, &workspaceBytes,
                                                 &message),
              FMHA_SUCCESS)
        << take(message);
    // The dq accumulator, then a counter per 64 queries of each (b, h).
    EXPECT_EQ(workspaceBytes,
              qCount * sizeof(float) + B * Hq * ((Sq + 63) / 64) * 4);
    // sm_80's kernel that adds dq into the workspace takes multiples of 32
    // past 128 alone (isSm80OnePassGradHeadDim).
    if (D > 128 && D % 32 != 0 && std::string(chip) != "sm_90a") {
      fmhaAttentionBackwardDesc fast = desc;
      fast.workspace = pointer(dGradQ);
      fast.workspaceBytes = workspaceBytes;
      EXPECT_EQ(fmhaAttentionBackward(jit, &fast, nullptr, FMHA_CALL_DEFAULT,
                                      &message),
                FMHA_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(take(message).find(
                    "headDim is " + std::to_string(D) +
                    " with a workspace on chip sm_80, "
                    "expected at most 128, or 160, 192, 224 or 256, there"),
                std::string::npos);
    } else {
      CUdeviceptr workspace = upload(nullptr, workspaceBytes);
      fmhaAttentionBackwardDesc fast = desc;
      fast.workspace = pointer(workspace);
      // Any order: the accumulator alone.
      fast.workspaceBytes = qCount * sizeof(float) - 4;
      EXPECT_EQ(fmhaAttentionBackward(jit, &fast, nullptr, FMHA_CALL_DEFAULT,
                                      &message),
                FMHA_ERROR_INVALID_ARGUMENT);
      EXPECT_NE(take(message).find("expected at least " +
                                   std::to_string(qCount * sizeof(float)) +
                                   " bytes"),
                std::string::npos);
      // Runs \p run, then checks dq, dk and dv (left in gradQ, gradK and
      // gradV).
      auto runAndCheck = [&](const fmhaAttentionBackwardDesc &run,
                             const std::string &what) {
        ASSERT_EQ(fmhaAttentionBackward(jit, &run, nullptr, FMHA_CALL_DEFAULT,
                                        &message),
                  FMHA_SUCCESS)
            << take(message);
        ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));
        for (auto [host, device, bytes] :
             {std::tuple{static_cast<void *>(gradQ.data()), dGradQ, qCount * 2},
              {gradK.data(), dGradK, kCount * 2},
              {gradV.data(), dGradV, kCount * 2}})
          ASSERT_FALSE(
              static_cast<bool>(driver->copyToHost(host, device, bytes)));
        check(("dq " + what).c_str(), gradQ, expectQ);
        check(("dk " + what).c_str(), gradK, expectK);
        check(("dv " + what).c_str(), gradV, expectV);
      };
      fast.workspaceBytes = workspaceBytes;
      runAndCheck(fast, "(atomic)");

      // Deterministic with the workspace: on sm_90a the same kernel with
      // its adds in a fixed order, elsewhere dq by blocks of queries; the
      // same bits on a second run.
      fast.deterministic = 1;
      if (std::string(chip) == "sm_90a") {
        fast.workspaceBytes = workspaceBytes - 4;
        EXPECT_EQ(fmhaAttentionBackward(jit, &fast, nullptr, FMHA_CALL_DEFAULT,
                                        &message),
                  FMHA_ERROR_INVALID_ARGUMENT);
        EXPECT_NE(take(message).find("expected at least " +
                                     std::to_string(workspaceBytes) +
                                     " bytes (the f32 dq accumulator of the "
                                     "one-pass backward and its counters)"),
                  std::string::npos);
        fast.workspaceBytes = workspaceBytes;
      }
      runAndCheck(fast, "(deterministic, workspace)");
      std::vector<uint16_t> firstQ = gradQ, firstK = gradK;
      runAndCheck(fast, "(deterministic, workspace, again)");
      EXPECT_EQ(gradQ, firstQ);
      EXPECT_EQ(gradK, firstK);
      llvm::consumeError(driver->release(workspace));
    }

    // Refused before any launch, naming the value.
    fmhaAttentionBackwardDesc bad = desc;
    bad.forward.headDim = 100;
    EXPECT_EQ(fmhaAttentionBackward(jit, &bad, nullptr, FMHA_CALL_DEFAULT,
                                    &message),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(take(message).find("attention_grad: headDim is 100, expected a "
                                 "multiple of 8 from 32 to 256"),
              std::string::npos);
    bad = desc;
    bad.forward.lse = nullptr;
    EXPECT_EQ(fmhaAttentionBackward(jit, &bad, nullptr, FMHA_CALL_DEFAULT,
                                    &message),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(take(message).find("must not be null (the backward reads the "
                                 "forward's lse)"),
              std::string::npos);
    bad = desc;
    bad.dkStride[1] = 3;
    EXPECT_EQ(fmhaAttentionBackward(jit, &bad, nullptr, FMHA_CALL_DEFAULT,
                                    &message),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(take(message).find("dk's head stride is 3 elements"),
              std::string::npos);
    // Precompiled, then launched inside a capture's rules.
    fmhaAttentionBackwardDesc other = desc;
    other.forward.scale = 0.25f;
    EXPECT_EQ(fmhaAttentionBackward(jit, &other, nullptr,
                                    FMHA_CALL_LOADED_ONLY, &message),
              FMHA_ERROR_NOT_LOADED);
    take(message);
    EXPECT_EQ(fmhaAttentionBackwardPrecompile(jit, &other, 1, 0, &message),
              FMHA_SUCCESS)
        << take(message);
    EXPECT_EQ(fmhaAttentionBackward(jit, &other, nullptr,
                                    FMHA_CALL_LOADED_ONLY, &message),
              FMHA_SUCCESS)
        << take(message);
    ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));
    fmhaJitDestroy(jit);
  }
  for (CUdeviceptr p :
       {dQ, dK, dV, dGradOut, dO, dLse, dDelta, dGradQ, dGradK, dGradV})
    llvm::consumeError(driver->release(p));
  fmhaJitDestroy(holder);
}

TEST(CAPI, BackwardOnAGpuMatchesTheHost) { checkBackwardOnAGpu(64); }

// Head dim 128: with a workspace, on sm_90a, the WGMMA kernel whose two
// consumers split dQ's columns by column block.
TEST(CAPI, BackwardHeadDim128OnAGpuMatchesTheHost) {
  checkBackwardOnAGpu(128);
}

// Head dim 256: dk and dv are two kernels.
TEST(CAPI, BackwardHeadDim256OnAGpuMatchesTheHost) { checkBackwardOnAGpu(256); }

// Head dims below a tile's columns (getAttentionGradTileColumns): the
// kernels compute on zeros past D and store D's columns alone. 40 has a
// partial last group of dq_accum's permuted chunks and a lane of the
// row kernels past D; 96 leaves the second sm_90a consumer's dQ columns
// half past D; 192 runs the kernels of 256 (dk and dv apart without a
// workspace, the consumers splitting the head dim on sm_90a); 176 is
// refused a workspace on sm_80.
TEST(CAPI, BackwardHeadDim40OnAGpuMatchesTheHost) { checkBackwardOnAGpu(40); }
TEST(CAPI, BackwardHeadDim96OnAGpuMatchesTheHost) { checkBackwardOnAGpu(96); }
TEST(CAPI, BackwardHeadDim176OnAGpuMatchesTheHost) { checkBackwardOnAGpu(176); }
TEST(CAPI, BackwardHeadDim192OnAGpuMatchesTheHost) { checkBackwardOnAGpu(192); }

// On a machine with a GPU: fmhaMergeAttention (f32, D = 40: a lane's last
// column past D) against the combine rule computed here, with states that
// saw no key (+inf and -inf, one with NaN in its O) and a row that no state
// saw a key for. 11 states: the kernel's group of 8 loaded together, then
// 3 one at a time, with a state without keys in each.
TEST(CAPI, MergeOnAGpuMatchesTheHost) {
  llvm::Expected<mlir::fmha::CudaDriver &> driver =
      mlir::fmha::CudaDriver::get();
  if (!driver)
    GTEST_SKIP() << llvm::toString(driver.takeError());
  constexpr long long S = 11, B = 2, H = 3, Sq = 5, D = 40;
  constexpr long long rows = B * H * Sq;
  std::vector<float> outs(S * rows * D), lses(S * rows);
  Lcg random{777};
  for (float &x : outs)
    x = random.signedNext();
  for (float &x : lses)
    x = 4 * random.signedNext();
  float inf = std::numeric_limits<float>::infinity();
  lses[0 * rows + 1] = inf;  // state 0 of row 1: no key (attention's +inf)
  lses[2 * rows + 1] = -inf; // state 2 of row 1: no key (-inf elsewhere)
  lses[9 * rows + 2] = inf;  // state 9 of row 2, past the group of 8
  for (long long d = 0; d < D; ++d) // what a state without keys holds
    outs[(0 * rows + 1) * D + d] = outs[(9 * rows + 2) * D + d] =
        std::numeric_limits<float>::quiet_NaN();
  for (long long s = 0; s < S; ++s)
    lses[s * rows + 7] = s == 1 ? -inf : inf; // row 7: no key in any state
  std::vector<double> expectedO(rows * D, 0.0), expectedLse(rows, inf);
  for (long long r = 0; r < rows; ++r) {
    double max = -inf, sum = 0;
    for (long long s = 0; s < S; ++s)
      if (std::isfinite(lses[s * rows + r]))
        max = std::max(max, double(lses[s * rows + r]));
    for (long long s = 0; s < S; ++s)
      if (std::isfinite(lses[s * rows + r]))
        sum += std::exp(lses[s * rows + r] - max);
    if (sum == 0)
      continue;
    double total = max + std::log(sum);
    expectedLse[r] = total;
    for (long long s = 0; s < S; ++s)
      if (std::isfinite(lses[s * rows + r]))
        for (long long d = 0; d < D; ++d)
          expectedO[r * D + d] += std::exp(lses[s * rows + r] - total) *
                                  outs[(s * rows + r) * D + d];
  }

  // The JIT first: it makes the device's context current for the copies.
  std::string error;
  fmhaJit jit = createUncachedJit(nullptr, error);
  ASSERT_NE(jit, nullptr) << error;
  auto upload = [&](const std::vector<float> &host) {
    llvm::Expected<CUdeviceptr> buffer = driver->allocate(host.size() * 4);
    EXPECT_TRUE(static_cast<bool>(buffer));
    EXPECT_FALSE(static_cast<bool>(
        driver->copyToDevice(*buffer, host.data(), host.size() * 4)));
    return *buffer;
  };
  CUdeviceptr douts = upload(outs), dlses = upload(lses);
  CUdeviceptr dout = upload(std::vector<float>(rows * D));
  CUdeviceptr dlse = upload(std::vector<float>(rows));
  char *message = nullptr;
  fmhaMergeDesc desc = {};
  desc.elementType = FMHA_F32;
  desc.headDim = D;
  desc.states = S;
  desc.batch = B;
  desc.heads = H;
  desc.querySeq = Sq;
  desc.outs = reinterpret_cast<const void *>(douts);
  desc.lses = reinterpret_cast<const float *>(dlses);
  desc.o = reinterpret_cast<void *>(dout);
  desc.lse = reinterpret_cast<float *>(dlse);
  fmhaMergeDescSetDenseStrides(&desc);
  ASSERT_EQ(fmhaMergeAttention(jit, &desc, nullptr, 0, &message), FMHA_SUCCESS)
      << take(message);
  ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));
  std::vector<float> o(rows * D), lse(rows);
  ASSERT_FALSE(
      static_cast<bool>(driver->copyToHost(o.data(), dout, o.size() * 4)));
  ASSERT_FALSE(
      static_cast<bool>(driver->copyToHost(lse.data(), dlse, lse.size() * 4)));
  for (long long r = 0; r < rows; ++r) {
    if (std::isinf(expectedLse[r]))
      EXPECT_EQ(lse[r], inf) << "row " << r;
    else
      EXPECT_NEAR(lse[r], expectedLse[r], 1e-5) << "row " << r;
    for (long long d = 0; d < D; ++d)
      EXPECT_NEAR(o[r * D + d], expectedO[r * D + d], 1e-5)
          << "row " << r << " column " << d;
  }

  fmhaMergeDesc bad = desc;
  bad.states = 0;
  EXPECT_EQ(fmhaMergeAttention(jit, &bad, nullptr, 0, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(take(message), "fmhaMergeAttention: merge_attention: states (S) "
                           "is 0, expected at least 1");
  for (CUdeviceptr p : {douts, dlses, dout, dlse})
    llvm::consumeError(driver->release(p));
  fmhaJitDestroy(jit);
}

// On a machine with a GPU: decode at batch 1 with GQA 4:1 and a long cache
// splits its keys when given the workspace fmhaAttentionWorkspaceSize asks
// for, and agrees with the same call without a workspace (not split); a
// workspace too small is refused with both sizes.
TEST(CAPI, DecodeSplitsKeysWithAWorkspace) {
  llvm::Expected<mlir::fmha::CudaDriver &> driver =
      mlir::fmha::CudaDriver::get();
  if (!driver)
    GTEST_SKIP() << llvm::toString(driver.takeError());
  std::vector<const char *> chips = getChipsToTest(*driver);
  constexpr long long Hq = 8, Hkv = 2, Sk = 5000, D = 128;
  std::vector<uint16_t> q(Hq * D), kv(Hkv * Sk * D);
  Lcg random{99};
  for (auto *tensor : {&q, &kv})
    for (uint16_t &x : *tensor)
      x = toBf16(random.signedNext());
  // A JIT for the whole test: it keeps the device's context current for
  // the copies.
  std::string error;
  fmhaJit context = createUncachedJit(nullptr, error);
  ASSERT_NE(context, nullptr) << error;
  auto upload = [&](const void *host, size_t bytes) {
    llvm::Expected<CUdeviceptr> buffer = driver->allocate(bytes);
    EXPECT_TRUE(static_cast<bool>(buffer));
    if (host) {
      EXPECT_FALSE(
          static_cast<bool>(driver->copyToDevice(*buffer, host, bytes)));
    }
    return *buffer;
  };
  CUdeviceptr dq = upload(q.data(), q.size() * 2);
  CUdeviceptr dkv = upload(kv.data(), kv.size() * 2);
  CUdeviceptr douts[2] = {upload(nullptr, Hq * D * 2),
                          upload(nullptr, Hq * D * 2)};
  CUdeviceptr dlses[2] = {upload(nullptr, Hq * 4), upload(nullptr, Hq * 4)};
  for (const char *chip : chips) {
    SCOPED_TRACE(chip);
    fmhaJit jit = createUncachedJit(chip, error);
    ASSERT_NE(jit, nullptr) << error;
    char *message = nullptr;
    fmhaAttentionDesc desc;
    fmhaAttentionDescInit(&desc);
    desc.headDim = D;
    desc.causal = 1;
    desc.batch = 1;
    desc.queryHeads = Hq;
    desc.kvHeads = Hkv;
    desc.querySeq = 1;
    desc.keySeq = Sk;
    desc.q = reinterpret_cast<const void *>(dq);
    desc.k = desc.v = reinterpret_cast<const void *>(dkv);
    fmhaAttentionDescSetDenseStrides(&desc);
    size_t bytes = 0;
    ASSERT_EQ(fmhaAttentionWorkspaceSize(jit, &desc, &bytes, &message),
              FMHA_SUCCESS)
        << take(message);
    ASSERT_GT(bytes, 0u) << "8 rows on 2 KV heads should split their keys";
    CUdeviceptr workspace = upload(nullptr, bytes);
    std::vector<uint16_t> outs[2];
    std::vector<float> lses[2];
    for (int split = 0; split < 2; ++split) {
      desc.o = reinterpret_cast<void *>(douts[split]);
      desc.lse = reinterpret_cast<float *>(dlses[split]);
      desc.workspace = split ? reinterpret_cast<void *>(workspace) : nullptr;
      desc.workspaceBytes = split ? bytes : 0;
      ASSERT_EQ(fmhaAttention(jit, &desc, nullptr, &message), FMHA_SUCCESS)
          << take(message);
      ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));
      outs[split].resize(Hq * D);
      lses[split].resize(Hq);
      ASSERT_FALSE(static_cast<bool>(driver->copyToHost(
          outs[split].data(), douts[split], Hq * D * 2)));
      ASSERT_FALSE(static_cast<bool>(
          driver->copyToHost(lses[split].data(), dlses[split], Hq * 4)));
    }
    // Each split's O is rounded to bf16 before the merge: a unit or two of
    // bf16 rounding (8 bits) apart.
    for (long long i = 0; i < Hq * D; ++i)
      EXPECT_NEAR(fromBf16(outs[1][i]), fromBf16(outs[0][i]), 2.0 / 256)
          << "element " << i;
    for (long long h = 0; h < Hq; ++h)
      EXPECT_NEAR(lses[1][h], lses[0][h], 1e-4) << "head " << h;
    desc.workspaceBytes = bytes - 16;
    EXPECT_EQ(fmhaAttention(jit, &desc, nullptr, &message),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(take(message).find("workspaceBytes is " +
                                 std::to_string(bytes - 16) +
                                 ", expected 0 (no split) or at least " +
                                 std::to_string(bytes)),
              std::string::npos);
    desc.workspace = nullptr;
    desc.workspaceBytes = bytes;
    EXPECT_EQ(fmhaAttention(jit, &desc, nullptr, &message),
              FMHA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(take(message).find("workspace is at 0x0 with workspaceBytes " +
                                 std::to_string(bytes)),
              std::string::npos);
    llvm::consumeError(driver->release(workspace));
    fmhaJitDestroy(jit);
  }
  for (CUdeviceptr p : {dq, dkv, douts[0], douts[1], dlses[0], dlses[1]})
    llvm::consumeError(driver->release(p));
  fmhaJitDestroy(context);
}

// On a machine with a GPU: fmhaResample (linear, f32, two streams of 8 and
// 3 features with lengths, one row without samples) against the op's
// contract computed here; and a bad description refused with its value.
TEST(CAPI, ResampleOnAGpuMatchesTheHost) {
  llvm::Expected<mlir::fmha::CudaDriver &> driver =
      mlir::fmha::CudaDriver::get();
  if (!driver)
    GTEST_SKIP() << llvm::toString(driver.takeError());
  constexpr long long B = 3, T = 50;
  const long long samples[2] = {40, 7};
  const unsigned features[2] = {8, 3};
  const int lengths[2][B] = {{40, 25, 0}, {7, 1, 5}};
  Lcg random{777};
  std::vector<float> times[2], values[2], targets(B * T);
  for (int s = 0; s < 2; ++s) {
    for (long long b = 0; b < B; ++b) {
      float t = 0;
      for (long long i = 0; i < samples[s]; ++i)
        times[s].push_back(t += 0.05f + random.next());
    }
    for (long long i = 0; i < B * samples[s] * features[s]; ++i)
      values[s].push_back(random.next() * 2 - 1);
  }
  for (float &t : targets)
    t = random.next() * 30 - 2; // some before the first sample, some past the last

  // The contract: linear between the samples around the target, the edge
  // sample outside them, zeros for a row without valid samples.
  const long long D = features[0] + features[1];
  std::vector<double> expected(B * T * D, 0.0);
  for (long long b = 0; b < B; ++b)
    for (long long j = 0; j < T; ++j) {
      double target = targets[b * T + j];
      long long offset = 0;
      for (int s = 0; s < 2; ++s) {
        long long n = lengths[s][b];
        const float *row = &times[s][b * samples[s]];
        auto value = [&](long long i, unsigned d) {
          return double(values[s][(b * samples[s] + i) * features[s] + d]);
        };
        for (unsigned d = 0; d < features[s] && n > 0; ++d) {
          double &out = expected[(b * T + j) * D + offset + d];
          if (target <= row[0])
            out = value(0, d);
          else if (target >= row[n - 1])
            out = value(n - 1, d);
          else {
            long long i = 0;
            while (row[i + 1] <= target)
              ++i;
            double w = (target - row[i]) / (double(row[i + 1]) - row[i]);
            out = value(i, d) + w * (value(i + 1, d) - value(i, d));
          }
        }
        offset += features[s];
      }
    }

  std::vector<CUdeviceptr> buffers;
  auto upload = [&](const void *host, size_t bytes) {
    llvm::Expected<CUdeviceptr> buffer = driver->allocate(bytes);
    EXPECT_TRUE(static_cast<bool>(buffer));
    EXPECT_FALSE(
        static_cast<bool>(driver->copyToDevice(*buffer, host, bytes)));
    buffers.push_back(*buffer);
    return reinterpret_cast<void *>(*buffer);
  };
  fmhaResampleStream streams[2];
  for (int s = 0; s < 2; ++s) {
    streams[s].times = static_cast<const float *>(
        upload(times[s].data(), times[s].size() * 4));
    streams[s].values = upload(values[s].data(), values[s].size() * 4);
    streams[s].lengths =
        static_cast<const int *>(upload(lengths[s], sizeof(lengths[s])));
    streams[s].samples = samples[s];
    streams[s].features = features[s];
  }
  std::vector<float> out(B * T * D, -1.0f);
  fmhaResampleDesc desc = {};
  desc.elementType = FMHA_F32;
  desc.mode = FMHA_LINEAR;
  desc.batch = B;
  desc.targetCount = T;
  desc.targets =
      static_cast<const float *>(upload(targets.data(), targets.size() * 4));
  desc.out = upload(out.data(), out.size() * 4);
  desc.numStreams = 2;
  desc.streams = streams;

  std::string error;
  fmhaJit jit = createUncachedJit(nullptr, error);
  ASSERT_NE(jit, nullptr) << error;
  char *message = nullptr;
  ASSERT_EQ(fmhaResample(jit, &desc, nullptr, &message), FMHA_SUCCESS)
      << take(message);
  ASSERT_FALSE(static_cast<bool>(driver->synchronize(nullptr)));
  ASSERT_FALSE(static_cast<bool>(driver->copyToHost(
      out.data(), reinterpret_cast<CUdeviceptr>(desc.out), out.size() * 4)));
  double maxError = 0;
  for (size_t i = 0; i < out.size(); ++i)
    maxError = std::max(maxError, std::fabs(out[i] - expected[i]));
  EXPECT_LT(maxError, 1e-5);

  fmhaResampleStream badStreams[2] = {streams[0], streams[1]};
  badStreams[1].lengths = nullptr;
  fmhaResampleDesc bad = desc;
  bad.streams = badStreams;
  EXPECT_EQ(fmhaResample(jit, &bad, nullptr, &message),
            FMHA_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(take(message), "fmhaResample: resample: stream 1: the spec has "
                           "lengths but the stream has none");
  fmhaJitDestroy(jit);
  for (CUdeviceptr buffer : buffers)
    llvm::consumeError(driver->release(buffer));
}

} // namespace
