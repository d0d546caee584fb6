//===- TensorMapParameters.cpp - TMA tensor maps as grid constants --------===//
//
// Part of FlashCore. See FmhaPasses.td (fmha-tensor-map-parameters).
//
//===----------------------------------------------------------------------===//

#include "FmhaToNVGPU.h"
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
    auto count = func->getAttrOfType<IntegerAttr>(kTensorMapArgumentsAttrName);
    if (!count)
      return;
    MLIRContext *context = func.getContext();
    if (!func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) ||
        count.getInt() > func.getNumArguments()) {
      func.emitOpError("has ")
          << kTensorMapArgumentsAttrName << " = " << count.getInt()
          << " but is not an NVVM kernel with that many parameters";
      return signalPassFailure();
    }
    Builder builder(context);
    auto mapType =
        LLVM::LLVMArrayType::get(builder.getI8Type(), kTensorMapBytes);
    for (unsigned i = 0; i < count.getInt(); ++i) {
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
    func->removeAttr(kTensorMapArgumentsAttrName);
  }
};
} // namespace
