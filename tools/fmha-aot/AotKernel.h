//===- AotKernel.h - what fmha-aot knows about each kernel ------*- C++ -*-===//
//
// Part of FlashCore. The plain description of the kernels fmha-aot writes
// out: gathered from the fmha ops and their compilations (fmha-aot.cpp),
// turned into C (EmitC.cpp). No MLIR types here, so the emitter only sees
// facts, each computed once.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TOOLS_FMHA_AOT_AOTKERNEL_H
#define FMHA_TOOLS_FMHA_AOT_AOTKERNEL_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::fmha::aot {

/// A size or stride the memref type leaves to the launch.
inline constexpr int64_t kDynamic = -1;

/// One memref operand of a kernel as the launcher must pass it: an MLIR
/// memref descriptor (allocated, aligned, offset, sizes, strides), with what
/// the operand's type fixes and what the kernel's memory accesses need.
struct MemRefOperand {
  std::string name;
  /// What each dimension is (`q_seq`, `head_dim`, ...), for messages.
  llvm::SmallVector<std::string, 4> dimNames;
  unsigned rank = 0;
  unsigned elementBytes = 0;
  /// Static sizes from the type; kDynamic where the type has `?`.
  llvm::SmallVector<int64_t, 4> sizes;
  /// Static strides from the type's layout; kDynamic where it has `?`. With
  /// an identity layout every stride is implied by the sizes (row-major).
  llvm::SmallVector<int64_t, 4> strides;
  bool identityLayout = false;
  /// The alignment, in bytes, of the base pointer and of every row start
  /// (the stride of each outer dimension in bytes) that the kernel's
  /// accesses assume.
  unsigned alignBytes = 0;
};

/// One compilation of a kernel: the function in one cubin and the launch
/// constants of its tile.
struct KernelVariant {
  /// The kernel's symbol in the cubin.
  std::string function;
  /// Threads per block (block.x).
  unsigned threads = 0;
  /// Dynamic shared memory per block, in bytes.
  unsigned sharedBytes = 0;
  /// Query rows (attention, block_m) or targets (resample, block_t) of one
  /// block: grid.x is the sequence length divided by this, rounded up.
  unsigned gridTile = 0;
  /// The tile as the op prints it, for the header's documentation.
  std::string tile;
  /// The sm_90a attention kernel's: block_n, the rows of the boxes of the
  /// K and V tensor maps (Q's are gridTile), which the launcher encodes
  /// and passes before the memref operands; 0 for kernels without tensor
  /// maps. Such a kernel runs a persistent grid: one CTA per SM over the
  /// units of work (AttentionSchedule in TileConfig.h), pairs of row blocks
  /// when pairsRowBlocks.
  unsigned tensorMapKeyRows = 0;
  bool pairsRowBlocks = false;
};

/// One fmha op, compiled for every requested arch.
struct AotKernel {
  enum class Kind { Attention, Resample };
  Kind kind = Kind::Attention;
  /// The C name: the launcher is <prefix>_launch_<name>.
  std::string name;
  /// Where the op came from (`@func` in the input), for the documentation.
  std::string origin;
  std::string elementType; // "f16", "bf16", "f32"
  // Attention.
  unsigned headDim = 0;
  bool causal = false;
  bool withLse = false;
  std::optional<std::array<int64_t, 2>> window;
  float scale = 0;
  bool scaleIsDefault = true;
  // Resample.
  std::string mode;
  std::vector<unsigned> streamFeatures;
  bool withLengths = false;
  /// The op's memref operands in kernel-parameter order.
  std::vector<MemRefOperand> operands;
  /// One per cubin, in the order of AotFile::archs.
  std::vector<KernelVariant> variants;
};

/// One cubin: the arch it was compiled for and the chip it was lowered for.
struct AotCubin {
  std::string arch;
  std::string chip;
  std::string image;
};

struct AotFile {
  /// The prefix of every C symbol, and the files' base name.
  std::string prefix;
  /// What the kernels were generated from, and how (the command line).
  std::string source;
  std::string command;
  std::vector<AotCubin> cubins;
  std::vector<AotKernel> kernels;
};

/// Writes the C header: the documented API of \p file.
void emitHeader(const AotFile &file, llvm::raw_ostream &os);
/// Writes the C source: the embedded cubins, the device selection, the
/// loader and one launcher per kernel. Needs only cuda.h and libcuda.
void emitSource(const AotFile &file, llvm::raw_ostream &os);

} // namespace mlir::fmha::aot

#endif // FMHA_TOOLS_FMHA_AOT_AOTKERNEL_H
