//===- CudaDriver.cpp - the CUDA driver API, opened at run time -----------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Runtime/CudaDriver.h"
#include "fmha/Support/Environment.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>

using namespace mlir;
using namespace mlir::fmha;

// cuda.h maps some names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2);
// stringizing after expansion looks up the symbol the header means.
#define FMHA_STRINGIZE_EXPANDED(x) FMHA_STRINGIZE(x)
#define FMHA_STRINGIZE(x) #x

#define FMHA_CUDA_FUNCTIONS(X)                                                 \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxGetCurrent)                                                           \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuLaunchKernelEx)                                                          \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuStreamSynchronize)                                                       \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuTensorMapEncodeTiled)

struct CudaDriver::Api {
#define FMHA_DECLARE(fn) decltype(&::fn) fn = nullptr;
  FMHA_CUDA_FUNCTIONS(FMHA_DECLARE)
#undef FMHA_DECLARE
};

CudaDriver *CudaDriver::load(std::string &error) {
  std::string name =
      readSetting(Setting::LibCuda).value_or("libcuda.so.1");
  void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = llvm::formatv("no CUDA driver: cannot open {0} ({1}); this needs "
                          "an NVIDIA GPU with its driver installed (or "
                          "FMHA_LIBCUDA naming libcuda.so)",
                          name, dlerror())
                .str();
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  std::string missing;
#define FMHA_RESOLVE(fn)                                                       \
  api->fn = reinterpret_cast<decltype(api->fn)>(                               \
      dlsym(handle, FMHA_STRINGIZE_EXPANDED(fn)));                             \
  if (!api->fn)                                                                \
    missing += " " FMHA_STRINGIZE_EXPANDED(fn);
  FMHA_CUDA_FUNCTIONS(FMHA_RESOLVE)
#undef FMHA_RESOLVE
  if (!missing.empty()) {
    error = "the CUDA driver " + name + " is too old: it lacks" + missing;
    return nullptr;
  }
  auto *driver = new CudaDriver();
  driver->api = api.release();
  driver->libraryPath = name;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(driver->api->cuInit), &info) &&
      info.dli_fname)
    driver->libraryPath = info.dli_fname;
  if (llvm::Error err = driver->check(driver->api->cuInit(0), "cuInit")) {
    error = llvm::toString(std::move(err)) +
            " (libcuda: " + driver->libraryPath + ")";
    return nullptr;
  }
  int encoded = 0;
  if (llvm::Error err = driver->check(driver->api->cuDriverGetVersion(&encoded),
                                      "cuDriverGetVersion")) {
    error = llvm::toString(std::move(err));
    return nullptr;
  }
  driver->version = CudaVersion::fromDriverEncoding(encoded);
  return driver;
}

llvm::Expected<CudaDriver &> CudaDriver::get() {
  static std::string error;
  static CudaDriver *driver = load(error);
  if (!driver)
    return llvm::createStringError(error);
  return *driver;
}

decltype(&::cuLaunchKernel) CudaDriver::getRawLaunchKernel() const {
  return api->cuLaunchKernel;
}

llvm::Error CudaDriver::check(CUresult result, llvm::StringRef call) const {
  if (result == CUDA_SUCCESS)
    return llvm::Error::success();
  const char *name = nullptr, *description = nullptr;
  if (api->cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = "unknown CUDA error";
  if (api->cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = "";
  return llvm::createStringError(
      llvm::formatv("{0} failed: {1} ({2}): {3}", call, name,
                    static_cast<int>(result), description));
}

llvm::Expected<int> CudaDriver::getDeviceCount() {
  int count = 0;
  if (llvm::Error err =
          check(api->cuDeviceGetCount(&count), "cuDeviceGetCount"))
    return std::move(err);
  return count;
}

llvm::Expected<DeviceInfo> CudaDriver::getDevice(int ordinal) {
  llvm::Expected<int> count = getDeviceCount();
  if (!count)
    return count.takeError();
  if (ordinal < 0 || ordinal >= *count)
    return llvm::createStringError(llvm::formatv(
        "no CUDA device {0}: the driver sees {1} device(s)", ordinal, *count));
  CUdevice device;
  if (llvm::Error err =
          check(api->cuDeviceGet(&device, ordinal), "cuDeviceGet"))
    return std::move(err);
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  int major = 0, minor = 0;
  if (llvm::Error err = check(api->cuDeviceGetName(name, sizeof(name), device),
                              "cuDeviceGetName"))
    return std::move(err);
  info.name = name;
  struct {
    CUdevice_attribute attribute;
    int *value;
  } queries[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.multiprocessors},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       &info.maxSharedBytesPerBlock},
  };
  for (auto &query : queries)
    if (llvm::Error err = check(
            api->cuDeviceGetAttribute(query.value, query.attribute, device),
            "cuDeviceGetAttribute"))
      return std::move(err);
  info.capability = {static_cast<unsigned>(major),
                     static_cast<unsigned>(minor)};
  // A smaller device's limit, asked for (Environment.h).
  if (std::optional<std::string> text = readSetting(Setting::MaxSharedBytes)) {
    int most = 0;
    if (llvm::StringRef(*text).getAsInteger(10, most) || most <= 0)
      return llvm::createStringError(llvm::formatv(
          "{0} is '{1}', expected a positive number of bytes (the shared "
          "memory a block may take, e.g. 101376 for an sm_86 or sm_89 GPU)",
          getSettingName(Setting::MaxSharedBytes), *text));
    info.maxSharedBytesPerBlock =
        info.maxSharedBytesPerBlock > 0
            ? std::min(info.maxSharedBytesPerBlock, most)
            : most;
  }
  return info;
}

llvm::Error CudaDriver::makeCurrent(int ordinal) {
  // The primary context is reference-counted by the driver and shared with
  // the CUDA runtime (and PyTorch) in the same process; it is retained once
  // per device and never released, as the runtime does. Each thread keeps
  // its own copy of the handles so that launches take no lock.
  thread_local llvm::DenseMap<int, CUcontext> knownContexts;
  CUcontext &context = knownContexts[ordinal];
  if (!context) {
    std::lock_guard<std::mutex> lock(contextsMutex);
    CUcontext &retained = primaryContexts[ordinal];
    if (!retained) {
      CUdevice device;
      if (llvm::Error err =
              check(api->cuDeviceGet(&device, ordinal), "cuDeviceGet"))
        return err;
      if (llvm::Error err =
              check(api->cuDevicePrimaryCtxRetain(&retained, device),
                    "cuDevicePrimaryCtxRetain"))
        return err;
    }
    context = retained;
  }
  // Another library may have made a different context current on this
  // thread since; compare rather than remember.
  CUcontext current = nullptr;
  if (llvm::Error err =
          check(api->cuCtxGetCurrent(&current), "cuCtxGetCurrent"))
    return err;
  if (current == context)
    return llvm::Error::success();
  return check(api->cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

llvm::Expected<CUmodule> CudaDriver::loadModule(llvm::StringRef image,
                                                bool isPtx) {
  std::string ptx;
  const void *data = image.data();
  if (isPtx) {
    ptx = image.str(); // NUL-terminated
    data = ptx.c_str();
  }
  char errorLog[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {errorLog, reinterpret_cast<void *>(sizeof(errorLog))};
  CUmodule module;
  CUresult result = api->cuModuleLoadDataEx(&module, data, 2, options, values);
  if (result != CUDA_SUCCESS) {
    llvm::Error err = check(result, isPtx ? "cuModuleLoadDataEx (PTX JIT)"
                                          : "cuModuleLoadDataEx (cubin)");
    return llvm::createStringError(llvm::toString(std::move(err)) +
                                   (errorLog[0] ? "\n" : "") + errorLog);
  }
  return module;
}

llvm::Error CudaDriver::unloadModule(CUmodule module) {
  return check(api->cuModuleUnload(module), "cuModuleUnload");
}

llvm::Expected<CUfunction> CudaDriver::getFunction(CUmodule module,
                                                   llvm::StringRef name) {
  CUfunction function;
  std::string nameText = name.str();
  if (llvm::Error err =
          check(api->cuModuleGetFunction(&function, module, nameText.c_str()),
                "cuModuleGetFunction(" + nameText + ")"))
    return std::move(err);
  return function;
}

llvm::Error CudaDriver::setMaxDynamicSharedBytes(CUfunction function,
                                                 int bytes) {
  return check(
      api->cuFuncSetAttribute(
          function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
      "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

llvm::Expected<CUtensorMap> CudaDriver::encodeTiledTensorMap(
    CUtensorMapDataType type, const void *data, llvm::ArrayRef<uint64_t> sizes,
    llvm::ArrayRef<uint64_t> byteStrides, llvm::ArrayRef<uint32_t> box,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion promotion) {
  assert(byteStrides.size() + 1 == sizes.size() && box.size() == sizes.size());
  CUtensorMap map;
  llvm::SmallVector<uint32_t, 5> elementStrides(sizes.size(), 1);
  CUresult result = api->cuTensorMapEncodeTiled(
      &map, type, static_cast<cuuint32_t>(sizes.size()),
      const_cast<void *>(data), sizes.data(), byteStrides.data(), box.data(),
      elementStrides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, promotion,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result == CUDA_SUCCESS)
    return map;
  std::string shape;
  llvm::raw_string_ostream os(shape);
  os << "sizes [";
  llvm::interleaveComma(sizes, os);
  os << "], byte strides [";
  llvm::interleaveComma(byteStrides, os);
  os << "], box [";
  llvm::interleaveComma(box, os);
  os << "] at " << data
     << " (the base must be 16-byte aligned and every stride a multiple of 16 "
        "bytes below 2^40)";
  return check(result, "cuTensorMapEncodeTiled(" + shape + ")");
}

llvm::Error CudaDriver::launch(CUfunction function, const unsigned grid[3],
                               const unsigned block[3], unsigned sharedBytes,
                               CUstream stream, void **arguments,
                               bool dependentLaunch) {
  if (!dependentLaunch)
    return check(api->cuLaunchKernel(function, grid[0], grid[1], grid[2],
                                     block[0], block[1], block[2], sharedBytes,
                                     stream, arguments, nullptr),
                 "cuLaunchKernel");
  CUlaunchAttribute attribute = {};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attribute.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config = {};
  config.gridDimX = grid[0];
  config.gridDimY = grid[1];
  config.gridDimZ = grid[2];
  config.blockDimX = block[0];
  config.blockDimY = block[1];
  config.blockDimZ = block[2];
  config.sharedMemBytes = sharedBytes;
  config.hStream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return check(api->cuLaunchKernelEx(&config, function, arguments, nullptr),
               "cuLaunchKernelEx (programmatic stream serialization)");
}

llvm::Expected<CUdeviceptr> CudaDriver::allocate(size_t bytes) {
  CUdeviceptr pointer;
  if (llvm::Error err = check(api->cuMemAlloc(&pointer, bytes), "cuMemAlloc"))
    return std::move(err);
  return pointer;
}

llvm::Error CudaDriver::release(CUdeviceptr pointer) {
  return check(api->cuMemFree(pointer), "cuMemFree");
}

llvm::Error CudaDriver::copyToDevice(CUdeviceptr dst, const void *src,
                                     size_t bytes) {
  return check(api->cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

llvm::Error CudaDriver::copyToHost(void *dst, CUdeviceptr src, size_t bytes) {
  return check(api->cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

llvm::Error CudaDriver::synchronize(CUstream stream) {
  return check(api->cuStreamSynchronize(stream), "cuStreamSynchronize");
}

llvm::Expected<CUevent> CudaDriver::createEvent() {
  CUevent event;
  if (llvm::Error err =
          check(api->cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate"))
    return std::move(err);
  return event;
}

llvm::Error CudaDriver::recordEvent(CUevent event, CUstream stream) {
  return check(api->cuEventRecord(event, stream), "cuEventRecord");
}

llvm::Expected<float> CudaDriver::elapsedMilliseconds(CUevent start,
                                                      CUevent end) {
  if (llvm::Error err =
          check(api->cuEventSynchronize(end), "cuEventSynchronize"))
    return std::move(err);
  float ms = 0;
  if (llvm::Error err =
          check(api->cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime"))
    return std::move(err);
  return ms;
}
