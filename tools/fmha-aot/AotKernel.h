//===- AotKernel.h - what fmha-aot knows about each kernel ------*- C++ -*-===//
//
// Part of FlashCore. The plain description of the kernels fmha-aot writes
// out: gathered from the fmha ops and their compilations (fmha-aot.cpp),
// turned into C (EmitC.cpp). No MLIR types here, so the emitter only sees
// facts, each computed once: how to launch a kernel is its LaunchContract
// (plain C++), which the compiler decided.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_TOOLS_FMHA_AOT_AOTKERNEL_H
#define FMHA_TOOLS_FMHA_AOT_AOTKERNEL_H

#include "fmha/Dialect/Fmha/LaunchContract.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::fmha::aot {

/// A size or stride the memref type leaves to the launch.
inline constexpr int64_t kDynamic = -1;

/// One launch operand of a kernel (an operand of its op) as the caller
/// passes it: what the operand's type fixes and what the kernel's memory
/// accesses need, which the launcher checks before it makes the kernel's
/// parameters from the operand (LaunchContract::parameters).
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
  /// An index operand (fmha.attention's max_query_length): the caller
  /// passes a value, its size 0 (`dimNames` names it), and the kernel
  /// takes it as one 64-bit parameter.
  bool isIndex = false;
};

/// One kernel function in one cubin and its launch contract, as the
/// lowering recorded it on the function (#fmha.launch): the launcher's
/// tables are the contract's facts, re-derived nowhere.
struct KernelLaunch {
  /// The function's symbol in the cubin.
  std::string function;
  LaunchContract launch;
};

/// One compilation of an op: the kernels it lowered to in one cubin, in the
/// order its launcher runs them (one, or fmha.attention_grad's
/// getAttentionGradKernels), each on all of the op's operands.
struct KernelVariant {
  /// The tile as the op prints it (or the backward's kernels), for the
  /// header's documentation.
  std::string tile;
  std::vector<KernelLaunch> launches;
};

/// One fmha op, compiled for every requested arch.
struct AotKernel {
  enum class Kind { Attention, AttentionGrad, Resample, Merge };
  Kind kind = Kind::Attention;
  /// The C name: the launcher is <prefix>_launch_<name>.
  std::string name;
  /// Where the op came from (`@func` in the input), for the documentation.
  std::string origin;
  std::string elementType; // "f16", "bf16", "f32"
  // Attention and its backward (which has no lse flag: lse is its input).
  unsigned headDim = 0;
  /// fmha.attention's v and o head dim (headDim unless they differ).
  unsigned valueHeadDim = 0;
  bool causal = false;
  bool withLse = false;
  /// The backward adds dq's parts into the f32 dq_accum the caller passes.
  bool withDqAccum = false;
  /// ... in the order the i32 dq_order's counters keep (deterministic).
  bool withDqOrder = false;
  std::optional<std::array<int64_t, 2>> window;
  /// fmha.attention's pack_query_heads (a schedule: the launcher's operands
  /// and checks are the unpacked op's).
  bool packQueryHeads = false;
  /// fmha.attention's sinks and key_lengths operands, and the rows of a
  /// page of its page_table's paged K and V (0: not paged).
  bool withSinks = false, withKeyLengths = false;
  int64_t pageSize = 0;
  /// fmha.attention's split_keys: o and lse hold S partial states of each
  /// batch entry ([S x B, ...]), which fmha.merge_attention combines.
  bool splitKeys = false;
  /// fmha.attention's query_offsets (and max_query_length) and key_offsets:
  /// variable-length sequences packed without padding.
  bool withQueryOffsets = false, withKeyOffsets = false;
  float scale = 0;
  bool scaleIsDefault = true;
  /// The op's softcap (fmha.attention's or fmha.attention_grad's); 0: none.
  float softcap = 0;
  // Resample.
  std::string mode;
  std::vector<unsigned> streamFeatures;
  bool withLengths = false;
  /// The op's operands in its order: the launch operands of every variant's
  /// contract.
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

/// The most dimensions of a launch operand that the generated C holds.
inline constexpr unsigned kMaxOperandRank = 5;

/// Checks that \p launch, the contract of a variant of \p kernel, is one the
/// generated launcher can follow: valid on its own, over the kernel's
/// operands (same names, same order), tensor maps of operands of their
/// element size. The error names the kernel and the mismatch.
llvm::Error checkLaunchContract(const AotKernel &kernel,
                                const LaunchContract &launch);

/// Writes the C header: the documented API of \p file.
llvm::Error emitHeader(const AotFile &file, llvm::raw_ostream &os);
/// Writes the C source: the embedded cubins, each variant's launch contract
/// as tables, and the device selection, the loader and the launchers that
/// read them. Needs only cuda.h and libcuda.
llvm::Error emitSource(const AotFile &file, llvm::raw_ostream &os);

} // namespace mlir::fmha::aot

#endif // FMHA_TOOLS_FMHA_AOT_AOTKERNEL_H
