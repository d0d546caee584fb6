//===- TensorMapParameters.cpp - TMA tensor maps as grid constants --------===//
//
// Part of FlashCore. See FmhaPasses.td (fmha-tensor-map-parameters).
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/FmhaDialect.h"
#include "fmha/Dialect/Fmha/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::fmha {
#define GEN_PASS_DEF_FMHATENSORMAPPARAMETERS
#include "fmha/FmhaPasses.h.inc"
} // namespace mlir::fmha

using namespace mlir;
using namespace mlir::fmha;

namespace {
/// sizeof(CUtensorMap) and its alignment (cuda.h: 64-byte aligned).
constexpr int64_t kTensorMapBytes = 128, kTensorMapAlignment = 64;

struct FmhaTensorMapParametersPass
    : public fmha::impl::FmhaTensorMapParametersBase<
          FmhaTensorMapParametersPass> {
  void runOnOperation() override {
    LLVM::LLVMFuncOp func = getOperation();
    auto launch = func->getAttrOfType<LaunchAttr>(LaunchAttr::getFuncAttrName());
    if (!launch)
      return;
    const LaunchContract &contract = launch.getContract();
    // A memref parameter became several LLVM ones; the maps must lead for
    // their positions to be known.
    unsigned count = contract.getLeadingTensorMaps();
    if (llvm::any_of(llvm::drop_begin(contract.parameters, count),
                     [](const KernelParameter &parameter) {
                       return parameter.kind ==
                              KernelParameter::Kind::TensorMap;
                     })) {
      func.emitOpError("has tensor map parameters after memref ones; "
                       "fmha.launch must list them first");
      return signalPassFailure();
    }
    MLIRContext *context = func.getContext();
    if (!func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) ||
        count > func.getNumArguments()) {
      func.emitOpError("has ")
          << count << " tensor map parameters in fmha.launch but is not an "
          << "NVVM kernel with that many parameters";
      return signalPassFailure();
    }
    Builder builder(context);
    auto mapType =
        LLVM::LLVMArrayType::get(builder.getI8Type(), kTensorMapBytes);
    for (unsigned i = 0; i < count; ++i) {
      if (!isa<LLVM::LLVMPointerType>(func.getArgument(i).getType())) {
        func.emitOpError("tensor map parameter ")
            << i << " is " << func.getArgument(i).getType()
            << ", expected a pointer";
        return signalPassFailure();
      }
      func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(mapType));
      func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                      builder.getI64IntegerAttr(kTensorMapAlignment));
      func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                      builder.getUnitAttr());
    }
  }
};
} // namespace
