//===- fmha-compile.cpp - MLIR to PTX or cubin, as the JIT does it --------===//
//
// Part of FlashCore. Runs the JIT's compile path (fmha-to-nvvm, lib/Target,
// nvJitLink) on a file, with no GPU needed, and writes the PTX, the cubin or
// nvJitLink's info log. Every stage can be dumped with --dump-dir.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/TileConfig.h"
#include "fmha/JIT/Compile.h"
#include "fmha/Target/NvJitLink.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::fmha;

namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::init("-"));
static cl::opt<std::string> outputFile("o", cl::desc("output file"),
                                       cl::init("-"));
static cl::opt<std::string> chipName("chip",
                                     cl::desc("target chip: sm_80 or sm_90a"),
                                     cl::init("sm_90a"));
static cl::opt<std::string>
    arch("arch", cl::desc("arch nvJitLink links for (default: the chip's)"),
         cl::init(""));
static cl::opt<std::string>
    ptxIsa("ptx-isa",
           cl::desc("PTX ISA, e.g. 9.0 (default: what nvJitLink accepts)"),
           cl::init(""));
static cl::opt<std::string>
    dumpDir("dump-dir", cl::desc("write every compilation stage here"),
            cl::init(""));
enum class Emit { PTX, Cubin, LinkLog };
static cl::opt<Emit>
    emit("emit", cl::desc("what to write"), cl::init(Emit::PTX),
         cl::values(clEnumValN(Emit::PTX, "ptx", "PTX assembly"),
                    clEnumValN(Emit::Cubin, "cubin", "cubin from nvJitLink"),
                    clEnumValN(Emit::LinkLog, "link-log",
                               "nvJitLink's -verbose info log")));

static int fail(llvm::Error err) {
  llvm::WithColor::error(llvm::errs(), "fmha-compile")
      << llvm::toString(std::move(err)) << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "FlashCore JIT compiler driver\n");

  llvm::Expected<Chip> chip = parseChip(chipName);
  if (!chip)
    return fail(chip.takeError());
  std::string note;
  llvm::Expected<PtxIsa> isa = resolvePtxIsa(*chip, ptxIsa, note);
  if (!isa)
    return fail(isa.takeError());
  if (!note.empty())
    llvm::WithColor::warning(llvm::errs(), "fmha-compile") << note << "\n";

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> input =
      llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!input)
    return fail(llvm::createStringError("cannot read '" + inputFile +
                                        "': " + input.getError().message()));

  CompileOptions options;
  options.sourceName = inputFile;
  options.chip = *chip;
  options.ptxIsa = *isa;
  options.dumpDirectory = dumpDir;
  if (emit != Emit::PTX)
    options.linkArch = arch.empty() ? stringifyChip(*chip).str() : arch;
  llvm::Expected<CompiledModule> compiled =
      compileModule((*input)->getBuffer(), options);
  if (!compiled)
    return fail(compiled.takeError());

  std::error_code ec;
  llvm::ToolOutputFile output(outputFile, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail(llvm::createStringError("cannot write '" + outputFile +
                                        "': " + ec.message()));
  switch (emit) {
  case Emit::PTX:
    output.os() << compiled->ptx;
    break;
  case Emit::Cubin:
    output.os() << compiled->cubin;
    break;
  case Emit::LinkLog:
    output.os() << compiled->linkLog;
    break;
  }
  output.keep();
  return 0;
}
