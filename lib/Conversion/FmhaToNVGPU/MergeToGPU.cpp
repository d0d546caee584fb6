//===- MergeToGPU.cpp - fmha.merge_attention as a gpu.func ----------------===//
//
// Part of FlashCore. Lowers fmha.merge_attention to one kernel (the same for
// every chip) plus a gpu.launch_func in its place.
//
// Launch (getMergeLaunchContract): the op's memref operands in order (outs,
// lses, o, lse if present), each an MLIR memref descriptor. Grid: one CTA
// per kMergeRows rows of each (batch, head), ceil(Sq / kMergeRows) x H x B
// along x (at most 2^31 - 1, the CTAs striding past a clamp). On sm_90a a
// dependent launch: the kernel starts with griddepcontrol.wait.
//
// One warp per query row: lane l reads log-sum-exps l, l + 32, ... of the
// row's S, and the warp reduces their max and their sum (shuffles, no
// chain of S dependent loads); then lane l accumulates columns l, l + 32,
// ... of sum_s exp(lse_s - L) O_s in f32, so a warp's loads of one state
// are coalesced. Merging is memory-bound (S + 1 rows of O per row); the states
// are read once. The combine rule is KERNELS.md section 7's, with states
// whose LSE is not finite weighing nothing.
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/FmhaToNVGPU/FmhaToNVGPU.h"
#include "AttentionCommon.h"
#include "KernelBuilder.h"
#include "KernelLaunch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// Rows (warps) per CTA.
constexpr int64_t kMergeRows = 8;
/// States whose loads a warp issues together.
constexpr int64_t kStatesInFlight = 8;
constexpr int64_t kLanes = 32;

enum MergeOperand : unsigned { kOuts, kLses, kOut };

LaunchContract getMergeLaunchContract(MergeAttentionOp op,
                                      bool dependentLaunch) {
  LaunchContract contract;
  contract.dependentLaunch = dependentLaunch;
  contract.operands = {"outs", "lses", "o"};
  if (op.getLse())
    contract.operands.push_back("lse");
  if (op.getQueryOffsets())
    contract.operands.push_back("query_offsets");
  contract.threads = kMergeRows * kLanes;
  contract.grid = {
      GridAxis{{{kOut, 2, kMergeRows}, {kOut, 1}, {kOut, 0}}, kMaxGridDimX},
      GridAxis{}, GridAxis{}};
  contract.parameters = getOperandParameters(op);
  return contract;
}

class MergeKernelBuilder {
public:
  MergeKernelBuilder(MergeAttentionOp op, gpu::GPUFuncOp func, KernelBuilder &b)
      : b(b), outs(func.getArgument(kOuts)), lses(func.getArgument(kLses)),
        out(func.getArgument(kOut)),
        lse(op.getLse() ? func.getArgument(kOut + 1) : Value()),
        queryOffsets(op.getQueryOffsets()
                         ? func.getArgument(func.getNumArguments() - 1)
                         : Value()),
        headDim(op.getHeadDim()),
        elementType(op.getOuts().getType().getElementType()) {}

  void build();

private:
  void buildRow(Value batch, Value head, Value row, Value lane);
  /// Whether the log-sum-exp \p value is finite: neither +inf (attention's
  /// row without keys) nor -inf, nor NaN.
  Value isFinite(Value value) {
    return arith::CmpFOp::create(b, arith::CmpFPredicate::OLT,
                                 math::AbsFOp::create(b, value),
                                 b.f32(std::numeric_limits<float>::infinity()));
  }
  /// Folds \p body over the states s = first, first + step, ... below S:
  /// the row's lse_s, whether it is finite, and the carried values.
  SmallVector<Value>
  foldStates(Value batch, Value head, Value row, Value first, int64_t step,
             ValueRange initial,
             llvm::function_ref<SmallVector<Value>(Value state, Value lse,
                                                   Value finite,
                                                   ValueRange carried)>
                 body);

  KernelBuilder &b;
  /// Whether \p row (index) is inside the packed sequences' rows (i1), or
  /// null without query_offsets (every row is).
  Value isInsideSequences(Value row);

  Value outs, lses, out, lse, queryOffsets;
  int64_t headDim;
  Type elementType;
};

void MergeKernelBuilder::build() {
  forEachRowOfWarp(b, out, kMergeRows,
                   [&](Value batch, Value head, Value row, Value lane) {
                     Value inside = isInsideSequences(row);
                     if (!inside) {
                       buildRow(batch, head, row, lane);
                       return;
                     }
                     scf::IfOp::create(b, inside, [&](OpBuilder &, Location) {
                       buildRow(batch, head, row, lane);
                       scf::YieldOp::create(b);
                     });
                   });
}

Value MergeKernelBuilder::isInsideSequences(Value row) {
  if (!queryOffsets)
    return Value();
  // In 32 bits, as fmha.attention reads the offsets (signed: a negative
  // one counts as 0); the whole warp takes the same branch (one row).
  Value rows = b.word(memref::DimOp::create(b, out, 2));
  Value last = b.sub(memref::DimOp::create(b, queryOffsets, 0), b.index(1));
  auto load = [&](Value at) {
    return b.clamp(memref::LoadOp::create(b, queryOffsets, ValueRange{at}),
                   b.i32(0), rows);
  };
  Value word = b.word(row);
  return b.and_(b.sle(load(b.index(0)), word), b.slt(word, load(last)));
}

SmallVector<Value> MergeKernelBuilder::foldStates(
    Value batch, Value head, Value row, Value first, int64_t step,
    ValueRange initial,
    llvm::function_ref<SmallVector<Value>(Value, Value, Value, ValueRange)>
        body) {
  Value states = memref::DimOp::create(b, lses, 0);
  auto loop = scf::ForOp::create(b, first, states, b.index(step), initial);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value state = loop.getInductionVar();
  Value value =
      memref::LoadOp::create(b, lses, ValueRange{state, batch, head, row});
  scf::YieldOp::create(
      b, body(state, value, isFinite(value), loop.getRegionIterArgs()));
  return loop.getResults();
}

void MergeKernelBuilder::buildRow(Value batch, Value head, Value row,
                                  Value lane) {
  Value minusInf = b.f32(-std::numeric_limits<float>::infinity());
  Value zero = b.f32(0.0f);
  // m = the largest finite lse_s (-inf if none), then L = m + log(sum_s
  // exp(lse_s - m)): each lane over states lane, lane + 32, ..., then the
  // warp.
  Value laneMax = foldStates(
      batch, head, row, lane, kLanes, ValueRange{minusInf},
      [&](Value, Value value, Value finite, ValueRange carried) {
        Value larger = arith::MaximumFOp::create(b, carried[0], value);
        return SmallVector<Value>{b.select(finite, larger, carried[0])};
      })[0];
  Value max = reduceOverLanes(b, laneMax, /*max=*/true, kLanes);
  Value laneSum = foldStates(
      batch, head, row, lane, kLanes, ValueRange{zero},
      [&](Value, Value value, Value finite, ValueRange carried) {
        Value weight =
            math::ExpOp::create(b, arith::SubFOp::create(b, value, max));
        return SmallVector<Value>{arith::AddFOp::create(
            b, carried[0], b.select(finite, weight, zero))};
      })[0];
  Value sum = reduceOverLanes(b, laneSum, /*max=*/false, kLanes);
  Value any = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, sum, zero);
  Value total =
      arith::AddFOp::create(b, max, math::LogOp::create(b, sum));

  // Lane l holds columns l + 32 i; a column past D (the last i of a D that
  // is not a multiple of 32) reads column D - 1 and is not stored.
  int64_t perLane = (headDim + kLanes - 1) / kLanes;
  SmallVector<Value> columns;
  for (int64_t i = 0; i < perLane; ++i)
    columns.push_back(b.add(lane, b.index(i * kLanes)));
  auto inBounds = [&](int64_t i) {
    return (i + 1) * kLanes <= headDim
               ? columns[i]
               : b.smin(columns[i], b.index(headDim - 1));
  };
  // sum_s exp(lse_s - L) O_s, kStatesInFlight states a step: every load of
  // a step is issued before its first use, so the step waits one memory
  // latency rather than one per state (a chain of S latencies was most of
  // the merge's time), then the last S mod kStatesInFlight one at a time.
  auto addStates = [&](Value first, int64_t count, ValueRange carried) {
    SmallVector<Value> finites, weights, elements;
    for (int64_t k = 0; k < count; ++k) {
      Value state = b.add(first, b.index(k));
      Value value =
          memref::LoadOp::create(b, lses, ValueRange{state, batch, head, row});
      finites.push_back(isFinite(value));
      weights.push_back(b.select(
          finites.back(),
          math::ExpOp::create(b, arith::SubFOp::create(b, value, total)),
          zero));
      for (int64_t i = 0; i < perLane; ++i)
        elements.push_back(memref::LoadOp::create(
            b, outs, ValueRange{state, batch, head, row, inBounds(i)}));
    }
    SmallVector<Value> next(carried);
    for (int64_t k = 0; k < count; ++k)
      for (int64_t i = 0; i < perLane; ++i) {
        Value element = elements[k * perLane + i];
        if (!elementType.isF32())
          element = arith::ExtFOp::create(b, b.getF32Type(), element);
        // A state without keys adds nothing, whatever its O holds (NaN
        // included).
        element = b.select(finites[k], element, zero);
        next[i] = math::FmaOp::create(b, weights[k], element, next[i]);
      }
    return next;
  };
  auto loopOverStates = [&](Value first, Value last, int64_t count,
                            ValueRange initial) {
    auto loop = scf::ForOp::create(b, first, last, b.index(count), initial);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        b, addStates(loop.getInductionVar(), count, loop.getRegionIterArgs()));
    return SmallVector<Value>(loop.getResults());
  };
  Value states = memref::DimOp::create(b, lses, 0);
  Value grouped = b.sub(states, b.urem(states, b.index(kStatesInFlight)));
  SmallVector<Value> sums = loopOverStates(b.index(0), grouped, kStatesInFlight,
                                           SmallVector<Value>(perLane, zero));
  sums = loopOverStates(grouped, states, 1, sums);

  for (int64_t i = 0; i < perLane; ++i) {
    Value value = sums[i];
    if (!elementType.isF32())
      value = arith::TruncFOp::create(b, elementType, value);
    auto store = [&] {
      memref::StoreOp::create(b, value, out,
                              ValueRange{batch, head, row, columns[i]});
    };
    if ((i + 1) * kLanes <= headDim) {
      store();
      continue;
    }
    scf::IfOp::create(b, b.slt(columns[i], b.index(headDim)),
                      [&](OpBuilder &, Location) {
                        store();
                        scf::YieldOp::create(b);
                      });
  }
  if (!lse)
    return;
  // One lane writes the row's LSE: +inf where no state saw a key, as
  // fmha.attention writes for a row that sees none.
  Value inf = b.f32(std::numeric_limits<float>::infinity());
  scf::IfOp::create(b, b.eq(lane, b.index(0)), [&](OpBuilder &, Location) {
    memref::StoreOp::create(b, b.select(any, total, inf), lse,
                            ValueRange{batch, head, row});
    scf::YieldOp::create(b);
  });
}

} // namespace

LogicalResult fmha::lowerMergeAttentionToGPU(MergeAttentionOp op,
                                             gpu::GPUModuleOp kernels,
                                             Chip chip) {
  KernelBuilder b(op.getLoc(), op.getContext());
  // griddepcontrol is sm_90's.
  bool dependentLaunch = chip == Chip::sm_90a;
  gpu::GPUFuncOp func =
      createKernelFunc(op, kernels, "merge_attention",
                       getMergeLaunchContract(op, dependentLaunch));
  // One CTA an SM is enough: without saying so, ptxas 13.0 (the PTX
  // compiler the wheel ships) holds the kernel to 48 registers for
  // occupancy and then loads each state just before its use, which undoes
  // kStatesInFlight (0.43 us a state at 16 states on the H100).
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                b.getI32IntegerAttr(1));
  b.setInsertionPointToStart(&func.getBody().front());
  // The states are the previous kernel's (the split kernel's) output: with
  // a dependent launch, nothing is read before that grid has finished and
  // its writes are visible.
  if (dependentLaunch)
    NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::wait);
  MergeKernelBuilder(op, func, b).build();
  gpu::ReturnOp::create(b);
  replaceByLaunch(op, func);
  return success();
}
