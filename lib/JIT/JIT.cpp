//===- JIT.cpp - the FlashCore JIT embedding API --------------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/JIT.h"
#include "fmha/JIT/Compile.h"
#include "fmha/Target/NvJitLink.h"

#include "FlashCoreVersion.inc"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace mlir::fmha;

llvm::StringRef fmha::getFlashCoreVersion() { return FLASHCORE_VERSION; }

static llvm::StringRef getElementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::F32:
    return "f32";
  }
  llvm_unreachable("unknown element type");
}

std::string KernelSpec::toMLIR() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::StringRef type = getElementTypeName(elementType);
  if (kind == OpKind::Attention) {
    // Any strides with a dense head dimension: BHSD and BSHD alike.
    std::string tensor = llvm::formatv(
        "memref<?x?x?x{0}x{1}, strided<[?, ?, ?, 1], offset: ?>>", headDim,
        type);
    std::string lse = "memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>";
    os << "func.func @attention(%q: " << tensor << ", %k: " << tensor
       << ", %v: " << tensor << ", %o: " << tensor;
    if (withLse)
      os << ", %lse: " << lse;
    os << ") {\n  fmha.attention q(%q : " << tensor << ") k(%k : " << tensor
       << ") v(%v : " << tensor << ") -> o(%o : " << tensor << ")";
    if (withLse)
      os << " lse(%lse : " << lse << ")";
    if (causal)
      os << " causal";
    llvm::SmallVector<std::string> attributes;
    if (scale)
      attributes.push_back(llvm::formatv("scale = {0:e} : f32", *scale));
    if (window)
      attributes.push_back(llvm::formatv("window = array<i64: {0}, {1}>",
                                         (*window)[0], (*window)[1]));
    if (attentionTile)
      attributes.push_back(llvm::formatv(
          "tile = #fmha.tile<{0}, block_m = {1}, block_n = {2}, warps = {3}, "
          "stages = {4}>",
          stringifyChip(attentionTile->chip), attentionTile->blockM,
          attentionTile->blockN, attentionTile->warps, attentionTile->stages));
    if (!attributes.empty())
      os << " {" << llvm::join(attributes, ", ") << "}";
    os << "\n  return\n}\n";
    return text;
  }

  unsigned total = 0;
  bool checkSorted = kind == OpKind::CheckSorted;
  llvm::SmallVector<std::string> times, values, lengths, timeTypes, valueTypes,
      lengthTypes, arguments;
  for (auto [index, features] : llvm::enumerate(streamFeatures)) {
    total += features;
    times.push_back(llvm::formatv("%t{0}", index));
    values.push_back(llvm::formatv("%x{0}", index));
    lengths.push_back(llvm::formatv("%n{0}", index));
    timeTypes.push_back("memref<?x?xf32>");
    valueTypes.push_back(llvm::formatv("memref<?x?x{0}x{1}>", features, type));
    lengthTypes.push_back("memref<?xi32>");
    arguments.push_back(times.back() + ": " + timeTypes.back());
    if (!checkSorted)
      arguments.push_back(values.back() + ": " + valueTypes.back());
    if (withLengths)
      arguments.push_back(lengths.back() + ": " + lengthTypes.back());
  }
  std::string lengthsClause =
      withLengths ? " lengths(" + llvm::join(lengths, ", ") + " : " +
                        llvm::join(lengthTypes, ", ") + ")"
                  : "";
  if (checkSorted) {
    std::string first =
        llvm::formatv("memref<{0}xi64>", streamFeatures.size());
    arguments.push_back("%first: " + first);
    os << "func.func @check_sorted(" << llvm::join(arguments, ", ")
       << ") {\n  fmha.check_sorted times(" << llvm::join(times, ", ")
       << " : " << llvm::join(timeTypes, ", ") << ")" << lengthsClause
       << " -> first(%first : " << first << ")\n  return\n}\n";
    return text;
  }
  std::string out = llvm::formatv("memref<?x?x{0}x{1}>", total, type);
  arguments.push_back("%targets: memref<?x?xf32>");
  arguments.push_back("%out: " + out);
  os << "func.func @resample(" << llvm::join(arguments, ", ") << ") {\n"
     << "  fmha.resample " << stringifyResampleMode(mode) << " times("
     << llvm::join(times, ", ") << " : " << llvm::join(timeTypes, ", ")
     << ") values(" << llvm::join(values, ", ") << " : "
     << llvm::join(valueTypes, ", ") << ")";
  os << lengthsClause << " targets(%targets : memref<?x?xf32>) -> out(%out : " << out << ")";
  if (resampleTile)
    os << llvm::formatv(
        " {tile = #fmha.resample_tile<{0}, block_t = {1}, threads = {2}>}",
        stringifyChip(resampleTile->chip), resampleTile->blockT,
        resampleTile->threads);
  os << "\n  return\n}\n";
  return text;
}

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

llvm::Error fmha::addAttentionTensorMap(KernelArguments &arguments,
                                        ElementType elementType,
                                        const void *data,
                                        llvm::ArrayRef<int64_t> sizes,
                                        llvm::ArrayRef<int64_t> strides,
                                        unsigned boxRows) {
  assert(sizes.size() == 4 && strides.size() == 4 && strides[3] == 1);
  if (elementType == ElementType::F32)
    return llvm::createStringError("attention takes f16 or bf16, not f32");
  llvm::Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  constexpr uint64_t kElementBytes = 2;
  // Innermost first: D, S, H, B.
  uint64_t dims[] = {uint64_t(sizes[3]), uint64_t(sizes[2]),
                     uint64_t(sizes[1]), uint64_t(sizes[0])};
  uint64_t byteStrides[] = {uint64_t(strides[2]) * kElementBytes,
                            uint64_t(strides[1]) * kElementBytes,
                            uint64_t(strides[0]) * kElementBytes};
  // 64 elements: one 128-byte swizzle row (AttentionToGPUSm90.cpp).
  uint32_t box[] = {64, boxRows, 1, 1};
  llvm::Expected<CUtensorMap> map = driver->encodeTiledTensorMap(
      elementType == ElementType::F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                      : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
      data, dims, byteStrides, box, CU_TENSOR_MAP_SWIZZLE_128B);
  if (!map)
    return map.takeError();
  arguments.addTensorMap(*map);
  return llvm::Error::success();
}

LaunchConfig fmha::getResampleLaunchConfig(const ResampleTiling &tiling,
                                           int64_t batch, int64_t targets) {
  LaunchConfig config;
  config.grid = {
      static_cast<unsigned>((targets + tiling.blockT - 1) / tiling.blockT),
      static_cast<unsigned>(std::min(batch, kMaxGridDimY)), 1};
  config.block = {tiling.threads, 1, 1};
  return config;
}

LaunchConfig fmha::getCheckSortedLaunchConfig(int64_t batch) {
  LaunchConfig config;
  // ResampleToGPU.cpp's launch: rows stride by the grid's x extent.
  config.grid = {static_cast<unsigned>(std::min(batch, kMaxGridDimY)), 1, 1};
  config.block = {kCheckSortedThreads, 1, 1};
  return config;
}

std::optional<UnsortedTimes> fmha::decodeCheckSorted(uint64_t first) {
  if (first == kTimesSorted)
    return std::nullopt;
  return UnsortedTimes{static_cast<int64_t>(first >> 32),
                       static_cast<int64_t>(first & 0xffffffffu)};
}

LaunchConfig fmha::getAttentionLaunchConfig(const AttentionTiling &tiling,
                                            unsigned headDim,
                                            unsigned elementBytes,
                                            int64_t batch, int64_t queryHeads,
                                            int64_t querySeq,
                                            const AttentionSchedule &schedule) {
  LaunchConfig config;
  int64_t rowBlocks = (querySeq + tiling.blockM - 1) / tiling.blockM;
  if (tiling.chip == Chip::sm_90a) {
    // AttentionToGPUSm90.cpp: CTA x takes units x, x + gridDim.x, ...
    int64_t ctas = std::min(
        getAttentionWorkUnits(batch, queryHeads, rowBlocks,
                              schedule.pairsRowBlocks),
        kMaxGridDimX);
    if (schedule.residentCtas)
      ctas = std::min<int64_t>(ctas, schedule.residentCtas);
    config.grid = {static_cast<unsigned>(ctas), 1, 1};
  } else {
    config.grid = {static_cast<unsigned>(rowBlocks),
                   static_cast<unsigned>(queryHeads),
                   static_cast<unsigned>(std::min(batch, kMaxGridDimY))};
  }
  config.block = {tiling.warps * 32, 1, 1};
  config.sharedBytes = static_cast<unsigned>(
      getAttentionSharedBytes(tiling, headDim, elementBytes));
  return config;
}

ResampleTiling JIT::getResampleTiling(const KernelSpec &spec) const {
  return spec.resampleTile.value_or(getDefaultResampleTiling(plan.chip));
}

AttentionTiling
JIT::getAttentionTiling(const KernelSpec &spec,
                        std::optional<int64_t> querySeq) const {
  return spec.attentionTile.value_or(getDefaultAttentionTiling(
      plan.chip, spec.headDim, spec.causal, querySeq));
}

AttentionSchedule JIT::getAttentionSchedule(const KernelSpec &spec) const {
  // Each sm_90a attention CTA fills an SM (its registers, with setmaxnreg).
  return {pairsAttentionRowBlocks(spec.causal, spec.window.has_value()),
          static_cast<unsigned>(device.multiprocessors)};
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
                        config.sharedBytes, stream, arguments);
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
  llvm::Expected<LoadPlan> plan =
      planLoad(chip, device->capability, device->name, driver->getVersion(),
               linkerVersion, linkerProblem, isDriverJitPreferred());
  if (!plan)
    return plan.takeError();
  jit->plan = *plan;
  jit->linkerVersion = plan->path == LoadPath::NvJitLink
                           ? "nvjitlink " + linkerVersion->str()
                           : "driver-jit " + driver->getVersion().str();

  std::optional<std::string> cacheDirectory =
      options.cacheDirectory ? options.cacheDirectory
                             : DiskCache::getDefaultDirectory();
  if (cacheDirectory && !cacheDirectory->empty())
    jit->diskCache.emplace(*cacheDirectory, options.cacheMaxBytes);
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
    llvm::consumeError(driver->unloadModule(entry.second));
}

llvm::StringRef JIT::getCacheDirectory() const {
  return diskCache ? diskCache->getDirectory() : llvm::StringRef();
}

JITStats JIT::getStats() const {
  std::lock_guard<std::mutex> lock(mutex);
  return stats;
}

std::string JIT::getKey(llvm::StringRef source) const {
  return computeCacheKey({"flashcore " + getFlashCoreVersion().str(),
                          "llvm " LLVM_VERSION_STRING, linkerVersion,
                          "ptx " + plan.ptxIsa.str(),
                          "chip " + stringifyChip(plan.chip).str(),
                          "arch " + plan.linkArch, source.str()});
}

llvm::Expected<CUmodule> JIT::loadOrCompile(const std::string &key,
                                            llvm::StringRef source) {
  auto found = modules.find(key);
  if (found != modules.end())
    return found->second;

  // The payload is a cubin on the nvJitLink path, PTX on the driver's.
  bool isPtx = plan.path == LoadPath::DriverJit;
  std::optional<std::string> image;
  if (diskCache && (image = diskCache->load(key)))
    ++stats.diskHits;
  if (!image) {
    CompileOptions options;
    options.chip = plan.chip;
    options.ptxIsa = plan.ptxIsa;
    if (!isPtx)
      options.linkArch = plan.linkArch;
    if (!dumpDirectory.empty())
      options.dumpDirectory = dumpDirectory + "/" + key;
    llvm::Expected<CompiledModule> compiled = compileModule(source, options);
    if (!compiled)
      return compiled.takeError();
    ++stats.compiled;
    image = isPtx ? std::move(compiled->ptx) : std::move(compiled->cubin);
    // A cache that cannot be written costs time, not correctness.
    if (diskCache)
      llvm::consumeError(diskCache->store(key, *image));
  }
  llvm::Expected<CUmodule> module = driver->loadModule(*image, isPtx);
  if (!module)
    return module.takeError();
  modules[key] = *module;
  return *module;
}

llvm::Expected<const Kernel &>
JIT::getKernelFromSource(llvm::StringRef source, llvm::StringRef kernelName) {
  std::lock_guard<std::mutex> lock(mutex);
  auto bySource = kernels.find(source);
  if (bySource != kernels.end()) {
    auto found = bySource->second.find(kernelName);
    if (found != bySource->second.end()) {
      ++stats.memoryHits;
      return *found->second;
    }
  }
  if (llvm::Error err = driver->makeCurrent(device.ordinal))
    return std::move(err);
  llvm::Expected<CUmodule> module = loadOrCompile(getKey(source), source);
  if (!module)
    return module.takeError();
  llvm::Expected<CUfunction> function =
      driver->getFunction(*module, kernelName);
  if (!function)
    return function.takeError();
  auto kernel = std::make_unique<Kernel>();
  kernel->name = kernelName.str();
  kernel->function = *function;
  kernel->driver = driver;
  kernel->device = device.ordinal;
  const Kernel &result = *kernel;
  kernels[source][kernelName] = std::move(kernel);
  return result;
}

llvm::Expected<const Kernel &> JIT::getKernel(const KernelSpec &spec) {
  return getKernelFromSource(spec.toMLIR(), spec.getKernelName());
}

llvm::StringRef KernelSpec::getKernelName() const {
  // The lowerings name each kernel after its op.
  switch (kind) {
  case OpKind::Attention:
    return "attention";
  case OpKind::Resample:
    return "resample";
  case OpKind::CheckSorted:
    return "check_sorted";
  }
  llvm_unreachable("unknown op kind");
}
