//===- JIT.cpp - the FlashCore JIT embedding API --------------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/JIT.h"
#include "fmha/JIT/CacheEntry.h"
#include "fmha/JIT/Compile.h"
#include "fmha/Target/NvJitLink.h"
#include "fmha/Target/PtxCompiler.h"

#include "FlashCoreVersion.inc"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ThreadPool.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace mlir::fmha;

llvm::StringRef fmha::getFlashCoreVersion() { return FLASHCORE_VERSION; }

void KernelArguments::addMemRef(const void *data, llvm::ArrayRef<int64_t> sizes,
                                llvm::ArrayRef<int64_t> strides) {
  auto address = static_cast<int64_t>(reinterpret_cast<uintptr_t>(data));
  size_t first = slots.size();
  for (size_t i = 0; i < 3 + sizes.size() + strides.size(); ++i)
    parameters.push_back(first + i);
  slots.push_back(address); // allocated
  slots.push_back(address); // aligned
  slots.push_back(0);       // offset
  slots.insert(slots.end(), sizes.begin(), sizes.end());
  slots.insert(slots.end(), strides.begin(), strides.end());
}

void KernelArguments::addInteger(int64_t value) {
  parameters.push_back(slots.size());
  slots.push_back(value);
}

void KernelArguments::addTensorMap(const CUtensorMap &map) {
  static_assert(sizeof(CUtensorMap) % sizeof(int64_t) == 0);
  parameters.push_back(slots.size());
  size_t first = slots.size();
  slots.resize(first + sizeof(CUtensorMap) / sizeof(int64_t));
  std::memcpy(&slots[first], &map, sizeof(CUtensorMap));
}

void **KernelArguments::get() {
  pointers.clear();
  for (size_t slot : parameters)
    pointers.push_back(&slots[slot]);
  return pointers.data();
}

static CUtensorMapDataType getTensorMapDataType(TensorMapElement element) {
  switch (element) {
  case TensorMapElement::F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case TensorMapElement::BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case TensorMapElement::F32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  }
  llvm_unreachable("unknown tensor map element");
}

static CUtensorMapSwizzle getTensorMapSwizzle(unsigned bytes) {
  switch (bytes) {
  case 32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case 64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case 128:
    return CU_TENSOR_MAP_SWIZZLE_128B;
  default:
    return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

static CUtensorMapL2promotion getTensorMapL2Promotion(unsigned bytes) {
  switch (bytes) {
  case 64:
    return CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
  case 128:
    return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  case 256:
    return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  default:
    return CU_TENSOR_MAP_L2_PROMOTION_NONE;
  }
}

/// The tensor map \p parameter describes, of \p operand (\p name).
static llvm::Expected<CUtensorMap>
encodeTensorMap(const KernelParameter &parameter, const LaunchOperand &operand,
                llvm::StringRef name) {
  size_t rank = operand.sizes.size();
  if (parameter.box.size() > rank || operand.strides.empty() ||
      operand.strides.back() != 1)
    return llvm::createStringError(llvm::formatv(
        "{0}: a tensor map needs a dense innermost dimension and at least "
        "{1} dimensions, got {2} with innermost stride {3}",
        name, parameter.box.size(), rank,
        operand.strides.empty() ? 0 : operand.strides.back()));
  llvm::Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  uint64_t elementBytes = getTensorMapElementBytes(parameter.element);
  // The driver takes dimensions innermost first.
  llvm::SmallVector<uint64_t, 5> dims, byteStrides;
  llvm::SmallVector<uint32_t, 5> box;
  for (size_t i = rank; i-- > 0;) {
    dims.push_back(static_cast<uint64_t>(operand.sizes[i]));
    if (i + 1 != rank)
      byteStrides.push_back(static_cast<uint64_t>(operand.strides[i]) *
                            elementBytes);
    size_t fromInnermost = rank - 1 - i;
    box.push_back(fromInnermost < parameter.box.size()
                      ? parameter.box[parameter.box.size() - 1 - fromInnermost]
                      : 1);
  }
  llvm::Expected<CUtensorMap> map = driver->encodeTiledTensorMap(
      getTensorMapDataType(parameter.element), operand.data, dims, byteStrides,
      box, getTensorMapSwizzle(parameter.swizzleBytes),
      getTensorMapL2Promotion(parameter.l2PromotionBytes));
  if (!map)
    return llvm::createStringError(name + ": " +
                                   llvm::toString(map.takeError()));
  return *map;
}

llvm::Error fmha::addKernelParameters(KernelArguments &arguments,
                                      const LaunchContract &contract,
                                      llvm::ArrayRef<LaunchOperand> operands) {
  if (operands.size() != contract.operands.size())
    return llvm::createStringError(
        llvm::formatv("{0} launch operands given, the kernel takes {1}",
                      operands.size(), contract.operands.size()));
  for (const KernelParameter &parameter : contract.parameters) {
    const LaunchOperand &operand = operands[parameter.operand];
    if (parameter.kind == KernelParameter::Kind::MemRef) {
      arguments.addMemRef(operand.data, operand.sizes, operand.strides);
      continue;
    }
    if (parameter.kind == KernelParameter::Kind::Index) {
      if (operand.sizes.size() != 1)
        return llvm::createStringError(llvm::formatv(
            "{0}: an index operand is passed as one size (its value), got {1}",
            contract.operands[parameter.operand], operand.sizes.size()));
      arguments.addInteger(operand.sizes[0]);
      continue;
    }
    llvm::Expected<CUtensorMap> map = encodeTensorMap(
        parameter, operand, contract.operands[parameter.operand]);
    if (!map)
      return map.takeError();
    arguments.addTensorMap(*map);
  }
  return llvm::Error::success();
}

std::optional<UnsortedTimes> fmha::decodeCheckSorted(uint64_t first) {
  if (first == kTimesSorted)
    return std::nullopt;
  return UnsortedTimes{static_cast<int64_t>(first >> 32),
                       static_cast<int64_t>(first & 0xffffffffu)};
}

ResampleTiling JIT::getResampleTiling(const KernelSpec &spec) const {
  return spec.resampleTile.value_or(getDefaultResampleTiling(plan.chip));
}

AttentionTiling JIT::getAttentionTiling(const KernelSpec &spec,
                                        std::optional<int64_t> querySeq,
                                        int64_t queryGroup) const {
  return spec.attentionTile.value_or(getDefaultAttentionTiling(
      plan.chip, spec.getHeadDims(), spec.causal, querySeq, queryGroup,
      spec.pageSize != 0, getDeviceSharedBytes()));
}

llvm::Error Kernel::launch(CUstream stream, const LaunchConfig &config,
                           void **arguments) const {
  if (llvm::is_contained(config.grid, 0u))
    return llvm::Error::success();
  if (llvm::Error err = driver->makeCurrent(device))
    return err;
  if (config.sharedBytes > sharedBytesAllowed.load()) {
    if (llvm::Error err = driver->setMaxDynamicSharedBytes(
            function, static_cast<int>(config.sharedBytes)))
      return err;
    sharedBytesAllowed.store(config.sharedBytes);
  }
  return driver->launch(function, config.grid.data(), config.block.data(),
                        config.sharedBytes, stream, arguments,
                        config.dependentLaunch);
}

llvm::Error Kernel::launch(CUstream stream,
                           llvm::ArrayRef<LaunchOperand> operands,
                           std::optional<unsigned> residentCtasOverride) const {
  if (!contract)
    return llvm::createStringError(
        "kernel '" + name +
        "' has no launch contract (it was not generated from an fmha op): "
        "launch it with a LaunchConfig");
  llvm::SmallVector<llvm::ArrayRef<int64_t>, 8> sizes;
  for (const LaunchOperand &operand : operands)
    sizes.push_back(operand.sizes);
  llvm::Expected<std::array<unsigned, 3>> grid = contract->computeGrid(
      sizes, residentCtasOverride.value_or(residentCtas));
  if (!grid)
    return grid.takeError();
  // Nothing to do, and no tensor map of an empty tensor to encode.
  if (llvm::is_contained(*grid, 0u))
    return llvm::Error::success();
  KernelArguments arguments;
  if (llvm::Error err = addKernelParameters(arguments, *contract, operands))
    return err;
  LaunchConfig config;
  config.grid = *grid;
  config.block = {contract->threads, 1, 1};
  config.sharedBytes = static_cast<unsigned>(contract->sharedBytes);
  config.dependentLaunch = contract->dependentLaunch;
  return launch(stream, config, arguments.get());
}

llvm::Expected<std::unique_ptr<JIT>> JIT::create(const JITOptions &options) {
  llvm::Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  llvm::Expected<DeviceInfo> device = driver->getDevice(options.device);
  if (!device)
    return device.takeError();
  if (llvm::Error err = driver->makeCurrent(options.device))
    return std::move(err);

  std::unique_ptr<JIT> jit(new JIT());
  jit->driver = &*driver;
  jit->device = *device;
  jit->dumpDirectory = options.dumpDirectory;
  Chip chip = options.chip.value_or(getPreferredChip(device->capability));

  llvm::Expected<const NvJitLink &> linker = NvJitLink::get();
  std::optional<CudaVersion> linkerVersion;
  std::string linkerProblem;
  if (linker)
    linkerVersion = linker->getVersion();
  else
    linkerProblem = llvm::toString(linker.takeError());
  std::optional<CudaVersion> ptxCompilerVersion;
  std::string ptxCompilerProblem;
  if (isPtxCompilerEnabled())
    ptxCompilerVersion = getPtxCompilerVersion();
  else
    ptxCompilerProblem = "the PTX compiler set aside (FMHA_PTX_COMPILER=off)";
  llvm::Expected<LoadPlan> plan =
      planLoad(chip, device->capability, device->name, driver->getVersion(),
               linkerVersion, linkerProblem, isDriverJitPreferred(),
               ptxCompilerVersion, ptxCompilerProblem);
  if (!plan)
    return plan.takeError();
  jit->plan = *plan;
  switch (plan->path) {
  case LoadPath::PtxCompiler:
    jit->imageMaker = getImageMaker(plan->path, *ptxCompilerVersion);
    break;
  case LoadPath::NvJitLink:
    jit->imageMaker = getImageMaker(plan->path, *linkerVersion);
    break;
  case LoadPath::DriverJit:
    jit->imageMaker = getImageMaker(plan->path, driver->getVersion());
    break;
  }

  std::optional<std::string> cacheDirectory =
      options.cacheDirectory ? options.cacheDirectory
                             : DiskCache::getDefaultDirectory();
  if (cacheDirectory && !cacheDirectory->empty())
    jit->diskCache.emplace(*cacheDirectory, options.cacheMaxBytes);
  if (!options.seedDirectory.empty())
    jit->seedCache.emplace(options.seedDirectory, ~uint64_t(0));
  return std::move(jit);
}

JIT::~JIT() {
  if (llvm::Error err = driver->makeCurrent(device.ordinal)) {
    // Without the context the modules cannot be unloaded; the driver frees
    // them with the context at exit.
    llvm::consumeError(std::move(err));
    return;
  }
  for (auto &entry : modules)
    llvm::consumeError(driver->unloadModule(entry.second.module));
}

llvm::StringRef JIT::getCacheDirectory() const {
  return diskCache ? diskCache->getDirectory() : llvm::StringRef();
}

void JIT::countIn(unsigned &counter) {
  std::lock_guard<std::mutex> lock(mutex);
  ++counter;
}

JITStats JIT::getStats() const {
  std::lock_guard<std::mutex> lock(mutex);
  return stats;
}

std::string fmha::getImageMaker(LoadPath path, CudaVersion version) {
  // What made the image goes in the cache key: a cubin is only loaded by
  // drivers at least as new as its compiler (planLoad checks this one), and
  // the driver-JIT path's PTX is compiled by the driver.
  switch (path) {
  case LoadPath::PtxCompiler:
    return "ptx-compiler " + version.str();
  case LoadPath::NvJitLink:
    return "nvjitlink " + version.str();
  case LoadPath::DriverJit:
    return "driver-jit " + version.str();
  }
  llvm_unreachable("unknown load path");
}

std::string fmha::getModuleCacheKey(const LoadPlan &plan,
                                    llvm::StringRef imageMaker,
                                    llvm::StringRef what,
                                    llvm::StringRef identity) {
  return computeCacheKey({"flashcore " + getFlashCoreVersion().str(),
                          "llvm " LLVM_VERSION_STRING, imageMaker.str(),
                          "ptx " + plan.ptxIsa.str(),
                          "chip " + stringifyChip(plan.chip).str(),
                          "arch " + plan.linkArch,
                          "entry: contracts, NUL, image", what.str(),
                          identity.str()});
}

std::string JIT::getKey(llvm::StringRef what,
                        llvm::StringRef identity) const {
  return getModuleCacheKey(plan, imageMaker, what, identity);
}

std::shared_ptr<std::mutex> JIT::getKeyLock(const std::string &key) {
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<std::mutex> &keyLock = keyLocks[key];
  if (!keyLock)
    keyLock = std::make_shared<std::mutex>();
  return keyLock;
}

llvm::Expected<const JIT::LoadedModule &>
JIT::loadOrCompile(const std::string &key, CompileFn compile) {
  // One compile per module: a second thread asking for it waits here and
  // then finds it loaded; other modules compile meanwhile.
  std::shared_ptr<std::mutex> keyLock = getKeyLock(key);
  std::lock_guard<std::mutex> compiling(*keyLock);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = modules.find(key);
    if (found != modules.end())
      return found->second;
  }

  LoadedModule loaded;
  std::string image;
  std::optional<std::string> payload =
      diskCache ? diskCache->load(key) : std::nullopt;
  bool seeded = false;
  if (!payload && seedCache) {
    payload = seedCache->load(key);
    seeded = payload.has_value();
  }
  if (payload) {
    // An entry that checksums but does not decode was written by another
    // build of the same version string: compile anew and overwrite it.
    if (llvm::Expected<CacheEntry> entry = decodeCacheEntry(*payload)) {
      countIn(seeded ? stats.seedHits : stats.diskHits);
      loaded.contracts = std::move(entry->contracts);
      image = std::move(entry->image);
    } else {
      llvm::consumeError(entry.takeError());
    }
  }
  if (image.empty()) {
    CompileOptions options = getCompileOptions(plan);
    if (!dumpDirectory.empty())
      options.dumpDirectory = dumpDirectory + "/" + key;
    llvm::Expected<CompiledModule> compiled = compile(options);
    if (!compiled)
      return compiled.takeError();
    countIn(stats.compiled);
    CacheEntry entry = makeCacheEntry(plan.path, std::move(*compiled));
    // A cache that cannot be written costs time, not correctness.
    if (diskCache)
      llvm::consumeError(diskCache->store(key, encodeCacheEntry(entry)));
    loaded.contracts = std::move(entry.contracts);
    image = std::move(entry.image);
  }
  llvm::Expected<CUmodule> module =
      driver->loadModule(image, isPtxImage(plan.path));
  if (!module)
    return module.takeError();
  loaded.module = *module;
  std::lock_guard<std::mutex> lock(mutex);
  return modules[key] = std::move(loaded);
}

llvm::Error fmha::checkSharedBytesFit(llvm::StringRef kernelName,
                                      uint64_t sharedBytes,
                                      const DeviceInfo &device) {
  if (device.maxSharedBytesPerBlock <= 0 ||
      sharedBytes <= static_cast<uint64_t>(device.maxSharedBytesPerBlock))
    return llvm::Error::success();
  return llvm::createStringError(llvm::formatv(
      "kernel '{0}' needs {1} bytes of shared memory a block, and device {2} "
      "({3}, {4}) allows {5}: sm_80's tiles are sized for an A100 (163 KB); "
      "run it there or on an H100/H200, or ask for less (fmhaAttention: a "
      "smaller tile; fmhaAttentionBackward: no workspace, whose kernels fit "
      "99 KB)",
      kernelName, sharedBytes, device.ordinal, device.name,
      device.capability.arch(), device.maxSharedBytesPerBlock));
}

llvm::Expected<std::unique_ptr<Kernel>>
JIT::loadKernel(const std::string &key, llvm::StringRef kernelName,
                CompileFn compile) {
  if (llvm::Error err = driver->makeCurrent(device.ordinal))
    return std::move(err);
  llvm::Expected<const LoadedModule &> module = loadOrCompile(key, compile);
  if (!module)
    return module.takeError();
  llvm::Expected<CUfunction> function =
      driver->getFunction(module->module, kernelName);
  if (!function)
    return function.takeError();
  auto kernel = std::make_unique<Kernel>();
  kernel->name = kernelName.str();
  kernel->function = *function;
  kernel->driver = driver;
  kernel->device = device.ordinal;
  auto contract = module->contracts.find(kernelName.str());
  if (contract != module->contracts.end())
    kernel->contract = contract->second;
  kernel->residentCtas = static_cast<unsigned>(device.multiprocessors);
  // Opted into at load, not at the first launch: a launch inside CUDA graph
  // capture then only launches.
  if (kernel->contract && kernel->contract->sharedBytes > 0) {
    auto bytes = static_cast<unsigned>(kernel->contract->sharedBytes);
    if (llvm::Error err = checkSharedBytesFit(kernelName, bytes, device))
      return std::move(err);
    if (llvm::Error err =
            driver->setMaxDynamicSharedBytes(kernel->function, bytes))
      return std::move(err);
    kernel->sharedBytesAllowed.store(bytes);
  }
  return std::move(kernel);
}

llvm::Expected<const Kernel &>
JIT::getKernelFromSource(llvm::StringRef source, llvm::StringRef kernelName) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto bySource = sourceKernels.find(source);
    if (bySource != sourceKernels.end()) {
      auto found = bySource->second.find(kernelName);
      if (found != bySource->second.end()) {
        ++stats.memoryHits;
        return *found->second;
      }
    }
  }
  llvm::Expected<std::unique_ptr<Kernel>> kernel = loadKernel(
      getKey("source", source), kernelName,
      [&](const CompileOptions &options) {
        return compileModule(source, options);
      });
  if (!kernel)
    return kernel.takeError();
  // Two threads may both have made this kernel of the (one) loaded module:
  // the first one published is kept.
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Kernel> &slot = sourceKernels[source][kernelName];
  if (!slot)
    slot = std::move(*kernel);
  return *slot;
}

char KernelNotLoadedError::ID;

void KernelNotLoadedError::log(llvm::raw_ostream &os) const {
  os << "the kernel for '" << specKey
     << "' is not loaded, and this launch may not compile or load one (a "
        "launch inside CUDA graph capture): run the same call once before "
        "the capture, or prepare it (fmhaAttentionEx with "
        "FMHA_CALL_PREPARE_ONLY, flashcore.precompile)";
}

llvm::Expected<const Kernel &> JIT::getKernel(const KernelSpec &spec,
                                              KernelSource source,
                                              llvm::StringRef kernelName) {
  if (kernelName.empty())
    kernelName = spec.getKernelName();
  // The first kernel of a spec is known by the spec's key alone; the others
  // of its module by the key and their names.
  std::string specKey = spec.getKey();
  if (kernelName != spec.getKernelName())
    specKey += " kernel " + kernelName.str();
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = specKernels.find(specKey);
    if (found != specKernels.end()) {
      ++stats.memoryHits;
      return *found->second;
    }
  }
  if (source == KernelSource::LoadedOnly)
    return llvm::make_error<KernelNotLoadedError>(std::move(specKey));
  llvm::Expected<std::unique_ptr<Kernel>> kernel = loadKernel(
      getKey("spec", spec.getKey()), kernelName,
      [&](const CompileOptions &options) {
        return compileKernelSpec(spec, options);
      });
  if (!kernel)
    return kernel.takeError();
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Kernel> &slot = specKernels[specKey];
  if (!slot)
    slot = std::move(*kernel);
  return *slot;
}

llvm::Error JIT::precompile(llvm::ArrayRef<KernelSpec> specs,
                            unsigned threads) {
  std::vector<KernelSpec> work;
  llvm::StringSet<> keys;
  for (const KernelSpec &spec : specs)
    if (keys.insert(spec.getKey()).second)
      work.push_back(spec);
  // LLVM's pool: at most `threads` (0: one per hardware thread), and never
  // more than there are kernels.
  llvm::DefaultThreadPool pool(llvm::hardware_concurrency(threads));
  std::mutex failuresMutex;
  std::string failures;
  for (const KernelSpec &spec : work)
    pool.async([&, &spec = spec] {
      // The first kernel compiles the module; the others load from it.
      for (llvm::StringRef name : spec.getKernelNames()) {
        llvm::Expected<const Kernel &> kernel =
            getKernel(spec, KernelSource::CompileOnMiss, name);
        if (kernel)
          continue;
        std::string failure = "\n  " + spec.getKey() + ": " +
                              llvm::toString(kernel.takeError());
        std::lock_guard<std::mutex> lock(failuresMutex);
        failures += failure;
        return;
      }
    });
  pool.wait();
  if (failures.empty())
    return llvm::Error::success();
  return llvm::createStringError("precompile: these kernels failed:" +
                                 failures);
}
