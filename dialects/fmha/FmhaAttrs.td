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

#endif // FMHA_ATTRS_TD
