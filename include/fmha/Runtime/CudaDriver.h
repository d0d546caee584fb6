//===- CudaDriver.h - the CUDA driver API, opened at run time ---*- C++ -*-===//
//
// Part of FlashCore. libcuda.so.1 is opened with dlopen, so every tool starts
// on a machine without a driver and says so when it needs one. Only the
// types come from cuda.h; nothing links against libcuda.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_RUNTIME_CUDADRIVER_H
#define FMHA_RUNTIME_CUDADRIVER_H

#include "fmha/Runtime/LoadPlan.h"
#include "fmha/Target/PtxIsa.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cuda.h>
#include <mutex>
#include <string>

namespace mlir::fmha {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  ComputeCapability capability;
  int multiprocessors = 0;
  /// Opt-in shared memory per block, in bytes.
  int maxSharedBytesPerBlock = 0;
};

class CudaDriver {
public:
  /// The process-wide driver: $FMHA_LIBCUDA if set, else libcuda.so.1,
  /// initialized with cuInit. The error says there is no driver and what to
  /// install.
  static llvm::Expected<CudaDriver &> get();

  CudaVersion getVersion() const { return version; }
  /// The file libcuda was loaded from.
  llvm::StringRef getLibraryPath() const { return libraryPath; }

  llvm::Expected<int> getDeviceCount();
  llvm::Expected<DeviceInfo> getDevice(int ordinal);
  /// Makes \p ordinal's primary context current on the calling thread.
  llvm::Error makeCurrent(int ordinal);

  /// Loads a cubin, or NUL-terminated PTX that the driver compiles itself;
  /// the driver's JIT error log is part of the error.
  llvm::Expected<CUmodule> loadModule(llvm::StringRef image, bool isPtx);
  llvm::Error unloadModule(CUmodule module);
  llvm::Expected<CUfunction> getFunction(CUmodule module, llvm::StringRef name);
  /// Allows \p function more than 48 KB of dynamic shared memory.
  llvm::Error setMaxDynamicSharedBytes(CUfunction function, int bytes);
  /// A TMA tensor map (cuTensorMapEncodeTiled) of the tensor at \p data:
  /// \p sizes innermost first, \p byteStrides of every dimension but the
  /// innermost, boxes of \p box elements, L2 fills of \p promotion (the
  /// contract's, KernelParameter::l2PromotionBytes); zeros read past the
  /// bounds.
  llvm::Expected<CUtensorMap>
  encodeTiledTensorMap(CUtensorMapDataType type, const void *data,
                       llvm::ArrayRef<uint64_t> sizes,
                       llvm::ArrayRef<uint64_t> byteStrides,
                       llvm::ArrayRef<uint32_t> box, CUtensorMapSwizzle swizzle,
                       CUtensorMapL2promotion promotion);
  /// Launches \p function; a \p dependentLaunch with programmatic stream
  /// serialization, for a kernel that waits for the previous grid itself
  /// (LaunchContract::dependentLaunch).
  llvm::Error launch(CUfunction function, const unsigned grid[3],
                     const unsigned block[3], unsigned sharedBytes,
                     CUstream stream, void **arguments,
                     bool dependentLaunch = false);

  // Memory, streams and events, for examples, tests and benchmarks.
  llvm::Expected<CUdeviceptr> allocate(size_t bytes);
  llvm::Error release(CUdeviceptr pointer);
  llvm::Error copyToDevice(CUdeviceptr dst, const void *src, size_t bytes);
  llvm::Error copyToHost(void *dst, CUdeviceptr src, size_t bytes);
  llvm::Error synchronize(CUstream stream);
  llvm::Expected<CUevent> createEvent();
  llvm::Error recordEvent(CUevent event, CUstream stream);
  llvm::Expected<float> elapsedMilliseconds(CUevent start, CUevent end);

  /// Turns a CUresult into an error naming the call, the CUDA error name and
  /// its description.
  llvm::Error check(CUresult result, llvm::StringRef call) const;

  /// The driver's own cuLaunchKernel, for timing a bare launch against ours.
  decltype(&::cuLaunchKernel) getRawLaunchKernel() const;

  /// The resolved entry points (defined in CudaDriver.cpp).
  struct Api;

private:
  CudaDriver() = default;
  static CudaDriver *load(std::string &error);

  const Api *api = nullptr;
  CudaVersion version;
  std::string libraryPath;
  /// Retained primary context of each device ordinal.
  std::mutex contextsMutex;
  llvm::DenseMap<int, CUcontext> primaryContexts;
};

} // namespace mlir::fmha

#endif // FMHA_RUNTIME_CUDADRIVER_H
