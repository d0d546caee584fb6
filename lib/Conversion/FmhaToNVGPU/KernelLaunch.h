//===- KernelLaunch.h - a kernel's launch contract in the IR ----*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU. Every lowering
// states its kernel's launch contract once (LaunchContract.h); from it come
// the gpu.func's signature and `fmha.launch` attribute, and the host-side
// gpu.launch_func that replaces the op. The JIT, the C API and fmha-aot
// launch from the same contract.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_KERNELLAUNCH_H
#define LIB_CONVERSION_FMHATONVGPU_KERNELLAUNCH_H

#include "fmha/Dialect/Fmha/FmhaDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::fmha {

/// A parameter of each of \p op's operands, in order: its memref
/// descriptor, or the value of an index operand.
std::vector<KernelParameter> getOperandParameters(Operation *op);

/// A TMA tensor map of \p op's operand \p operand (a memref of f16, bf16 or
/// f32) whose copies move \p box (the operand's innermost dimensions,
/// outermost first) with \p swizzleBytes of swizzle.
KernelParameter getTensorMapParameter(Operation *op, unsigned operand,
                                      ArrayRef<uint32_t> box,
                                      unsigned swizzleBytes);

/// Adds to \p kernels a kernel gpu.func named \p name (uniquified if taken)
/// launched as \p contract says: its parameters are the contract's (a
/// memref parameter has its operand's type; a tensor map is a pointer to
/// the 128-byte map, which fmha-tensor-map-parameters makes a byval grid
/// constant), its known block size contract.threads, and the contract is
/// recorded as `fmha.launch`. \p workgroup are its static shared buffers.
gpu::GPUFuncOp createKernelFunc(Operation *op, gpu::GPUModuleOp kernels,
                                StringRef name, const LaunchContract &contract,
                                TypeRange workgroup = {});

/// The contract recorded on \p func by createKernelFunc.
const LaunchContract &getLaunchContract(gpu::GPUFuncOp func);

/// Replaces \p op by the gpu.launch_func of \p func that its contract
/// describes: the grid from the sizes of the op's operands (one CTA per
/// unit of work for a persistent kernel: the host IR cannot ask how many
/// run at once), the tensor maps made on the host.
void replaceByLaunch(Operation *op, gpu::GPUFuncOp func);

/// Replaces \p op by the launches of \p funcs, one after the other (on one
/// stream, each sees what the previous wrote), as replaceByLaunch does.
/// Each kernel's parameters are of \p op's operands.
void replaceByLaunches(Operation *op, ArrayRef<gpu::GPUFuncOp> funcs);

} // namespace mlir::fmha

#endif // LIB_CONVERSION_FMHATONVGPU_KERNELLAUNCH_H
