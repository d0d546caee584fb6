//===- jit-bench.cpp - JIT compile, cache and launch overhead -------------===//
//
// Part of FlashCore. Measures, for examples/jit-scale/scale.mlir:
//   - cold compile (MLIR -> PTX -> cubin) in this process, first and median;
//   - a disk-cache hit in a fresh JIT (key, read, checksum, module load);
//   - launch overhead of an in-memory hit (lookup + launch) against a bare
//     cuLaunchKernel of the same function, host time per call;
// and for the attention kernels (bf16, head dim 128, causal, each chip):
//   - the compile to PTX in this process, median of 3;
//   - on a GPU, a cold JIT::getKernel: that compile plus the load plan's
//     own (the linked-in PTX compiler's whole-program cubin, the driver's
//     whole-program PTX JIT, or nvJitLink); then a hit of our disk cache in
//     a fresh JIT: a cubin that loads as it is, or under a driver-JIT plan
//     (FMHA_PTX_COMPILER=off) PTX that the driver compiles again unless its
//     own cache of compiled PTX answers (CUDA_CACHE_DISABLE=1 turns that
//     off, to time it cold);
//   - on a GPU, JIT::launchAttention's cost per call on a one-tile problem.
// Without a GPU only the compile rows are measured.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/Compile.h"
#include "fmha/JIT/JIT.h"
#include "fmha/Runtime/LoadPlan.h"
#include "fmha/Target/NvJitLink.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <vector>

using namespace mlir::fmha;
using Clock = std::chrono::steady_clock;

static double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

static double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

static int fail(llvm::Error err) {
  llvm::errs() << "jit-bench: " << llvm::toString(std::move(err)) << "\n";
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: jit-bench <scale.mlir>\n";
    return 1;
  }
  auto buffer = llvm::MemoryBuffer::getFile(argv[1]);
  if (!buffer) {
    llvm::errs() << "jit-bench: cannot read " << argv[1] << "\n";
    return 1;
  }
  std::string source = (*buffer)->getBuffer().str();
  std::vector<std::string> rows;

  // Cold compiles, each in a fresh MLIRContext, like a JIT cache miss.
  llvm::Expected<const NvJitLink &> linker = NvJitLink::get();
  if (!linker)
    return fail(linker.takeError());
  for (Chip chip : {Chip::sm_80, Chip::sm_90a}) {
    CompileOptions options;
    options.chip = chip;
    llvm::Expected<PtxIsa> isa =
        selectPtxIsa(chip, linker->getVersion(), "nvJitLink");
    if (!isa)
      return fail(isa.takeError());
    options.ptxIsa = *isa;
    options.linkArch = chip == Chip::sm_90a ? "sm_90a" : "sm_80";
    std::vector<double> times;
    for (int i = 0; i < 6; ++i) {
      auto start = Clock::now();
      llvm::Expected<CompiledModule> compiled = compileModule(source, options);
      if (!compiled)
        return fail(compiled.takeError());
      times.push_back(millisecondsSince(start));
    }
    double first = times.front();
    times.erase(times.begin());
    rows.push_back(llvm::formatv("cold compile MLIR->cubin {0,-7}| first "
                                 "{1:f1} ms, median of 5 {2:f1} ms",
                                 stringifyChip(chip), first, median(times)));
  }

  // Attention: the kernels users compile, to PTX only.
  KernelSpec attention;
  attention.headDim = 128;
  attention.causal = true;
  std::string attentionSource = attention.toMLIR();
  for (Chip chip : {Chip::sm_80, Chip::sm_90a}) {
    CompileOptions options;
    options.chip = chip;
    std::vector<double> times;
    for (int i = 0; i < 3; ++i) {
      auto start = Clock::now();
      llvm::Expected<CompiledModule> compiled =
          compileModule(attentionSource, options);
      if (!compiled)
        return fail(compiled.takeError());
      times.push_back(millisecondsSince(start));
    }
    rows.push_back(llvm::formatv("attention MLIR->PTX {0,-12}| bf16 d128 "
                                 "causal, median of 3 {1:f1} ms",
                                 stringifyChip(chip), median(times)));
  }

  llvm::Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver) {
    rows.push_back("GPU rows                       | skipped: " +
                   llvm::toString(driver.takeError()));
  } else {
    llvm::SmallString<128> cacheDir;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("fmha-bench-cache", cacheDir))
      return fail(llvm::createStringError("cannot create a cache directory: " +
                                          ec.message()));
    JITOptions options;
    options.cacheDirectory = cacheDir.str().str();
    {
      auto jit = JIT::create(options);
      if (!jit)
        return fail(jit.takeError());
      auto kernel = (*jit)->getKernelFromSource(source, "scale"); // fills disk
      if (!kernel)
        return fail(kernel.takeError());
      rows.push_back("load plan                      | " +
                     (*jit)->getLoadPlan().reason);
    }
    std::vector<double> hits;
    for (int i = 0; i < 20; ++i) {
      auto jit = JIT::create(options);
      if (!jit)
        return fail(jit.takeError());
      auto start = Clock::now();
      auto kernel = (*jit)->getKernelFromSource(source, "scale");
      if (!kernel)
        return fail(kernel.takeError());
      hits.push_back(millisecondsSince(start));
      if ((*jit)->getStats().diskHits != 1)
        return fail(llvm::createStringError("expected a disk-cache hit"));
    }
    rows.push_back(llvm::formatv("disk-cache hit (fresh JIT)     | median of "
                                 "20 {0:f3} ms",
                                 median(hits)));

    auto jit = JIT::create(options);
    if (!jit)
      return fail(jit.takeError());
    auto kernel = (*jit)->getKernelFromSource(source, "scale");
    if (!kernel)
      return fail(kernel.takeError());
    // n = 0: every thread exits at once, so the GPU never holds back the
    // host; what is timed is the submission path.
    CUdeviceptr none = 0;
    int64_t zero = 0, one = 1;
    float factor = 1;
    void *arguments[] = {&none, &none, &zero, &zero, &one, &zero, &factor};
    LaunchConfig config;
    config.block = {128, 1, 1};
    const int launches = 20000;
    auto timeLaunches = [&](auto launchOnce) -> llvm::Expected<double> {
      for (int i = 0; i < 1000; ++i) // warm-up
        if (llvm::Error err = launchOnce())
          return std::move(err);
      if (llvm::Error err = driver->synchronize(nullptr))
        return std::move(err);
      auto start = Clock::now();
      for (int i = 0; i < launches; ++i)
        if (llvm::Error err = launchOnce())
          return std::move(err);
      double ms = millisecondsSince(start);
      if (llvm::Error err = driver->synchronize(nullptr))
        return std::move(err);
      return ms * 1000.0 / launches;
    };
    CUfunction function = kernel->getFunction();
    auto cuLaunchKernel = driver->getRawLaunchKernel();
    llvm::Expected<double> bare = timeLaunches([&]() {
      return driver->check(cuLaunchKernel(function, 1, 1, 1, 128, 1, 1, 0,
                                          nullptr, arguments, nullptr),
                           "cuLaunchKernel");
    });
    if (!bare)
      return fail(bare.takeError());
    llvm::Expected<double> ours = timeLaunches([&]() -> llvm::Error {
      auto hit = (*jit)->getKernelFromSource(source, "scale");
      if (!hit)
        return hit.takeError();
      return hit->launch(nullptr, config, arguments);
    });
    if (!ours)
      return fail(ours.takeError());
    rows.push_back(llvm::formatv("launch, bare cuLaunchKernel    | {0:f2} us "
                                 "per call ({1} calls)",
                                 *bare, launches));
    rows.push_back(llvm::formatv("launch, JIT in-memory hit      | {0:f2} us "
                                 "per call: +{1:f2} us over bare",
                                 *ours, *ours - *bare));
    llvm::sys::fs::remove_directories(cacheDir);

    // Attention kernels as a process's first call sees them: cold (our disk
    // cache empty), then in a fresh JIT from our disk cache.
    for (Chip chip : {Chip::sm_80, Chip::sm_90a}) {
      llvm::SmallString<128> attentionCache;
      if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(
              "fmha-bench-cache", attentionCache))
        return fail(llvm::createStringError(
            "cannot create a cache directory: " + ec.message()));
      JITOptions cached;
      cached.chip = chip;
      cached.cacheDirectory = attentionCache.str().str();
      std::vector<double> times;
      std::unique_ptr<JIT> attentionJit;
      for (int fresh = 0; fresh < 2; ++fresh) {
        auto created = JIT::create(cached);
        if (!created)
          return fail(created.takeError());
        attentionJit = std::move(*created);
        auto start = Clock::now();
        auto attentionKernel = attentionJit->getKernel(attention);
        if (!attentionKernel)
          return fail(attentionKernel.takeError());
        times.push_back(millisecondsSince(start));
        if (attentionJit->getStats().diskHits != unsigned(fresh))
          return fail(llvm::createStringError("expected a cold compile, then "
                                              "a disk-cache hit"));
      }
      std::string plan = attentionJit->getLoadPlan().reason;
      rows.push_back(llvm::formatv("attention cold JIT {0,-13}| bf16 d128 "
                                   "causal {1:f0} ms: MLIR->PTX, then {2}",
                                   stringifyChip(chip), times[0], plan));
      rows.push_back(llvm::formatv("attention disk-cache hit {0,-7}| "
                                   "{1:f1} ms (fresh JIT)",
                                   stringifyChip(chip), times[1]));
      llvm::sys::fs::remove_directories(attentionCache);

      // The typed launch's cost per call (checks, kernel lookup from the
      // spec, parameters, tensor maps on sm_90a, cuLaunchKernel) on a
      // problem of one 128 x 128 tile, host time while submitting and
      // time per call including the GPU's.
      AttentionTensors tensors;
      tensors.batch = tensors.queryHeads = tensors.kvHeads = 1;
      tensors.querySeq = tensors.keySeq = 128;
      tensors.setDenseStrides(attention.headDim);
      size_t bytes = 128 * attention.headDim * 2;
      std::vector<uint16_t> ones(bytes / 2, 0x3f80); // bf16 1.0
      std::vector<CUdeviceptr> buffers;
      for (int i = 0; i < 4; ++i) {
        llvm::Expected<CUdeviceptr> buffer = driver->allocate(bytes);
        if (!buffer)
          return fail(buffer.takeError());
        if (llvm::Error err = driver->copyToDevice(*buffer, ones.data(), bytes))
          return fail(std::move(err));
        buffers.push_back(*buffer);
      }
      tensors.q = reinterpret_cast<const void *>(buffers[0]);
      tensors.k = reinterpret_cast<const void *>(buffers[1]);
      tensors.v = reinterpret_cast<const void *>(buffers[2]);
      tensors.o = reinterpret_cast<void *>(buffers[3]);
      const int calls = 2000;
      for (int i = 0; i < 100; ++i) // warm-up
        if (llvm::Error err =
                attentionJit->launchAttention(attention, tensors, nullptr))
          return fail(std::move(err));
      if (llvm::Error err = driver->synchronize(nullptr))
        return fail(std::move(err));
      auto start = Clock::now();
      for (int i = 0; i < calls; ++i)
        if (llvm::Error err =
                attentionJit->launchAttention(attention, tensors, nullptr))
          return fail(std::move(err));
      double submitted = millisecondsSince(start);
      if (llvm::Error err = driver->synchronize(nullptr))
        return fail(std::move(err));
      double finished = millisecondsSince(start);
      rows.push_back(llvm::formatv("launchAttention {0,-14}| {1:f2} us per "
                                   "call submitting, {2:f2} us with the GPU "
                                   "(1x1x128x128, {3} calls)",
                                   stringifyChip(chip),
                                   submitted * 1000 / calls,
                                   finished * 1000 / calls, calls));
      for (CUdeviceptr buffer : buffers)
        llvm::consumeError(driver->release(buffer));
    }
  }
  llvm::outs() << "\n";
  for (const std::string &row : rows)
    llvm::outs() << row << "\n";
  return 0;
}
