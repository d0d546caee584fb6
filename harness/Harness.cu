//===- Harness.cu - buffers, inputs, comparison and timing ----------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace fmha_harness {

void checkCuda(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return;
  std::fprintf(stderr, "fmha-runner: %s failed: %s (%s)\n", what,
               cudaGetErrorName(err), cudaGetErrorString(err));
  std::exit(kUsageOrCudaError);
}

size_t elementBytes(fmhaRefDType dtype) {
  return dtype == FMHA_REF_F32 ? 4 : 2;
}

const char *dtypeName(fmhaRefDType dtype) {
  switch (dtype) {
  case FMHA_REF_F32:
    return "f32";
  case FMHA_REF_F16:
    return "f16";
  case FMHA_REF_BF16:
    return "bf16";
  }
  return "?";
}

float quantize(float x, fmhaRefDType dtype) {
  switch (dtype) {
  case FMHA_REF_F16:
    return __half2float(__float2half_rn(x));
  case FMHA_REF_BF16:
    return __bfloat162float(__float2bfloat16_rn(x));
  default:
    return x;
  }
}

/// encode() of elements [begin, end).
static void encodeRange(const std::vector<float> &values, fmhaRefDType dtype,
                        size_t begin, size_t end, std::vector<uint8_t> &bytes) {
  for (size_t i = begin; i < end; ++i) {
    switch (dtype) {
    case FMHA_REF_F32:
      std::memcpy(&bytes[4 * i], &values[i], 4);
      break;
    case FMHA_REF_F16: {
      __half h = __float2half_rn(values[i]);
      std::memcpy(&bytes[2 * i], &h, 2);
      break;
    }
    case FMHA_REF_BF16: {
      __nv_bfloat16 h = __float2bfloat16_rn(values[i]);
      std::memcpy(&bytes[2 * i], &h, 2);
      break;
    }
    }
  }
}

/// Elements per chunk of the host-side loops that run on all cores.
static constexpr size_t kChunkElements = size_t(1) << 20;

/// Runs body(chunk, begin, end) over the chunks of kChunkElements of
/// [0, count), on all cores.
template <typename Body> static void forEachChunk(size_t count, Body body) {
  const size_t chunkSize = kChunkElements;
  size_t chunks = (count + chunkSize - 1) / chunkSize;
  size_t workers = std::min<size_t>(
      chunks, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t chunk; (chunk = next++) < chunks;)
      body(chunk, chunk * chunkSize, std::min(count, (chunk + 1) * chunkSize));
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w)
    threads.emplace_back(work);
  work();
  for (std::thread &thread : threads)
    thread.join();
}

/// SplitMix64's finalizer: distinct inputs give unrelated generator seeds.
static uint64_t mixBits(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void fillNormal(std::vector<float> &values, uint64_t seed, uint64_t stream,
                fmhaRefDType dtype) {
  forEachChunk(values.size(), [&](size_t chunk, size_t begin, size_t end) {
    Random random(mixBits(mixBits(seed ^ mixBits(stream)) + chunk));
    for (size_t i = begin; i < end; ++i)
      values[i] = quantize(random.normal(), dtype);
  });
}

std::vector<uint8_t> encode(const std::vector<float> &values,
                            fmhaRefDType dtype) {
  std::vector<uint8_t> bytes(values.size() * elementBytes(dtype));
  forEachChunk(values.size(), [&](size_t, size_t begin, size_t end) {
    encodeRange(values, dtype, begin, end, bytes);
  });
  return bytes;
}

std::vector<float> decode(const std::vector<uint8_t> &bytes,
                          fmhaRefDType dtype) {
  size_t count = bytes.size() / elementBytes(dtype);
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    switch (dtype) {
    case FMHA_REF_F32:
      std::memcpy(&values[i], &bytes[4 * i], 4);
      break;
    case FMHA_REF_F16: {
      __half h;
      std::memcpy(&h, &bytes[2 * i], 2);
      values[i] = __half2float(h);
      break;
    }
    case FMHA_REF_BF16: {
      __nv_bfloat16 h;
      std::memcpy(&h, &bytes[2 * i], 2);
      values[i] = __bfloat162float(h);
      break;
    }
    }
  }
  return values;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes(bytes) {
  FMHA_CUDA(cudaMalloc(&pointer, bytes ? bytes : 1));
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : pointer(other.pointer), bytes(other.bytes) {
  other.pointer = nullptr;
  other.bytes = 0;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  std::swap(pointer, other.pointer);
  std::swap(bytes, other.bytes);
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (pointer)
    cudaFree(pointer);
}

void DeviceBuffer::upload(const void *host, size_t count) {
  FMHA_CUDA(cudaMemcpy(pointer, host, count, cudaMemcpyHostToDevice));
}

void DeviceBuffer::download(void *host, size_t count) const {
  FMHA_CUDA(cudaMemcpy(host, pointer, count, cudaMemcpyDeviceToHost));
}

void DeviceBuffer::poison() { FMHA_CUDA(cudaMemset(pointer, 0xff, bytes)); }

Comparison compare(const std::vector<float> &actual,
                   const std::vector<float> &expected, double tolerance) {
  Comparison c;
  c.tolerance = tolerance;
  c.elements = expected.size();
  for (size_t i = 0; i < expected.size(); ++i) {
    double e = expected[i], a = actual[i];
    if (std::isinf(e)) {
      if (a != e)
        ++c.mismatchedInfinities;
      continue;
    }
    if (!std::isfinite(a)) {
      ++c.nonFinite;
      continue;
    }
    c.maxReference = std::max(c.maxReference, std::fabs(e));
    if (std::fabs(a - e) > c.maxAbsError) {
      c.maxAbsError = std::fabs(a - e);
      c.worstIndex = i;
      c.worstActual = a;
      c.worstExpected = e;
    }
  }
  for (size_t i = 0; i < std::min(getDumpCount(), expected.size()); ++i)
    std::printf("  [%zu] got %.4f expected %.4f\n", i, actual[i],
                expected[i]);
  return c;
}

size_t getDumpCount() {
  const char *text = std::getenv("FMHA_DUMP_FIRST");
  long count = text ? std::atol(text) : 0;
  return count > 0 ? static_cast<size_t>(count) : 0;
}

void printComparison(const char *name, const Comparison &c) {
  std::printf("%-4s %zu elements: %zu non-finite (unwritten?), %zu wrong "
              "infinities, max abs error %.3e, normalized %.3e (tolerance "
              "%.1e): %s\n",
              name, c.elements, c.nonFinite, c.mismatchedInfinities,
              c.maxAbsError, c.normalizedError(), c.tolerance,
              c.passed() ? "PASS" : "FAIL");
  if (!c.passed() && c.maxAbsError > 0)
    std::printf("     worst at element %zu: got %.6g, expected %.6g\n",
                c.worstIndex, c.worstActual, c.worstExpected);
}

double outputTolerance(fmhaRefDType dtype) {
  // Units in the last place of the output type: bf16 keeps 8 bits, f16 11.
  switch (dtype) {
  case FMHA_REF_BF16:
    return 4.0 / 256;
  case FMHA_REF_F16:
    return 4.0 / 2048;
  default:
    return 1e-5;
  }
}

namespace {
__global__ void spinFor(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
} // namespace

void holdDefaultStream(double microseconds) {
  int device = 0, clockKhz = 0;
  FMHA_CUDA(cudaGetDevice(&device));
  FMHA_CUDA(cudaDeviceGetAttribute(&clockKhz, cudaDevAttrClockRate, device));
  spinFor<<<1, 1>>>(static_cast<long long>(microseconds * clockKhz / 1e3));
  FMHA_CUDA(cudaGetLastError());
}

int copiesToDefeatL2(size_t bytesPerCopy) {
  int device = 0, l2Bytes = 0;
  FMHA_CUDA(cudaGetDevice(&device));
  FMHA_CUDA(cudaDeviceGetAttribute(&l2Bytes, cudaDevAttrL2CacheSize, device));
  // Twice the L2 between two uses of the same copy; at most 16 copies.
  size_t needed = bytesPerCopy ? (2 * size_t(l2Bytes)) / bytesPerCopy + 1 : 1;
  return int(std::min<size_t>(std::max<size_t>(needed, 1), 16));
}

} // namespace fmha_harness
