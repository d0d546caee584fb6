//===- LaunchContract.h - how the host launches a generated kernel -*- C++ -*-=//
//
// Part of FlashCore. What a lowering decides about one kernel that its host
// must know to launch it: the block, the dynamic shared memory, the grid as
// a rule over the operands' sizes, and the kernel's parameters in order. The
// lowering records it on the gpu.func (`#fmha.launch`); the compile path
// hands it out beside the binary and the disk cache stores it as JSON; the
// JIT, the C API and fmha-aot's launchers read it and re-derive nothing.
// Plain C++ over LLVMSupport, so that a host reads it without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef FMHA_DIALECT_FMHA_LAUNCHCONTRACT_H
#define FMHA_DIALECT_FMHA_LAUNCHCONTRACT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::fmha {

/// One factor of a grid extent: ceil(size / divisor), where size is
/// dimension \p dim of the launch operand \p operand.
struct GridFactor {
  unsigned operand = 0;
  unsigned dim = 0;
  uint64_t divisor = 1;

  bool operator==(const GridFactor &other) const {
    return operand == other.operand && dim == other.dim &&
           divisor == other.divisor;
  }
};

/// One grid axis: the product of its factors (1 without any), clamped to
/// \p max when it is not 0. A kernel whose work outgrows a clamped axis
/// strides over it by the grid's extent.
struct GridAxis {
  llvm::SmallVector<GridFactor, 3> factors;
  int64_t max = 0;

  bool operator==(const GridAxis &other) const {
    return factors == other.factors && max == other.max;
  }
};

/// The element types a tensor map can describe.
enum class TensorMapElement { F16, BF16, F32 };

/// One kernel parameter, made from one launch operand: its MLIR memref
/// descriptor (allocated and aligned pointer, offset, then one size and one
/// stride per dimension, all 64-bit), a TMA tensor map of it passed by
/// value (128 bytes, a grid constant), or, for an operand that is an index
/// (a size the op takes as a value), that value as a 64-bit integer.
struct KernelParameter {
  enum class Kind { MemRef, TensorMap, Index };
  Kind kind = Kind::MemRef;
  unsigned operand = 0;
  // Tensor maps only.
  TensorMapElement element = TensorMapElement::BF16;
  /// The box one copy moves, in the operand's dimension order (outermost
  /// first) for its innermost box.size() dimensions; the others are 1.
  llvm::SmallVector<uint32_t, 4> box;
  /// The shared-memory swizzle span: 0 (none), 32, 64 or 128 bytes.
  unsigned swizzleBytes = 0;
  /// The L2 fill of a copy's global reads (cuTensorMapEncodeTiled's L2
  /// promotion): 0 (none), 64, 128 or 256 bytes; the lowering picks it per
  /// map where the tile measured better with another (sm_90a's prefill
  /// tiles take 256, getSm90aLaunchContract).
  unsigned l2PromotionBytes = kDefaultL2PromotionBytes;
  static constexpr unsigned kDefaultL2PromotionBytes = 128;

  bool operator==(const KernelParameter &other) const {
    return kind == other.kind && operand == other.operand &&
           element == other.element && box == other.box &&
           swizzleBytes == other.swizzleBytes &&
           l2PromotionBytes == other.l2PromotionBytes;
  }
};

/// The launch contract of one kernel. The launch operands are the op's
/// operands, in its order; the host passes each as a tensor (data, sizes,
/// strides in elements), and an index operand as its value alone: sizes
/// {value} (its dimension 0, which a grid factor may read), no data.
struct LaunchContract {
  /// The launch operands' names, for messages and generated code.
  std::vector<std::string> operands;
  /// Threads per block (block.x; block.y = block.z = 1).
  unsigned threads = 0;
  /// Dynamic shared memory per block, in bytes.
  uint64_t sharedBytes = 0;
  std::array<GridAxis, 3> grid;
  /// Whether the kernel takes its units of work in turn (CTA x takes units
  /// x, x + gridDim.x, ...): any grid x extent is correct, and the host
  /// launches at most as many CTAs as run at once.
  bool persistent = false;
  /// Whether the kernel waits for the grids before it in its stream
  /// (griddepcontrol.wait) before its first memory access: the host may
  /// then launch it with programmatic stream serialization, so that its
  /// launch and prologue overlap the previous kernel's tail (sm_90+).
  bool dependentLaunch = false;
  std::vector<KernelParameter> parameters;

  bool operator==(const LaunchContract &other) const {
    return operands == other.operands && threads == other.threads &&
           sharedBytes == other.sharedBytes && grid == other.grid &&
           persistent == other.persistent &&
           dependentLaunch == other.dependentLaunch &&
           parameters == other.parameters;
  }

  /// Checks the contract on its own: operand references in range, tensor
  /// maps with a box and a valid swizzle, divisors and threads non-zero.
  /// The error names the offending part.
  llvm::Error verify() const;

  /// The grid for operands of \p sizes (one list per operand, outermost
  /// first): each axis's factors, clamped; a persistent grid's x axis at
  /// most \p residentCtas when that is not 0. Fails, naming the axis and
  /// the operand dimensions, where an extent exceeds what CUDA allows.
  llvm::Expected<std::array<unsigned, 3>>
  computeGrid(llvm::ArrayRef<llvm::ArrayRef<int64_t>> sizes,
              unsigned residentCtas) const;

  /// The number of leading kernel parameters that are tensor maps.
  unsigned getLeadingTensorMaps() const;

  /// The readable form, as `#fmha.launch<...>` prints its body.
  void print(llvm::raw_ostream &os) const;
  std::string str() const;

  /// The JSON form that the disk cache and the C API's hosts read.
  llvm::json::Value toJSON() const;
  static llvm::Expected<LaunchContract> fromJSON(const llvm::json::Value &value);
  static llvm::Expected<LaunchContract> parseJSON(llvm::StringRef text);
};

/// CUDA's largest grid x extent, and the largest y and z extent.
inline constexpr int64_t kMaxGridDimX = (int64_t(1) << 31) - 1;
inline constexpr int64_t kMaxGridDimY = 65535;

llvm::StringRef stringifyTensorMapElement(TensorMapElement element);
/// The element named \p name ("f16", "bf16", "f32"), if any.
std::optional<TensorMapElement> parseTensorMapElement(llvm::StringRef name);
/// The element's size in bytes.
unsigned getTensorMapElementBytes(TensorMapElement element);

llvm::hash_code hash_value(const LaunchContract &contract);

} // namespace mlir::fmha

#endif // FMHA_DIALECT_FMHA_LAUNCHCONTRACT_H
