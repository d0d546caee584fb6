//===- fmha-seed.cpp - the kernels a package ships, as cache entries ------===//
//
// Part of FlashCore. Compiles the common attention kernels (head dim 64, 128
// and 256; bf16 and f16; causal or not; with and without LSE; the default
// scale; every tile a query length picks; the backward Python runs) as the JIT
// would under the PTX compiler's load plan on the common devices (sm_90a on
// compute capability 9.0; sm_80 PTX on 8.0, 8.6 and 8.9, the last two with the
// tiles that fit their 99 KB of shared memory a block), and writes them to a
// directory as disk cache entries under the JIT's own keys (getModuleCacheKey).
// The Python wheel ships that directory (flashcore/kernels), and a JIT given it
// as JITOptions::seedDirectory loads those kernels with no compile in a
// process whose disk cache is empty. Needs no GPU.
//
// Usage: fmha-seed -o DIR [--threads N]
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/CacheEntry.h"
#include "fmha/JIT/Compile.h"
#include "fmha/JIT/DiskCache.h"
#include "fmha/JIT/JIT.h"
#include "fmha/Runtime/LoadPlan.h"
#include "fmha/Target/PtxCompiler.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

#include <mutex>
#include <vector>

using namespace mlir::fmha;

static llvm::cl::opt<std::string> outputDirectory(
    "o", llvm::cl::desc("the directory to write the entries to"),
    llvm::cl::Required);
static llvm::cl::opt<unsigned>
    threads("threads", llvm::cl::desc("compiles at once (0: one per core)"),
            llvm::cl::init(0));

namespace {
/// One chip on the devices it is shipped for: one plan per device, and the
/// shared memory a block may opt into on those devices where it is less
/// than the chip's (0: the chip's), which picks the tiles that fit there.
struct Target {
  Chip chip;
  uint64_t sharedBytes;
  /// The first of the devices: each runs the same kernels.
  ComputeCapability device;
  std::vector<LoadPlan> plans;
};

/// One kernel to compile, and the plans it is stored under: every target's
/// of its chip that ships it (sm_80's kernels that fit 99 KB are the same
/// for 8.0, 8.6 and 8.9, compiled once).
struct Job {
  Chip chip;
  KernelSpec spec;
  std::vector<const LoadPlan *> plans;
};
} // namespace

/// The plans of \p chip on \p devices under the oldest driver that takes
/// the PTX compiler's cubins: newer drivers plan the same (the PTX ISA is
/// capped by LLVM's).
static llvm::Expected<Target>
getTarget(Chip chip, uint64_t sharedBytes,
          const std::vector<ComputeCapability> &devices) {
  Target target{chip, sharedBytes, devices.front(), {}};
  CudaVersion compiler = getPtxCompilerVersion();
  for (ComputeCapability device : devices) {
    llvm::Expected<LoadPlan> plan =
        planLoad(chip, device, device.arch(), compiler, std::nullopt,
                 "not used", /*preferDriverJit=*/true, compiler);
    if (!plan)
      return plan.takeError();
    if (plan->path != LoadPath::PtxCompiler)
      return llvm::createStringError(
          llvm::formatv("{0} on {1}: the plan is not the PTX compiler's ({2})",
                        stringifyChip(chip), device.arch(), plan->reason));
    target.plans.push_back(*plan);
  }
  return target;
}

static std::vector<KernelSpec> getSpecs(Chip chip, ComputeCapability device,
                                        uint64_t sharedBytes) {
  std::vector<KernelSpec> specs;
  // Variants share kernels (one query's non-causal one, decode's split-KV
  // kernel and merge): each is compiled once.
  llvm::StringSet<> keys;
  for (unsigned headDim : {64u, 128u, 256u})
    for (ElementType type : {ElementType::BF16, ElementType::F16})
      for (bool causal : {false, true})
        for (bool withLse : {false, true}) {
          KernelSpec spec;
          spec.headDim = headDim;
          spec.elementType = type;
          spec.causal = causal;
          spec.withLse = withLse;
          for (KernelSpec &launched : getLaunchSpecs(
                   spec, chip, std::nullopt, /*queryGroup=*/1, sharedBytes))
            if (keys.insert(launched.getKey()).second)
              specs.push_back(std::move(launched));
          // The backwards that run by default, deterministic (Python under
          // torch.use_deterministic_algorithms(True)) or not: the one-pass
          // kernel where isDefaultAttentionGradOnePass (on sm_90a in a
          // fixed order where deterministic), else the deterministic
          // kernels (three, four past head dim 128).
          for (bool deterministic : {true, false}) {
            KernelSpec grad = getAttentionGradLaunchSpec(
                getAttentionGradSpec(spec, chip,
                                     isDefaultAttentionGradOnePass(
                                         chip, device, headDim, deterministic),
                                     deterministic),
                chip, sharedBytes);
            // Grouped query heads may run it sliced
            // (JIT::getAttentionGradSlices).
            KernelSpec sliced = grad;
            sliced.slicedQueryHeads = true;
            if (keys.insert(grad.getKey()).second)
              specs.push_back(std::move(grad));
            if (canSliceAttentionGradQueryHeads(sliced, chip) &&
                keys.insert(sliced.getKey()).second)
              specs.push_back(std::move(sliced));
          }
        }
  return specs;
}

/// Compiles \p job once to PTX and to a cubin per plan, and stores each.
static llvm::Error runJob(const Job &job, DiskCache &cache,
                          llvm::StringRef imageMaker) {
  const LoadPlan &first = *job.plans.front();
  CompileOptions options = getCompileOptions(first);
  llvm::Expected<CompiledModule> compiled =
      compileKernelSpec(job.spec, options);
  if (!compiled)
    return compiled.takeError();
  for (const LoadPlan *planned : job.plans) {
    const LoadPlan &plan = *planned;
    CompiledModule module = *compiled;
    if (plan.linkArch != first.linkArch) {
      llvm::Expected<LinkedCubin> cubin =
          compilePtxWholeProgram(module.ptx, plan.linkArch);
      if (!cubin)
        return cubin.takeError();
      module.cubin = std::move(cubin->cubin);
    }
    std::string key = getModuleCacheKey(plan, imageMaker, "spec",
                                        job.spec.getKey());
    if (llvm::Error err = cache.store(
            key, encodeCacheEntry(makeCacheEntry(plan.path, std::move(module)))))
      return err;
  }
  return llvm::Error::success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "the kernels a package ships, as JIT cache entries\n");
  // The devices each chip is shipped for: Hopper; the A100; A10/A40/RTX 30
  // and L4/L40/RTX 40, whose 99 KB of shared memory a block take sm_80's
  // forward and backward past head dim 128 on smaller tiles
  // (getDefaultAttentionTiling, getAttentionGradLaunchSpec).
  struct Shipped {
    Chip chip;
    uint64_t sharedBytes;
    std::vector<ComputeCapability> devices;
  };
  const std::vector<Shipped> shipped = {
      {Chip::sm_90a, 0, {{9, 0}}},
      {Chip::sm_80, 0, {{8, 0}}},
      {Chip::sm_80, kSm8xSharedBytesPerBlock, {{8, 6}, {8, 9}}}};
  std::vector<Target> targets;
  for (const auto &[chip, sharedBytes, devices] : shipped) {
    llvm::Expected<Target> target = getTarget(chip, sharedBytes, devices);
    if (!target) {
      llvm::errs() << "fmha-seed: " << llvm::toString(target.takeError())
                   << "\n";
      return 1;
    }
    targets.push_back(std::move(*target));
  }
  std::vector<Job> jobs;
  llvm::StringMap<size_t> jobOfSpec;
  for (const Target &target : targets)
    for (KernelSpec &spec :
         getSpecs(target.chip, target.device, target.sharedBytes)) {
      std::string key =
          (stringifyChip(target.chip) + " " + spec.getKey()).str();
      auto [found, added] = jobOfSpec.try_emplace(key, jobs.size());
      if (added)
        jobs.push_back({target.chip, std::move(spec), {}});
      for (const LoadPlan &plan : target.plans)
        jobs[found->second].plans.push_back(&plan);
    }

  // Unbounded: the directory holds exactly these entries.
  DiskCache cache(outputDirectory, ~uint64_t(0));
  std::string imageMaker =
      getImageMaker(LoadPath::PtxCompiler, getPtxCompilerVersion());
  llvm::DefaultThreadPool pool(llvm::hardware_concurrency(threads));
  std::mutex failuresMutex;
  std::string failures;
  for (const Job &job : jobs)
    pool.async([&, &job = job] {
      if (llvm::Error err = runJob(job, cache, imageMaker)) {
        std::string failure = "\n  " + job.spec.getKey() + " (" +
                              stringifyChip(job.chip).str() +
                              "): " + llvm::toString(std::move(err));
        std::lock_guard<std::mutex> lock(failuresMutex);
        failures += failure;
      }
    });
  pool.wait();
  if (!failures.empty()) {
    llvm::errs() << "fmha-seed: these kernels failed:" << failures << "\n";
    return 1;
  }
  size_t entries = 0;
  for (const Job &job : jobs)
    entries += job.plans.size();
  llvm::outs() << llvm::formatv("fmha-seed: {0} entries in {1}\n", entries,
                                outputDirectory.getValue());
  return 0;
}
