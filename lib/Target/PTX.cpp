//===- PTX.cpp - NVVM gpu.module to PTX through LLVM's NVPTX --------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Target/PTX.h"
#include "fmha/Support/Environment.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Operation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <mutex>

using namespace mlir;
using namespace mlir::fmha;

static constexpr const char *kNvptxTriple = "nvptx64-nvidia-cuda";

void StageDirectory::write(llvm::StringRef name, llvm::StringRef text) {
  if (error)
    return;
  if (std::error_code ec = llvm::sys::fs::create_directories(directory)) {
    error = llvm::createStringError(llvm::formatv(
        "cannot create dump directory '{0}': {1}", directory, ec.message()));
    return;
  }
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  std::error_code ec;
  llvm::raw_fd_ostream file(path, ec);
  if (!ec) {
    file << text;
    file.close();
    ec = file.error();
  }
  if (ec)
    error = llvm::createStringError(
        llvm::formatv("cannot write '{0}': {1}", path, ec.message()));
}

std::string fmha::getDefaultLibdevicePath() {
  if (std::optional<std::string> cudaHome = readSetting(Setting::CudaHome))
    return *cudaHome + "/nvvm/libdevice/libdevice.10.bc";
  return FLASHCORE_CUDA_HOME "/nvvm/libdevice/libdevice.10.bc";
}

/// Registers the NVPTX backend once; the static link carries no other.
static void initializeNVPTX() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    // 32-bit pointers for shared, local and constant memory (the hardware's
    // width there): a shared-memory address costs one register, not two.
    // The target machine reads this option when it is created; it has no
    // API of its own.
    auto &options =
        llvm::cl::getRegisteredOptions();
    auto shortPointers = options.find("nvptx-short-ptr");
    if (shortPointers != options.end())
      static_cast<llvm::cl::opt<bool> *>(shortPointers->second)
          ->setValue(true);
  });
}

static std::string printModule(const llvm::Module &module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  return text;
}

/// Links libdevice when the module calls into it (math ops lowered by
/// convert-gpu-to-nvvm become `__nv_*` calls); the linked module keeps only
/// the functions it uses.
static llvm::Error linkLibdeviceIfUsed(llvm::Module &module,
                                       llvm::StringRef path) {
  bool usesLibdevice = llvm::any_of(module.functions(), [](llvm::Function &f) {
    return f.isDeclaration() && f.getName().starts_with("__nv_");
  });
  if (!usesLibdevice)
    return llvm::Error::success();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(llvm::formatv(
        "the kernel calls libdevice, which was not found at '{0}': {1} (set "
        "CUDA_HOME to the CUDA toolkit)",
        path, buffer.getError().message()));
  llvm::Expected<std::unique_ptr<llvm::Module>> libdevice =
      llvm::parseBitcodeFile(buffer.get()->getMemBufferRef(),
                             module.getContext());
  if (!libdevice)
    return llvm::createStringError(
        llvm::formatv("cannot read libdevice '{0}': {1}", path,
                      llvm::toString(libdevice.takeError())));
  (*libdevice)->setTargetTriple(module.getTargetTriple());
  (*libdevice)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*libdevice),
                                llvm::Linker::Flags::LinkOnlyNeeded))
    return llvm::createStringError(
        llvm::formatv("linking libdevice '{0}' failed", path));
  // Internal, so that once inlined they leave no .func behind in the PTX.
  for (llvm::Function &function : module.functions())
    if (!function.isDeclaration() && function.getName().starts_with("__nv_"))
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
  return llvm::Error::success();
}

llvm::Expected<std::string> fmha::translateToPTX(Operation *gpuModule,
                                                 const PTXOptions &options,
                                                 StageSink sink) {
  initializeNVPTX();
  llvm::Triple triple(kNvptxTriple);
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return llvm::createStringError("NVPTX backend unavailable: " + lookupError);
  std::string chip = stringifyChip(options.chip).str();
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, chip, options.ptxIsa.feature(), llvm::TargetOptions(),
      /*RM=*/std::nullopt, /*CM=*/std::nullopt,
      options.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
      : options.optLevel == 0 ? llvm::CodeGenOptLevel::None
                              : llvm::CodeGenOptLevel::Default));
  if (!machine)
    return llvm::createStringError(
        llvm::formatv("cannot create an NVPTX target machine for {0} with PTX "
                      "ISA {1}",
                      chip, options.ptxIsa.str()));

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(gpuModule, llvmContext, "fmha");
  if (!module)
    return llvm::createStringError(
        "cannot translate the gpu.module to LLVM IR: is it fully lowered to "
        "the LLVM and NVVM dialects?");
  module->setTargetTriple(triple);
  module->setDataLayout(machine->createDataLayout());
  // Flush denormals to zero only where the kernel asked (ftz intrinsics);
  // libdevice's __nvvm_reflect reads this flag.
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz",
                        uint32_t(0));
  if (sink)
    sink("kernel.ll", printModule(*module));

  if (llvm::Error err = linkLibdeviceIfUsed(*module, options.libdevicePath))
    return std::move(err);
  if (llvm::Error err = makeOptimizingTransformer(
          options.optLevel, /*sizeLevel=*/0, machine.get())(module.get()))
    return llvm::createStringError("LLVM optimization failed: " +
                                   llvm::toString(std::move(err)));
  if (sink)
    sink("kernel.opt.ll", printModule(*module));

  std::string ptx;
  {
    llvm::raw_string_ostream stream(ptx);
    llvm::buffer_ostream bufferedStream(stream);
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, bufferedStream, nullptr,
                                     llvm::CodeGenFileType::AssemblyFile))
      return llvm::createStringError(
          "the NVPTX backend cannot emit assembly for " + chip);
    codegen.run(*module);
  }
  if (sink)
    sink("kernel.ptx", ptx);
  return ptx;
}
