//===- Ceilings.cu - the measured limits kernels are compared against -----===//
//
// Part of FlashCore. Device-to-device copy bandwidth (bytes read + written,
// as ANCHORS.md counts it) and a bf16 GEMM through cuBLAS.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"
#include "Harness.h"

#include <cublas_v2.h>

#include <cstdio>
#include <vector>

namespace fmha_harness {

int runCeilings(const Options &opt) {
  size_t copyBytes = size_t(opt.getInt("copy-mib", 1024)) << 20;
  int gemmSize = opt.getInt("gemm", 8192);
  if (opt.reportUnused())
    return kUsageOrCudaError;

  DeviceBuffer src(copyBytes), dst(copyBytes);
  FMHA_CUDA(cudaMemset(src.get(), 1, copyBytes)); // a copy's speed does not
                                                  // depend on the data
  double copyMs = timeMedianMs(
      [&](int) {
        FMHA_CUDA(cudaMemcpyAsync(dst.get(), src.get(), copyBytes,
                                  cudaMemcpyDeviceToDevice));
      },
      1);
  std::printf("ceiling copy: %.1f GB/s (%zu MiB device-to-device, read + "
              "written)\n",
              2.0 * copyBytes / (copyMs * 1e-3) / 1e9, copyBytes >> 20);

  // Random operands: constant or zero data draws less power and clocks
  // higher than real inputs, which would overstate the ceiling.
  size_t n = gemmSize;
  DeviceBuffer a(n * n * 2), b(n * n * 2), c(n * n * 2);
  Random random(1);
  std::vector<float> values(n * n);
  for (DeviceBuffer *operand : {&a, &b}) {
    for (float &x : values)
      x = random.normal();
    std::vector<uint8_t> bytes = encode(values, FMHA_REF_BF16);
    operand->upload(bytes.data(), bytes.size());
  }
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "fmha-runner: cublasCreate failed\n");
    return kUsageOrCudaError;
  }
  float alpha = 1, beta = 0;
  bool failed = false;
  double gemmMs = timeMedianMs(
      [&](int) {
        failed |= cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n,
                               &alpha, a.get(), CUDA_R_16BF, n, b.get(),
                               CUDA_R_16BF, n, &beta, c.get(), CUDA_R_16BF, n,
                               CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS;
      },
      1);
  cublasDestroy(handle);
  if (failed) {
    std::fprintf(stderr, "fmha-runner: cublasGemmEx failed\n");
    return kUsageOrCudaError;
  }
  std::printf("ceiling bf16 GEMM %zu^3 (cuBLAS): %.1f TFLOP/s\n", n,
              2.0 * n * n * n / (gemmMs * 1e-3) / 1e12);
  return kPass;
}

} // namespace fmha_harness
