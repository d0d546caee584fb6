//===- Compile.cpp - MLIR source to PTX and cubin, no driver --------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/Compile.h"
#include "fmha/Dialect/Fmha/FmhaDialect.h"
#include "fmha/InitAll.h"
#include "fmha/Pipelines/Pipelines.h"
#include "fmha/Support/Environment.h"
#include "fmha/Target/NvJitLink.h"
#include "fmha/Target/PTX.h"
#include "fmha/Target/PtxCompiler.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>

using namespace mlir;
using namespace mlir::fmha;

namespace {
/// Writes the IR after each pass as NN-<pass>.mlir, so a dump reads in order.
class DumpAfterEachPass : public PassInstrumentation {
public:
  explicit DumpAfterEachPass(StageDirectory &directory)
      : directory(directory) {}

  void runAfterPass(Pass *pass, Operation *op) override {
    // Pass-manager adaptors have no argument and repeat their nested dump.
    if (pass->getArgument().empty())
      return;
    std::string text;
    llvm::raw_string_ostream os(text);
    op->print(os);
    directory.write(
        llvm::formatv("{0:02}-{1}.mlir", ++count, pass->getArgument()).str(),
        text);
  }

private:
  StageDirectory &directory;
  unsigned count = 0;
};
} // namespace

/// Disassembles <dir>/kernel.cubin into <dir>/kernel.sass when cuobjdump is
/// installed (the GPU machine has it; the CPU machines may not). A missing
/// or failing cuobjdump only leaves the SASS out of the dump.
static void dumpSass(llvm::StringRef directory) {
  llvm::SmallVector<llvm::StringRef> paths;
  std::string cudaBin;
  if (std::optional<std::string> cudaHome = readSetting(Setting::CudaHome))
    paths.push_back(cudaBin = *cudaHome + "/bin");
  paths.push_back("/usr/local/cuda/bin");
  llvm::ErrorOr<std::string> cuobjdump =
      llvm::sys::findProgramByName("cuobjdump");
  if (!cuobjdump)
    cuobjdump = llvm::sys::findProgramByName("cuobjdump", paths);
  if (!cuobjdump)
    return;
  std::string cubin = (directory + "/kernel.cubin").str();
  std::string sass = (directory + "/kernel.sass").str();
  llvm::StringRef args[] = {*cuobjdump, "-sass", cubin};
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(sass), llvm::StringRef(sass)};
  llvm::sys::ExecuteAndWait(*cuobjdump, args, std::nullopt, redirects);
}

/// Builds the context every compilation uses: all fmha dependencies, and no
/// multithreading (the JIT compiles on the caller's thread, and a context per
/// compilation keeps compilations independent).
static std::unique_ptr<MLIRContext> createContext() {
  DialectRegistry registry;
  registerAllDialects(registry);
  auto context =
      std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  context->loadAllAvailableDialects();
  return context;
}

/// \p ptx as a cubin for \p arch, from \p compiler.
static llvm::Expected<LinkedCubin> compileToCubin(llvm::StringRef ptx,
                                                  llvm::StringRef arch,
                                                  CubinCompiler compiler) {
  if (compiler == CubinCompiler::PtxCompiler)
    return compilePtxWholeProgram(ptx, arch);
  llvm::Expected<const NvJitLink &> linker = NvJitLink::get();
  if (!linker)
    return linker.takeError();
  return linker->link(ptx, arch);
}

/// Lowers \p module to PTX, and to a cubin when asked; \p fail makes the
/// error of a failed step, with the diagnostics collected so far.
namespace {
/// Seconds since construction or the last lap.
class Stopwatch {
public:
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - last).count();
    last = now;
    return seconds;
  }

private:
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};
} // namespace

/// \p setupSeconds: the time spent before, on the context and the module.
static llvm::Expected<CompiledModule>
lowerAndTranslate(ModuleOp module, const CompileOptions &options,
                  llvm::function_ref<llvm::Error(llvm::StringRef)> fail,
                  double setupSeconds) {
  Stopwatch stopwatch;
  CompileTimes times;
  times.setup = setupSeconds;
  MLIRContext *context = module.getContext();
  std::optional<StageDirectory> dumps;
  if (!options.dumpDirectory.empty()) {
    dumps.emplace(options.dumpDirectory);
    std::string text;
    llvm::raw_string_ostream os(text);
    module.print(os);
    dumps->write("00-input.mlir", text);
  }

  PassManager pm(context);
  FmhaPipelineOptions pipeline;
  pipeline.chip = stringifyChip(options.chip).str();
  buildFmhaToNVVMPipeline(pm, pipeline);
  if (dumps)
    pm.addInstrumentation(std::make_unique<DumpAfterEachPass>(*dumps));
  if (failed(pm.run(module)))
    return fail(llvm::formatv("lowering to NVVM for {0} failed",
                              stringifyChip(options.chip))
                    .str());

  times.mlirPasses = stopwatch.lap();
  auto gpuModules = llvm::to_vector(module.getOps<gpu::GPUModuleOp>());
  if (gpuModules.size() != 1)
    return llvm::createStringError(llvm::formatv(
        "expected exactly one gpu.module after lowering, found {0}",
        gpuModules.size()));
  CompiledModule compiled;
  gpuModules.front().walk([&](Operation *op) {
    if (!op->hasAttr("nvvm.kernel"))
      return;
    auto name = op->getAttrOfType<StringAttr>("sym_name");
    if (!name)
      return;
    compiled.kernelNames.push_back(name.str());
    if (auto launch =
            op->getAttrOfType<LaunchAttr>(LaunchAttr::getFuncAttrName()))
      compiled.contracts.emplace(name.str(), launch.getContract());
  });

  PTXOptions ptxOptions;
  ptxOptions.chip = options.chip;
  ptxOptions.ptxIsa = options.ptxIsa;
  llvm::Expected<std::string> ptx =
      translateToPTX(gpuModules.front(), ptxOptions,
                     dumps ? StageSink(dumps->sink()) : StageSink(nullptr));
  if (!ptx)
    return ptx.takeError();
  compiled.ptx = std::move(*ptx);
  times.llvmToPtx = stopwatch.lap();

  if (options.linkArch) {
    bool wholeProgram = options.cubinCompiler == CubinCompiler::PtxCompiler;
    llvm::Expected<LinkedCubin> linked =
        compileToCubin(compiled.ptx, *options.linkArch, options.cubinCompiler);
    if (!linked)
      return linked.takeError();
    compiled.cubin = std::move(linked->cubin);
    compiled.linkLog = std::move(linked->infoLog);
    times.ptxToCubin = stopwatch.lap();
    if (dumps) {
      dumps->write("kernel.cubin", compiled.cubin);
      dumps->write(wholeProgram ? "ptxcompiler.log" : "nvjitlink.log",
                   compiled.linkLog);
      dumpSass(options.dumpDirectory);
    }
  }
  if (dumps)
    if (llvm::Error err = dumps->takeError())
      return std::move(err);
  compiled.times = times;
  return compiled;
}

llvm::Expected<CompiledModule>
fmha::compileModule(llvm::StringRef source, const CompileOptions &options) {
  Stopwatch stopwatch;
  std::unique_ptr<MLIRContext> context = createContext();
  std::string diagnostics;
  llvm::raw_string_ostream diagnosticStream(diagnostics);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, options.sourceName),
      llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, context.get(),
                                     diagnosticStream);
  auto fail = [&](llvm::StringRef what) {
    return llvm::createStringError(
        (what + (diagnostics.empty() ? "" : ":\n") + diagnostics).str());
  };
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, context.get());
  if (!module)
    return fail("cannot parse the MLIR source");
  return lowerAndTranslate(*module, options, fail, stopwatch.lap());
}

llvm::Expected<CompiledModule>
fmha::compileKernelSpec(const KernelSpec &spec, const CompileOptions &options) {
  Stopwatch stopwatch;
  std::unique_ptr<MLIRContext> context = createContext();
  // The built ops have no source to point into: each diagnostic is its
  // message, and those of its notes.
  std::string diagnostics;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &diagnostic) {
    llvm::raw_string_ostream os(diagnostics);
    os << diagnostic << "\n";
    for (const Diagnostic &note : diagnostic.getNotes())
      os << "note: " << note << "\n";
    return success();
  });
  auto fail = [&](llvm::StringRef what) {
    return llvm::createStringError(
        (what + (diagnostics.empty() ? "" : ":\n") + diagnostics).str());
  };
  OwningOpRef<ModuleOp> module = buildKernelSpecModule(spec, *context);
  if (failed(verify(*module)))
    return fail("invalid kernel spec (" + spec.getKey() + ")");
  return lowerAndTranslate(*module, options, fail, stopwatch.lap());
}

CompileOptions fmha::getCompileOptions(const LoadPlan &plan) {
  CompileOptions options;
  options.chip = plan.chip;
  options.ptxIsa = plan.ptxIsa;
  switch (plan.path) {
  case LoadPath::PtxCompiler:
    options.linkArch = plan.linkArch;
    options.cubinCompiler = CubinCompiler::PtxCompiler;
    break;
  case LoadPath::NvJitLink:
    options.linkArch = plan.linkArch;
    options.cubinCompiler = CubinCompiler::NvJitLink;
    break;
  case LoadPath::DriverJit:
    // The driver gets the PTX and compiles it itself.
    break;
  }
  return options;
}
