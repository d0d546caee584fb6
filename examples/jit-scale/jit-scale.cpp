//===- jit-scale.cpp - the JIT API end to end on a GPU --------------------===//
//
// Part of FlashCore. Compiles examples/jit-scale/scale.mlir through the JIT
// (MLIR -> PTX -> cubin, or the driver's PTX JIT), launches it on fresh
// random data and checks every element. The chip defaults to the device's
// (sm_90a on Hopper); passing sm_80 runs the sm_80 PTX linked for this GPU.
// Exit status: 0 correct, 1 wrong or
// failed, 77 no GPU here (the message says what is missing).
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/TileConfig.h"
#include "fmha/JIT/JIT.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <random>
#include <vector>

using namespace mlir::fmha;

static constexpr int kSkipped = 77;

static int fail(llvm::Error err) {
  llvm::errs() << "jit-scale: " << llvm::toString(std::move(err)) << "\n";
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    llvm::errs() << "usage: jit-scale <scale.mlir> [sm_80|sm_90a]\n";
    return 1;
  }
  JITOptions options;
  if (argc == 3) {
    llvm::Expected<Chip> chip = parseChip(argv[2]);
    if (!chip)
      return fail(chip.takeError());
    options.chip = *chip;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> source =
      llvm::MemoryBuffer::getFile(argv[1]);
  if (!source) {
    llvm::errs() << "jit-scale: cannot read " << argv[1] << "\n";
    return 1;
  }
  llvm::Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver) {
    llvm::errs() << "jit-scale: skipped: " << llvm::toString(driver.takeError())
                 << "\n";
    return kSkipped;
  }
  llvm::Expected<std::unique_ptr<JIT>> jit = JIT::create(options);
  if (!jit)
    return fail(jit.takeError());
  const LoadPlan &plan = (*jit)->getLoadPlan();
  llvm::outs() << "device: " << (*jit)->getDevice().name << " ("
               << (*jit)->getDevice().capability.arch() << "), driver CUDA "
               << driver->getVersion().str() << "\n"
               << "plan: chip " << stringifyChip(plan.chip) << ", PTX ISA "
               << plan.ptxIsa.str() << ", link arch " << plan.linkArch << "; "
               << plan.reason << "\n";

  llvm::Expected<const Kernel &> kernel =
      (*jit)->getKernelFromSource((*source)->getBuffer(), "scale");
  if (!kernel)
    return fail(kernel.takeError());
  JITStats stats = (*jit)->getStats();
  llvm::outs() << "kernel: " << (stats.compiled ? "compiled" : "disk cache")
               << "\n";

  // An odd size so that the bounds check in the kernel matters.
  const int64_t n = (1 << 20) + 37;
  const float s = 1.5f;
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> host(n), result(n, std::nanf(""));
  for (float &value : host)
    value = dist(rng);

  llvm::Expected<CUdeviceptr> device = driver->allocate(n * sizeof(float));
  if (!device)
    return fail(device.takeError());
  if (llvm::Error err =
          driver->copyToDevice(*device, host.data(), n * sizeof(float)))
    return fail(std::move(err));
  CUdeviceptr allocated = *device, aligned = *device;
  int64_t offset = 0, size = n, stride = 1, count = n;
  float factor = s;
  void *arguments[] = {&allocated, &aligned, &offset, &size,
                       &stride,    &count,   &factor};
  LaunchConfig config;
  config.block = {256, 1, 1};
  config.grid = {static_cast<unsigned>((n + 255) / 256), 1, 1};
  if (llvm::Error err = kernel->launch(nullptr, config, arguments))
    return fail(std::move(err));
  if (llvm::Error err = driver->synchronize(nullptr))
    return fail(std::move(err));
  if (llvm::Error err =
          driver->copyToHost(result.data(), *device, n * sizeof(float)))
    return fail(std::move(err));
  llvm::consumeError(driver->release(*device));

  int64_t wrong = 0;
  float maxError = 0;
  for (int64_t i = 0; i < n; ++i) {
    float error = std::fabs(result[i] - host[i] * s);
    if (!(error == 0))
      ++wrong;
    if (!(error <= maxError))
      maxError = error;
  }
  llvm::outs() << "checked " << n << " elements: " << wrong
               << " wrong, max abs error " << maxError << "\n";
  return wrong == 0 ? 0 : 1;
}
