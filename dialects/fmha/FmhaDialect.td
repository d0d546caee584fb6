//===- FmhaDialect.td - the fmha dialect -------------------*- tablegen -*-===//
//
// Part of FlashCore. The dialect definition shared by ops, attributes and
// passes.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_TD
#define FMHA_DIALECT_TD

include "mlir/IR/OpBase.td"

def Fmha_Dialect : Dialect {
  let name = "fmha";
  let cppNamespace = "::mlir::fmha";
  let summary = "Fused attention and trajectory-resampling operations";
  let description = [{
    The `fmha` dialect describes whole GPU operations that FlashCore lowers to
    tuned kernels for NVIDIA `sm_80` (mma.sync, ldmatrix, cp.async) and
    `sm_90a` (WGMMA, TMA, mbarrier): `fmha.attention`, a FlashAttention-style
    forward pass, and `fmha.resample`, batched time-series resampling onto
    target timestamps. Operands are memrefs; batch, head and sequence sizes
    may be dynamic (they become kernel arguments), the head or feature
    dimension is static (kernels are specialized on it).
  }];
  let useDefaultAttributePrinterParser = 1;
  // fmha.launch on the gpu.func of a generated kernel.
  let hasOperationAttrVerify = 1;
}

class Fmha_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fmha_Dialect, mnemonic, traits>;

#endif // FMHA_DIALECT_TD
