//===- FmhaAttrs.td - fmha enums and attributes ------------*- tablegen -*-===//
//
// Part of FlashCore. The target chip, the resample modes, and the tile
// configurations the lowerings read.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_ATTRS_TD
#define FMHA_ATTRS_TD

include "FmhaDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

// Plain sm_90 is deliberately absent: WGMMA, TMA multicast and setmaxnreg
// exist only in the arch-specific sm_90a target, and a Hopper kernel built
// for sm_90 either fails to assemble or falls back to a slow path.
def Fmha_Chip : I32EnumAttr<"Chip", "GPU architecture a kernel is built for", [
    I32EnumAttrCase<"sm_80", 80>,
    I32EnumAttrCase<"sm_90a", 90>
  ]> {
  let cppNamespace = "::mlir::fmha";
}

def Fmha_ResampleMode : I32EnumAttr<"ResampleMode",
    "how a target timestamp takes its value from the source samples", [
    I32EnumAttrCase<"linear", 0>,
    I32EnumAttrCase<"nearest", 1>,
    I32EnumAttrCase<"previous", 2>
  ]> {
  let cppNamespace = "::mlir::fmha";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

// The chip as an attribute parameter. Its parser goes through parseChip so
// that a wrong chip (notably plain sm_90) gets the same explanation as a
// wrong `chip=` option.
def Fmha_ChipParameter : EnumParameter<Fmha_Chip> {
  let parser = "::mlir::fmha::parseChipKeyword($_parser)";
}

class Fmha_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Fmha_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Fmha_TileAttr : Fmha_Attr<"Tile", "tile"> {
  let summary = "tile configuration of an attention kernel for one chip";
  let description = [{
    How `fmha.attention` is tiled on `chip`: each CTA owns `block_m` query
    rows and streams the keys and values in tiles of `block_n` rows through
    `stages` shared-memory buffers each, with `warps` warps.

    - `sm_80` (FlashAttention-2 schedule): warps are stacked along the query
      rows, 16 rows per mma.sync, so `block_m` must be a multiple of
      `16 * warps`.
    - `sm_90a` (FlashAttention-3 schedule): one producer warpgroup (TMA) and
      `warps / 4 - 1` consumer warpgroups that each own 64 query rows per
      WGMMA, so `warps` is a multiple of 4, at least 8, and `block_m` a
      multiple of `64 * consumers`; `block_n` is a WGMMA N and so at most 256.

    `block_n` is the K extent of the P·V product and so a multiple of 16 on
    both chips. Whether the buffers fit in shared memory depends on the head
    dimension and is checked by the op that carries the tile.

    Example:

    ```mlir
    #fmha.tile<sm_90a, block_m = 128, block_n = 128, warps = 12, stages = 2>
    ```
  }];
  let parameters = (ins
    Fmha_ChipParameter:$chip,
    "unsigned":$block_m,
    "unsigned":$block_n,
    "unsigned":$warps,
    "unsigned":$stages
  );
  let assemblyFormat = "`<` $chip `,` struct($block_m, $block_n, $warps, $stages) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The tile as TileConfig's functions take it.
    ::mlir::fmha::AttentionTiling getAttentionTiling() const {
      return {getChip(), getBlockM(), getBlockN(), getWarps(), getStages()};
    }
  }];
}

def Fmha_ResampleTileAttr : Fmha_Attr<"ResampleTile", "resample_tile"> {
  let summary = "tile configuration of a resample kernel for one chip";
  let description = [{
    How `fmha.resample` is tiled on `chip`: each CTA of `threads` threads
    writes `block_t` consecutive target timestamps of one batch row (all
    streams' features). `threads` is a whole number of warps, at most 1024.

    Example:

    ```mlir
    #fmha.resample_tile<sm_80, block_t = 64, threads = 256>
    ```
  }];
  let parameters = (ins
    Fmha_ChipParameter:$chip,
    "unsigned":$block_t,
    "unsigned":$threads
  );
  let assemblyFormat = "`<` $chip `,` struct($block_t, $threads) `>`";
  let genVerifyDecl = 1;
}

def Fmha_LaunchAttr : Fmha_Attr<"Launch", "launch"> {
  let summary = "how the host launches a generated kernel";
  let description = [{
    The launch contract of a kernel, decided by the lowering that generates
    it and recorded on its `gpu.func` as `fmha.launch`. The compile path
    hands it out beside the binary, and every host (the JIT, the C API,
    fmha-aot's launchers, Python) launches from it alone.

    - `operands`: the launch operands (the op's operands, in its order), by
      name; the host passes each as a tensor.
    - `threads`: threads per block; `shared_bytes`: dynamic shared memory.
    - `grid`: one rule per axis (x, y, z), a product of operand sizes
      (`q[2]` is dimension 2 of `q`), each optionally divided rounding up
      (`ceildiv(q[2], 128)`), optionally clamped (`min(..., 65535)`), where
      the kernel strides past the clamp. `persistent`: the kernel takes its
      units of work in turn, so the host launches at most as many CTAs as
      run at once.
    - `parameters`: the kernel's parameters in order: an operand's name is
      its memref descriptor; `tensor_map(q, bf16, box = [128, 64],
      swizzle = 128)` a TMA tensor map of it (the box over its innermost
      dimensions, outermost first), passed by value.

    Example:

    ```mlir
    #fmha.launch<operands = [q, k, v, o], threads = 128,
                 shared_bytes = 49152,
                 grid = [ceildiv(q[2], 128), q[1], min(q[0], 65535)],
                 parameters = [q, k, v, o]>
    ```
  }];
  let parameters = (ins AttrParameter<"::mlir::fmha::LaunchContract",
      "the contract", "const ::mlir::fmha::LaunchContract &">:$contract);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The name of the gpu.func attribute that holds the contract.
    static constexpr ::llvm::StringLiteral getFuncAttrName() {
      return "fmha.launch";
    }
  }];
}

#endif // FMHA_ATTRS_TD
