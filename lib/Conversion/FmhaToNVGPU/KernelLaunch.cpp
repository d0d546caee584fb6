//===- KernelLaunch.cpp - a kernel's launch contract in the IR ------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "KernelLaunch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::fmha;

std::vector<KernelParameter> fmha::getOperandParameters(Operation *op) {
  std::vector<KernelParameter> parameters;
  for (unsigned operand = 0; operand < op->getNumOperands(); ++operand) {
    KernelParameter parameter;
    parameter.operand = operand;
    if (op->getOperand(operand).getType().isIndex())
      parameter.kind = KernelParameter::Kind::Index;
    parameters.push_back(parameter);
  }
  return parameters;
}

KernelParameter fmha::getTensorMapParameter(Operation *op, unsigned operand,
                                            ArrayRef<uint32_t> box,
                                            unsigned swizzleBytes) {
  Type element =
      cast<MemRefType>(op->getOperand(operand).getType()).getElementType();
  KernelParameter parameter;
  parameter.kind = KernelParameter::Kind::TensorMap;
  parameter.operand = operand;
  parameter.element = element.isF16()    ? TensorMapElement::F16
                      : element.isBF16() ? TensorMapElement::BF16
                                         : TensorMapElement::F32;
  parameter.box.assign(box.begin(), box.end());
  parameter.swizzleBytes = swizzleBytes;
  return parameter;
}

gpu::GPUFuncOp fmha::createKernelFunc(Operation *op, gpu::GPUModuleOp kernels,
                                      StringRef name,
                                      const LaunchContract &contract,
                                      TypeRange workgroup) {
  MLIRContext *context = op->getContext();
  SmallVector<Type> parameters;
  for (const KernelParameter &parameter : contract.parameters)
    parameters.push_back(parameter.kind == KernelParameter::Kind::TensorMap
                             ? Type(LLVM::LLVMPointerType::get(context))
                             : op->getOperand(parameter.operand).getType());
  OpBuilder moduleBuilder = OpBuilder::atBlockEnd(kernels.getBody());
  auto func = gpu::GPUFuncOp::create(
      moduleBuilder, op->getLoc(), name,
      FunctionType::get(context, parameters, TypeRange{}), workgroup);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                UnitAttr::get(context));
  func.setKnownBlockSize(
      ArrayRef<int32_t>{static_cast<int32_t>(contract.threads), 1, 1});
  func->setAttr(LaunchAttr::getFuncAttrName(),
                LaunchAttr::get(context, contract));
  SymbolTable(kernels).insert(func); // uniquifies the name if taken
  return func;
}

const LaunchContract &fmha::getLaunchContract(gpu::GPUFuncOp func) {
  return cast<LaunchAttr>(func->getAttr(LaunchAttr::getFuncAttrName()))
      .getContract();
}

static nvgpu::TensorMapSwizzleKind getSwizzleKind(unsigned swizzleBytes) {
  switch (swizzleBytes) {
  case 32:
    return nvgpu::TensorMapSwizzleKind::SWIZZLE_32B;
  case 64:
    return nvgpu::TensorMapSwizzleKind::SWIZZLE_64B;
  case 128:
    return nvgpu::TensorMapSwizzleKind::SWIZZLE_128B;
  default:
    return nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE;
  }
}

static nvgpu::TensorMapL2PromoKind getL2PromoKind(unsigned bytes) {
  switch (bytes) {
  case 64:
    return nvgpu::TensorMapL2PromoKind::L2PROMO_64B;
  case 128:
    return nvgpu::TensorMapL2PromoKind::L2PROMO_128B;
  case 256:
    return nvgpu::TensorMapL2PromoKind::L2PROMO_256B;
  default:
    return nvgpu::TensorMapL2PromoKind::L2PROMO_NONE;
  }
}

/// The host-side tensor map \p parameter describes, of \p tensor: boxes
/// padded with 1s to the tensor's rank, zeros read past the bounds (as the
/// JIT and fmha-aot encode it), as the pointer the kernel parameter is.
static Value createTensorMap(ImplicitLocOpBuilder &host, Value tensor,
                             const KernelParameter &parameter) {
  auto type = cast<MemRefType>(tensor.getType());
  MLIRContext *context = host.getContext();
  SmallVector<int64_t, 4> box(type.getRank() - parameter.box.size(), 1);
  llvm::append_range(box, parameter.box);
  auto workgroup = gpu::AddressSpaceAttr::get(
      context, gpu::GPUDialect::getWorkgroupAddressSpace());
  auto boxType =
      MemRefType::get(box, type.getElementType(), nullptr, workgroup);
  auto mapType = nvgpu::TensorMapDescriptorType::get(
      context, boxType, getSwizzleKind(parameter.swizzleBytes),
      getL2PromoKind(parameter.l2PromotionBytes),
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
  Value unranked = memref::CastOp::create(
      host, UnrankedMemRefType::get(type.getElementType(), Attribute()),
      tensor);
  SmallVector<Value, 4> boxValues;
  for (int64_t extent : box)
    boxValues.push_back(arith::ConstantIndexOp::create(host, extent));
  Value map =
      nvgpu::TmaCreateDescriptorOp::create(host, mapType, unranked, boxValues);
  // The kernel takes the map itself (a byval parameter); its gpu.func
  // parameter is the pointer to it that the NVVM lowering would make of
  // the descriptor type, which gpu.func's own lowering cannot convert.
  return UnrealizedConversionCastOp::create(
             host, LLVM::LLVMPointerType::get(context), map)
      .getResult(0);
}

/// One grid extent of \p rule over \p op's operands.
static Value createGridExtent(ImplicitLocOpBuilder &host, Operation *op,
                              const GridAxis &rule) {
  Value extent;
  for (const GridFactor &factor : rule.factors) {
    // An index operand is its own size (its dimension 0).
    Value operand = op->getOperand(factor.operand);
    Value term = operand.getType().isIndex()
                     ? operand
                     : Value(memref::DimOp::create(host, operand, factor.dim));
    if (factor.divisor != 1)
      term = arith::CeilDivUIOp::create(
          host, term, arith::ConstantIndexOp::create(host, factor.divisor));
    extent = extent ? arith::MulIOp::create(host, extent, term) : term;
  }
  if (!extent)
    return arith::ConstantIndexOp::create(host, 1);
  if (rule.max)
    extent = arith::MinUIOp::create(
        host, extent, arith::ConstantIndexOp::create(host, rule.max));
  return extent;
}

void fmha::replaceByLaunch(Operation *op, gpu::GPUFuncOp func) {
  replaceByLaunches(op, {func});
}

/// The gpu.launch_func of \p func over \p op's operands, before \p op.
static void createLaunch(Operation *op, gpu::GPUFuncOp func) {
  const LaunchContract &contract = getLaunchContract(func);
  ImplicitLocOpBuilder host(op->getLoc(), op);
  SmallVector<Value> arguments;
  for (const KernelParameter &parameter : contract.parameters) {
    Value operand = op->getOperand(parameter.operand);
    arguments.push_back(parameter.kind == KernelParameter::Kind::TensorMap
                            ? createTensorMap(host, operand, parameter)
                            : operand);
  }
  gpu::KernelDim3 grid{createGridExtent(host, op, contract.grid[0]),
                       createGridExtent(host, op, contract.grid[1]),
                       createGridExtent(host, op, contract.grid[2])};
  Value one = arith::ConstantIndexOp::create(host, 1);
  gpu::KernelDim3 block{arith::ConstantIndexOp::create(host, contract.threads),
                        one, one};
  Value sharedBytes =
      contract.sharedBytes
          ? Value(arith::ConstantIntOp::create(host, contract.sharedBytes, 32))
          : Value();
  gpu::LaunchFuncOp::create(host, func, grid, block, sharedBytes, arguments);
}

void fmha::replaceByLaunches(Operation *op, ArrayRef<gpu::GPUFuncOp> funcs) {
  for (gpu::GPUFuncOp func : funcs)
    createLaunch(op, func);
  op->erase();
}
