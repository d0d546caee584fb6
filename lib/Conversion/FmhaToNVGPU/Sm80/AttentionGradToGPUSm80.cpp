//===- AttentionGradToGPUSm80.cpp - fmha.attention_grad over mma.sync -----===//
//
// Part of FlashCore. Lowers fmha.attention_grad to kernels launched one
// after the other in its place (KERNELS.md section 6 for the math), built
// from the sm_80 forward's emitters (cp.async tile copies, ldmatrix and
// mma.sync, the mask on accumulator fragments). They run on every chip:
// mma.sync is valid on sm_90a too, where a WGMMA kernel of FlashAttention-3's
// design is the next step (issue #23).
//
// 1. attention_grad_delta: delta = rowsum(dout * o) in f32, a warp per row.
// 2. attention_grad_dq: one CTA per block of query rows of one (batch,
//    query head), as the forward's: Q and dO stay in shared memory while K
//    and V blocks stream through, and per key block
//      S = Q K^T, P = exp2(S scale log2e - LSE log2e), dP = dO V^T,
//      dS = P (dP - delta), dQ += dS K;
//    dq = scale dQ at the end.
// 3. attention_grad_dkv (at head dim 256 attention_grad_dk and
//    attention_grad_dv, each with its half of the registers): one CTA per
//    block of keys of one (batch, KV head):
//    K and V stay in shared memory while the Q and dO blocks of every query
//    head of the group stream through, and per query block the same
//    products transposed, with keys as rows (so that P^T and dS^T are
//    already A fragments and nothing goes through shared memory):
//      S^T = K Q^T, dP^T = V dO^T, dS^T = P^T (dP^T - delta),
//      dV += P^T dO, dK += dS^T Q;
//    dk = scale dK, dv = dV at the end, summed over the group in registers.
//
// The streamed blocks are double-buffered: block n + 1's cp.async copies
// are issued before block n's GEMMs, into the other buffer, and one
// barrier per block separates them (single-buffered past 192 with
// dq_accum: issued after block n's last read of Q and dO, behind a second
// barrier). The tiling is sm_80's (getSm80GradTiling, TileConfig.h), or
// under the op's max_shared_bytes one that fits it: on a 99 KB GPU the
// deterministic kernels past head dim 128 stream blocks of 16 rows, the
// one-pass kernel up to 128 streams 64 queries (d64) or holds 64 keys with
// one Q and dO buffer.
//
// Splitting dq from dk and dv computes S and dP twice: 7 GEMMs where
// FlashAttention's single kernel runs 5 and sums dq over the key blocks
// with f32 atomics. In exchange nothing is reduced across CTAs: every run
// gives the same bits, and there is no f32 dq workspace to zero and
// convert. With the op's dq_accum, the lowering does it FlashAttention's
// way instead: delta also zeroes dq_accum, dk/dv adds each block's
// dQ = dS K to it with atomics (dS^T through shared memory), and
// attention_grad_dq_convert writes dq = scale dq_accum (no dq kernel).
// At head dims 64, 96 and 128 that kernel's 8 warps are FlashAttention-2's
// grid of 4 x 2 (Sm80GradTiling::columnWarps): each computes S^T and dP^T for
// its 32 keys and half of the block's queries (128 at head dim 64, 64 at
// 96 and 128), and dK and dV for its 32 keys and half of D's columns, P^T
// going through shared memory beside dS^T; at 160 and 192 the same over
// 64 keys (16 a warp) in tiles of 192 columns, d192's dK and dV over 2 x 4
// warps (Sm80GradTiling::gradColumnWarps); at 224 and 256 in tiles of 256
// columns with one Q and dO buffer (Sm80GradTiling::singleBuffered), d256's
// dK and dV over 2 x 4 warps. Other head dims past 128 take the
// deterministic kernels (isSm80OnePassGradHeadDim).
//
// The row kernels are chip-independent and serve sm_90a's kernel too: with
// dkv_partial (sm_90a only) attention_grad_dkv_reduce, after dq's
// conversion, sums the slices' f32 dk and dv in slice order.
//
// Launch: each kernel takes every operand of the op as an MLIR memref
// descriptor (so strides and every size but D are launch arguments); the
// main kernels 128 threads (dk/dv with dq_accum from head dim 64: 256), a
// grid of (row blocks, heads, min(B, 65535)) (getGradTiling's rows: 64, or
// 128 at head dim 64 and for dk/dv with dq_accum from 64 to 128), the
// batches striding by the grid's z extent; delta and the conversion one CTA
// per 8 rows of each (batch, head).
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/FmhaToNVGPU/FmhaToNVGPU.h"
#include "AttentionCommon.h"
#include "AttentionLowerings.h"
#include "KernelLaunch.h"
#include "Sm80/AsyncCopy.h"
#include "Sm80/FragmentSoftmax.h"
#include "Sm80/WarpMma.h"
#include "TileSchedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm80;

namespace {

/// The columns of the main kernels' shared tiles (getSm80GradTileColumns).
int64_t getGradTileColumns(AttentionGradOp op) {
  return getSm80GradTileColumns(op.getHeadDim(), bool(op.getDqAccum()));
}

/// The main kernels' tiling: the chip's, or one that fits the op's
/// max_shared_bytes (getSm80GradTiling).
Sm80GradTiling getGradTiling(AttentionGradOp op) {
  return getSm80GradTiling(op.getHeadDim(), bool(op.getDqAccum()),
                           op.getMaxSharedBytes().value_or(0));
}

/// Warps per CTA of the delta and dq conversion kernels.
constexpr int64_t kRowKernelWarps = 8;

/// Columns per lane of those kernels: 16 bytes of q's element type, one
/// vector access each.
constexpr int64_t kRowLaneColumns = 8;

/// Lanes per row of those kernels over \p columns of a row: columns / 8
/// rounded up to a power of two (the lanes past them idle), so that a warp
/// takes 32 / that many neighbouring rows below 256 columns and a row's
/// lanes reduce by butterfly shuffles.
int64_t getRowLanes(int64_t columns) {
  return llvm::PowerOf2Ceil(llvm::divideCeil(columns, kRowLaneColumns));
}

/// Runs \p body where lane \p lane of \p lanes per row has some of a row's
/// first \p columns (every lane where they are all the lanes' columns), and
/// returns what it returns there and \p otherwise elsewhere; without
/// \p otherwise, nothing (\p body returns a null Value).
Value ifLaneHasColumns(KernelBuilder &b, int64_t columns, int64_t lanes,
                       Value lane, llvm::function_ref<Value()> body,
                       Value otherwise = Value()) {
  if (columns == lanes * kRowLaneColumns)
    return body();
  SmallVector<Type, 1> types;
  if (otherwise)
    types.push_back(otherwise.getType());
  auto branch = scf::IfOp::create(
      b, types, b.slt(b.mul(lane, b.index(kRowLaneColumns)), b.index(columns)),
      /*withElseRegion=*/static_cast<bool>(otherwise));
  OpBuilder::InsertionGuard guard(b);
  // Without results the branch has its terminator already.
  b.setInsertionPointToStart(branch.thenBlock());
  Value result = body();
  if (!otherwise)
    return Value();
  scf::YieldOp::create(b, ValueRange{result});
  b.setInsertionPointToStart(branch.elseBlock());
  scf::YieldOp::create(b, ValueRange{otherwise});
  return branch.getResult(0);
}

/// Rows per CTA of those kernels at \p lanes per row.
int64_t getRowKernelRows(int64_t lanes) {
  return kRowKernelWarps * kThreadsPerWarp / lanes;
}

/// The lanes per row of the delta kernel: over dout's and o's Dv columns,
/// and dq_accum's D where it zeroes that.
int64_t getDeltaLanes(AttentionGradOp op) {
  return getRowLanes(op.getDqAccum()
                         ? std::max(op.getHeadDim(), op.getValueHeadDim())
                         : op.getValueHeadDim());
}

} // namespace

std::vector<std::string>
fmha::getAttentionGradOperandNames(AttentionGradOp op) {
  std::vector<std::string> names = {"q",   "k",  "v",  "o",  "dout",
                                    "lse", "dq", "dk", "dv", "delta"};
  if (op.getDqAccum())
    names.push_back("dq_accum");
  if (op.getDqOrder())
    names.push_back("dq_order");
  if (op.getDkvPartial())
    names.push_back("dkv_partial");
  return names;
}

unsigned fmha::getAttentionGradOperandIndex(AttentionGradOp op,
                                            AttentionGradOperand operand) {
  assert((operand != kGradDqOrder || op.getDqOrder()) &&
         (operand != kGradDkvPartial || op.getDkvPartial()) &&
         "the op has the operand");
  if (operand != kGradDkvPartial)
    return operand;
  return kGradDqOrder + (op.getDqOrder() ? 1 : 0);
}

namespace {

LaunchContract getGradLaunchContract(AttentionGradOp op, int64_t threads,
                                     int64_t sharedBytes,
                                     std::array<GridAxis, 3> grid) {
  LaunchContract contract;
  contract.operands = getAttentionGradOperandNames(op);
  contract.threads = threads;
  contract.sharedBytes = sharedBytes;
  contract.grid = {grid[0], grid[1], grid[2]};
  contract.parameters = getOperandParameters(op);
  return contract;
}

/// Where a main kernel's tiles live in shared memory
/// (getSm80GradSharedLayout).
Sm80GradSharedLayout getGradSharedLayout(AttentionGradOp op,
                                         Sm80GradTiling tiling) {
  int64_t elementBytes = op.getQ().getType().getElementTypeBitWidth() / 8;
  return getSm80GradSharedLayout(tiling, op.getHeadDim(), bool(op.getDqAccum()),
                                 elementBytes);
}

KernelShape getGradShape(AttentionGradOp op, Sm80GradTiling tiling) {
  KernelShape shape = KernelShape::get(
      tiling.rows, tiling.streamed, tiling.warps, op.getHeadDim(),
      op.getQ().getType().getElementType(), op.getScaleOrDefault());
  shape.softcap = ScoreCap::get(op);
  shape.keyColumns = shape.valueColumns = getGradTileColumns(op);
  return shape;
}

/// What one warp of \p shape computes in a grid of \p columnWarps columns
/// (Sm80GradTiling): the m16 tiles of its rows, its share of a streamed block
/// (blockN, nTiles) and of D's n8 tiles (dTiles). \p shape itself where
/// the warps are one column.
KernelShape getWarpTileShape(KernelShape shape, int64_t columnWarps) {
  if (columnWarps == 1)
    return shape;
  shape.warps /= columnWarps;
  shape.mTiles = shape.blockM / (kMmaM * shape.warps);
  shape.blockN /= columnWarps;
  shape.nTiles = shape.blockN / kMmaN;
  shape.dTiles /= columnWarps;
  return shape;
}

/// delta[b, h, i] = sum_d dout[b, h, i, d] o[b, h, i, d] in f32 over Dv, a
/// row's lanes (getDeltaLanes) summing their 8 products each; and, with
/// dq_accum, that row of it (D) zeroed (with dq_order, the counter of each
/// block of kQueryGradOrderBlock rows too).
void buildDeltaKernel(AttentionGradOp op, gpu::GPUFuncOp func,
                      KernelBuilder &b) {
  Value out = func.getArgument(kGradO), gradOut = func.getArgument(kGradDout);
  Value delta = func.getArgument(kGradDelta);
  Value accumulator = op.getDqAccum() ? func.getArgument(kGradDqAccum) : Value();
  Value order = op.getDqOrder() ? func.getArgument(kGradDqOrder) : Value();
  int64_t rowLanes = getDeltaLanes(op), perLane = kRowLaneColumns;
  Type elementType = op.getQ().getType().getElementType();
  auto vectorType = VectorType::get({perLane}, elementType);
  auto floatType = VectorType::get({perLane}, b.getF32Type());
  forEachRowOfWarp(
      b, out, getRowKernelRows(rowLanes),
      [&](Value batch, Value head, Value row, Value lane) {
        // The lane's neighbouring columns, one vector access each.
        SmallVector<Value, 4> at = {batch, head, row,
                                    b.mul(lane, b.index(perLane))};
        auto load = [&](Value tensor) -> Value {
          Value elements = vector::LoadOp::create(
              b, vectorType, tensor, at, /*nontemporal=*/false,
              getVectorAlignment(perLane, elementType));
          return arith::ExtFOp::create(b, floatType, elements);
        };
        // A lane past Dv adds 0.
        Value sum = ifLaneHasColumns(
            b, op.getValueHeadDim(), rowLanes, lane,
            [&]() -> Value {
              return vector::ReductionOp::create(
                  b, vector::CombiningKind::ADD,
                  arith::MulFOp::create(b, load(gradOut), load(out)));
            },
            b.f32(0.0f));
        sum = rowLanes < kThreadsPerWarp
                  ? sumOverLaneGroup(b, sum, rowLanes)
                  : reduceOverLanes(b, sum, /*max=*/false, kThreadsPerWarp);
        Value firstLane = b.eq(lane, b.index(0));
        scf::IfOp::create(b, firstLane, [&](OpBuilder &, Location) {
          memref::StoreOp::create(b, sum, delta, ValueRange{batch, head, row});
          scf::YieldOp::create(b);
        });
        if (order) {
          Value firstOfBlock =
              b.eq(b.urem(row, b.index(kQueryGradOrderBlock)), b.index(0));
          scf::IfOp::create(
              b, b.and_(firstLane, firstOfBlock), [&](OpBuilder &, Location) {
                Value block = b.udiv(row, b.index(kQueryGradOrderBlock));
                memref::StoreOp::create(b, b.i32(0), order,
                                        ValueRange{batch, head, block});
                scf::YieldOp::create(b);
              });
        }
        if (accumulator)
          ifLaneHasColumns(b, op.getHeadDim(), rowLanes, lane, [&] {
            vector::StoreOp::create(
                b,
                arith::ConstantOp::create(
                    b,
                    DenseElementsAttr::get(floatType, b.getF32FloatAttr(0.0f))),
                accumulator, at, /*nontemporal=*/false,
                getVectorAlignment(perLane, b.getF32Type()));
            return Value();
          });
      },
      rowLanes);
}

/// Where the sm_80 dk/dv kernel adds element (\p row, \p column) (i32,
/// within its kMmaM x kMmaN tile) of dQ in dq_accum: its f32 atomics add m16n8
/// fragments, lane l holding rows l / 4 + 8 h and columns 2 (l % 4) + e,
/// so that one red of a given (h, e) over a warp spans 8 rows. Row-major,
/// that is 8 sectors, half of each used; so a whole tile (one that Sq
/// does not cut) keeps lane l's (h, e) at row 8 h + 4 e + l / 8, column
/// l % 8: 4 rows of 8 columns, 4 whole sectors a red (FlashAttention-2
/// permutes its dq_accum for the same reason). Returns the (row, column)
/// within the tile.
std::pair<Value, Value> getFragmentPlace(KernelBuilder &b, Value row,
                                         Value column) {
  Value lane =
      b.add(b.mul(b.urem(row, b.i32(8)), b.i32(4)), b.udiv(column, b.i32(2)));
  Value half = b.udiv(row, b.i32(8)), e = b.urem(column, b.i32(2));
  return {b.add(b.add(b.mul(half, b.i32(8)), b.mul(e, b.i32(4))),
                b.udiv(lane, b.i32(8))),
          b.urem(lane, b.i32(8))};
}

/// Whether the kMmaM-row tile from \p firstRow (i32) lies within \p rows
/// (index): there dq_accum is in getFragmentPlace's layout.
Value isWholeFragmentTile(KernelBuilder &b, Value firstRow, Value rows) {
  return b.sle(b.add(firstRow, b.i32(kMmaM)), b.word(rows));
}

/// dq = scale dq_accum, rounded to the element type, a lane's neighbouring
/// columns (getRowLanes) at a time, read where the dk/dv kernel keeps them:
/// the sm_90a kernel's whole chunks of 4 columns (getQueryGradColumn), a
/// chunk at a time; the sm_80 kernel's fragment order (getFragmentPlace),
/// where a lane's 8 columns are one tile's row whose even and odd columns
/// are each 4 neighbours.
void buildConvertKernel(AttentionGradOp op, gpu::GPUFuncOp func,
                        KernelBuilder &b, bool dkvSm90a) {
  Value accumulator = func.getArgument(kGradDqAccum);
  Value gradQuery = func.getArgument(kGradDq);
  Value rows = memref::DimOp::create(b, gradQuery, 2);
  int64_t perLane = kRowLaneColumns;
  static_assert(kRowLaneColumns == kMmaN,
                "a lane converts one row of a fragment tile");
  constexpr int64_t perPart = 4;
  int64_t rowLanes = getRowLanes(op.getHeadDim());
  Type elementType = op.getQ().getType().getElementType();
  auto floatType = VectorType::get({perLane}, b.getF32Type());
  auto partType = VectorType::get({perPart}, b.getF32Type());
  Value scale =
      vector::BroadcastOp::create(b, floatType, b.f32(op.getScaleOrDefault()));
  auto load = [&](VectorType type, ArrayRef<Value> at) -> Value {
    return vector::LoadOp::create(
        b, type, accumulator, at, /*nontemporal=*/false,
        getVectorAlignment(type.getNumElements(), b.getF32Type()));
  };
  forEachRowOfWarp(
      b, func.getArgument(kGradQ), getRowKernelRows(rowLanes),
      [&](Value batch, Value head, Value row, Value lane) {
        ifLaneHasColumns(b, op.getHeadDim(), rowLanes, lane, [&] {
          Value column = b.mul(lane, b.index(perLane));
          SmallVector<Value, 4> at = {batch, head, row, column};
          Value sum;
          if (dkvSm90a) {
            SmallVector<Value, 2> parts;
            for (int64_t first = 0; first < perLane; first += perPart) {
              Value partColumn = b.add(column, b.index(first));
              parts.push_back(load(
                  partType,
                  {batch, head, row,
                   getQueryGradColumn(b, row, partColumn, op.getHeadDim())}));
            }
            sum = vector::ShuffleOp::create(
                b, parts[0], parts[1],
                ArrayRef<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
          } else {
            Value rowWord = b.word(row);
            Value tileRow = b.urem(rowWord, b.i32(kMmaM));
            Value firstRow = b.sub(rowWord, tileRow);
            auto branch = scf::IfOp::create(
                b, floatType, isWholeFragmentTile(b, firstRow, rows),
                /*withElseRegion=*/true);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(branch.thenBlock());
            // Columns 2j at the place of column 0 onwards, 2j + 1 at
            // column 1's.
            SmallVector<Value, 2> parts;
            for (int64_t e = 0; e < 2; ++e) {
              auto [placeRow, placeColumn] =
                  getFragmentPlace(b, tileRow, b.i32(e));
              parts.push_back(load(
                  partType, {batch, head, b.toIndex(b.add(firstRow, placeRow)),
                             b.add(column, b.toIndex(placeColumn))}));
            }
            scf::YieldOp::create(
                b, ValueRange{vector::ShuffleOp::create(
                       b, parts[0], parts[1],
                       ArrayRef<int64_t>{0, 4, 1, 5, 2, 6, 3, 7})});
            b.setInsertionPointToStart(branch.elseBlock());
            scf::YieldOp::create(b, ValueRange{load(floatType, at)});
            b.setInsertionPointAfter(branch);
            sum = branch.getResult(0);
          }
          Value scaled = arith::MulFOp::create(b, sum, scale);
          vector::StoreOp::create(
              b,
              arith::TruncFOp::create(
                  b, VectorType::get({perLane}, elementType), scaled),
              gradQuery, at, /*nontemporal=*/false,
              getVectorAlignment(perLane, elementType));
          return Value();
        });
      },
      rowLanes);
}

/// dk and dv from dkv_partial: each lane's neighbouring columns
/// (getRowLanes over the wider head dim) summed over the slices in their
/// order, so that the sum has the same bits every run, and rounded to the
/// element type.
void buildDkvReduceKernel(AttentionGradOp op, gpu::GPUFuncOp func,
                          KernelBuilder &b) {
  Value partial =
      func.getArgument(getAttentionGradOperandIndex(op, kGradDkvPartial));
  Value slices = memref::DimOp::create(b, partial, 0);
  int64_t headDim = op.getHeadDim(), valueHeadDim = op.getValueHeadDim();
  int64_t rowLanes = getRowLanes(std::max(headDim, valueHeadDim));
  int64_t perLane = kRowLaneColumns;
  Type elementType = op.getQ().getType().getElementType();
  auto floatType = VectorType::get({perLane}, b.getF32Type());
  forEachRowOfWarp(
      b, func.getArgument(kGradDk), getRowKernelRows(rowLanes),
      [&](Value batch, Value head, Value row, Value lane) {
        Value column = b.mul(lane, b.index(perLane));
        // dk's columns first in a partial row, then dv's.
        for (auto [operand, columns, first] :
             {std::tuple{kGradDk, headDim, int64_t(0)},
              std::tuple{kGradDv, valueHeadDim, headDim}}) {
          ifLaneHasColumns(
              b, columns, rowLanes, lane,
              [&, operand = operand, first = first] {
                Value zero = arith::ConstantOp::create(
                    b,
                    DenseElementsAttr::get(floatType, b.getF32FloatAttr(0.0f)));
                auto loop =
                    scf::ForOp::create(b, b.index(0), slices, b.index(1), zero);
                {
                  OpBuilder::InsertionGuard guard(b);
                  b.setInsertionPointToStart(loop.getBody());
                  Value part = vector::LoadOp::create(
                      b, floatType, partial,
                      ValueRange{loop.getInductionVar(), batch, head, row,
                                 b.add(column, b.index(first))},
                      /*nontemporal=*/false,
                      getVectorAlignment(perLane, b.getF32Type()));
                  scf::YieldOp::create(
                      b, ValueRange{arith::AddFOp::create(
                             b, loop.getRegionIterArgs()[0], part)});
                }
                vector::StoreOp::create(
                    b,
                    arith::TruncFOp::create(
                        b, VectorType::get({perLane}, elementType),
                        loop.getResult(0)),
                    func.getArgument(operand),
                    ValueRange{batch, head, row, column}, /*nontemporal=*/false,
                    getVectorAlignment(perLane, elementType));
                return Value();
              });
        }
      },
      rowLanes);
}

/// What the main kernels share: the shared tiles, the emitters, the
/// double-buffered block loop, and the per-block arithmetic between the
/// GEMMs.
class GradKernelBuilder {
public:
  GradKernelBuilder(AttentionGradOp op, Sm80GradTiling tiling,
                    gpu::GPUFuncOp func, KernelBuilder &b)
      : op(op), func(func), b(b), shape(getGradShape(op, tiling)),
        columnWarps(tiling.columnWarps),
        gradColumnWarps(tiling.getGradColumnWarps()),
        singleBuffered(tiling.singleBuffered),
        warpShape(getWarpTileShape(shape, columnWarps)),
        gradShape(getWarpTileShape(shape, gradColumnWarps)),
        layout(getGradSharedLayout(op, tiling)), copies(b, shape),
        mma(b, warpShape, noTiles) {}

  void buildDq();
  /// dk and dv (AttentionGradKernel::Dkv), or one of them (Dk, Dv: head
  /// dim 256, where one thread would hold 256 f32 of dK and dV; dv
  /// recomputes S^T alone, dk S^T and dP^T).
  void buildDkv(AttentionGradKernel kernel);

private:
  Value arg(AttentionGradOperand operand) {
    return func.getArgument(operand);
  }
  /// Shared tile \p index (0-1: the tiles that stay) of shape.blockM rows
  /// of D.
  Value getSharedTile(int64_t index);
  /// Streamed tile \p index (0 or 1) of buffer \p parity (index, 0 or 1).
  Value getStreamedTile(int64_t index, Value parity);
  /// Buffer \p parity of the [2][shape.blockN] f32 LSE and delta of a
  /// query block, in shared memory after the tiles.
  Value getSharedColumnTerms(Value parity);
  /// dS^T of a block in shared memory (dkv with dq_accum), and P^T (in a
  /// grid of warps): [blockM keys][blockN queries], swizzled.
  Value getSharedGradScores();
  Value getSharedProbabilities();
  /// Stores this warp's fragments \p fragments ([mTile][nTile] of
  /// warpShape) of dS^T or P^T to \p tile, rounded to the element type.
  void storeTransposedScores(const Lanes &lanes, ArrayRef<Value> fragments,
                             Value tile);
  /// Adds dQ = dS K of the block of queries from \p firstQuery (of
  /// \p head) to dq_accum with f32 atomics: dS from \p scoresTile (dS^T,
  /// read transposed), K the keys tile. Warp w takes query m16 tile w %
  /// (blockN / 16) and its share of the keys' k16 steps.
  void accumulateQueryGrad(const Lanes &lanes, Value scoresTile, Value keys,
                           Value batch, Value head, Value firstQuery,
                           Value seqQ);
  /// Runs \p body over the batches this CTA computes: from blockIdx.z,
  /// striding by gridDim.z.
  void forEachBatch(llvm::function_ref<void(Value batch)> body);
  /// Runs \p body for blocks [0, \p count) (index), carrying
  /// \p accumulators, with block n + 1's copies issued (\p issue, into
  /// buffer (n + 1) % 2, then committed) before block n's body, and block
  /// 0's before the loop. \p body gets the block, its buffer's parity and
  /// \p release, which it calls once it has issued its last read of the
  /// streamed tiles: with one buffer (singleBuffered) block n + 1's copies
  /// are issued there, after a barrier, into buffer 0; with two it does
  /// nothing.
  SmallVector<Value> forEachStreamedBlock(
      Value count, ArrayRef<Value> accumulators,
      llvm::function_ref<void(Value block, Value parity)> issue,
      llvm::function_ref<SmallVector<Value>(Value block, Value parity,
                                            ValueRange carried,
                                            llvm::function_ref<void()> release)>
          body);
  /// dS = P (dP - delta) with P = exp2(S scale log2e - lse log2e), per
  /// fragment element of warpShape's tile: \p lse2 and \p delta per element of
  /// a fragment (index [m][n][half][e] of \p at); with a softcap (S capped),
  /// times the cap's slope. Returns P and dS as accumulators.
  std::pair<SmallVector<Value>, SmallVector<Value>>
  computeGradScores(ArrayRef<Value> scores, ArrayRef<Value> gradProbs,
                    llvm::function_ref<std::pair<Value, Value>(
                        int64_t m, int64_t n, int64_t half, int64_t e)>
                        rowTerms);
  /// Stores this warp's rows of \p accumulators ([mTile][dTile] of
  /// gradShape, its column group's) times \p factor to rows from
  /// \p firstRow (those below \p rows) of (\p batch, \p head) of \p global.
  void storeRows(const Lanes &lanes, ArrayRef<Value> accumulators,
                 float factor, Value global, Value batch, Value head,
                 Value firstRow, Value rows);
  /// lse log2e and delta of row \p row (clamped below \p rows: rows past
  /// the end hold zero-filled tiles and are masked).
  std::pair<Value, Value> loadRowTerms(Value batch, Value head, Value row,
                                       Value rows);
  SmallVector<Value> zeroAccumulators(int64_t count);

  AttentionGradOp op;
  gpu::GPUFuncOp func;
  KernelBuilder &b;
  KernelShape shape;
  /// The grids of warps (Sm80GradTiling) and what each warp of them computes:
  /// S^T and dP^T (warpShape), dK and dV (gradShape).
  int64_t columnWarps, gradColumnWarps;
  bool singleBuffered;
  KernelShape warpShape, gradShape;
  Sm80GradSharedLayout layout;
  SharedTiles noTiles;
  AsyncCopy copies;
  WarpMma mma;
};

/// A view of \p shape at \p byteOffset (index) of the dynamic shared
/// memory.
static Value getSharedView(KernelBuilder &b, ArrayRef<int64_t> shape,
                           Type elementType, Value byteOffset) {
  auto workgroup = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  Value bytes = gpu::DynamicSharedMemoryOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), nullptr,
                         workgroup));
  auto type = MemRefType::get(shape, elementType, nullptr, workgroup);
  return memref::ViewOp::create(b, type, bytes, byteOffset, ValueRange{});
}

Value GradKernelBuilder::getSharedTile(int64_t index) {
  return getSharedView(b, {shape.blockM, shape.keyColumns}, shape.elementType,
                       b.index(index * layout.tileBytes));
}

Value GradKernelBuilder::getStreamedTile(int64_t index, Value parity) {
  Value offset = b.add(
      b.index(2 * layout.tileBytes + index * layout.streamedBytes),
      b.mul(parity, b.index(2 * layout.streamedBytes)));
  return getSharedView(b, {shape.blockN, shape.keyColumns}, shape.elementType,
                       offset);
}

Value GradKernelBuilder::getSharedGradScores() {
  // Whole swizzle periods of 16-byte chunks a row.
  assert(shape.blockN % (kSwizzleRows * shape.chunkElements) == 0);
  return getSharedView(b, {shape.blockM, shape.blockN}, shape.elementType,
                       b.index(layout.scoresOffset));
}

Value GradKernelBuilder::getSharedProbabilities() {
  return getSharedView(b, {shape.blockM, shape.blockN}, shape.elementType,
                       b.index(layout.probabilitiesOffset));
}

void GradKernelBuilder::storeTransposedScores(const Lanes &lanes,
                                              ArrayRef<Value> fragments,
                                              Value tile) {
  auto pairType = VectorType::get({2}, shape.elementType);
  // n8 tile n of this warp is chunk n of its column group's; a lane's rows
  // are all g mod 8, so in each of them that chunk is swizzled by g.
  Value firstChunk = b.mul(lanes.columnGroup, b.i32(warpShape.nTiles));
  Value laneColumn = b.mul(lanes.quadCol, b.i32(2));
  SmallVector<Value> columns;
  for (int64_t n = 0; n < warpShape.nTiles; ++n)
    columns.push_back(b.toIndex(
        b.add(b.mul(b.xor_(b.add(firstChunk, b.i32(n)), lanes.quadRow),
                    b.i32(shape.chunkElements)),
              laneColumn)));
  for (int64_t m = 0; m < warpShape.mTiles; ++m)
    for (int64_t half = 0; half < 2; ++half) {
      Value row = b.toIndex(b.add(
          lanes.warpRow, b.add(lanes.quadRow, b.i32(m * kMmaM + half * 8))));
      for (int64_t n = 0; n < warpShape.nTiles; ++n) {
        Value pair = vector::ExtractOp::create(
            b, fragments[m * warpShape.nTiles + n], half);
        vector::StoreOp::create(b, arith::TruncFOp::create(b, pairType, pair),
                                tile, ValueRange{row, columns[n]},
                                /*nontemporal=*/false,
                                getVectorAlignment(2, shape.elementType));
      }
    }
}

void GradKernelBuilder::accumulateQueryGrad(const Lanes &lanes,
                                            Value scoresTile, Value keys,
                                            Value batch, Value head,
                                            Value firstQuery, Value seqQ) {
  // Each warp one m16 tile of the block's queries; where there are more
  // warps than those, the warps of a tile share out D's n8 tiles (every
  // warp over all the CTA's keys, so that each element takes one atomic a
  // CTA), else the keys.
  int64_t queryTiles = shape.blockN / kMmaM;
  int64_t warpsPerTile = shape.warps / queryTiles;
  // (Split by whole 16-column chunk pairs, where moveToChunkPairs moves
  // a warp's lanes to its first.)
  bool splitColumns =
      warpsPerTile > 1 && shape.dTiles % (2 * warpsPerTile) == 0;
  int64_t steps = shape.blockM / kMmaK / (splitColumns ? 1 : warpsPerTile);
  int64_t warpDTiles =
      splitColumns ? shape.dTiles / warpsPerTile : shape.dTiles;
  Value lane = b.urem(lanes.tid, b.i32(kThreadsPerWarp));
  Value warp = b.udiv(lanes.tid, b.i32(kThreadsPerWarp));
  Value queryTile = b.urem(warp, b.i32(queryTiles));
  Value tilePart = b.udiv(warp, b.i32(queryTiles));
  Value firstKeyRow =
      splitColumns ? b.i32(0) : b.mul(tilePart, b.i32(steps * kMmaK));
  // This warp's first n8 tile of D.
  Value firstWarpDTile =
      splitColumns ? b.mul(tilePart, b.i32(warpDTiles)) : b.i32(0);
  // dS as A, from dS^T [key][query] read transposed: matrices (q 0-7, k
  // 0-7), (q 8-15, k 0-7), (q 0-7, k 8-15), (q 8-15, k 8-15), lane l
  // addressing row l % 8 of matrix l / 8.
  Value matrix = b.udiv(lane, b.i32(8));
  Value keyRow = b.add(b.add(firstKeyRow, b.urem(lane, b.i32(8))),
                       b.mul(b.udiv(matrix, b.i32(2)), b.i32(8)));
  // (Swizzled by the lane's rows' phase, lane % 8.)
  Value queryColumn =
      b.mul(b.xor_(b.add(b.mul(queryTile, b.i32(2)), b.urem(matrix, b.i32(2))),
                   b.urem(lane, b.i32(kSwizzleRows))),
            b.i32(shape.chunkElements));
  SmallVector<Value> a;
  for (int64_t k = 0; k < steps; ++k)
    a.push_back(nvgpu::LdMatrixOp::create(
        b, VectorType::get({4, 2}, shape.elementType), scoresTile,
        ValueRange{b.toIndex(b.add(keyRow, b.i32(k * kMmaK))),
                   b.toIndex(queryColumn)},
        /*transpose=*/true, /*numTiles=*/4));
  // K's rows of this warp's steps: valueLanes moved down a multiple of 16
  // rows (the swizzle phase is the same).
  LaneMatrices keyLanes = lanes.valueLanes;
  keyLanes.row = b.add(keyLanes.row, firstKeyRow);
  // And this warp's column blocks of K.
  if (splitColumns)
    keyLanes = moveToChunkPairs(b, shape, keyLanes, tilePart, warpsPerTile,
                                warpDTiles / 2);
  // This warp's 16 queries, from the block's first; where they are all
  // within Sq, dQ goes to dq_accum in fragment order.
  Value firstTileQuery = b.mul(queryTile, b.i32(kMmaM));
  Value wholeTile =
      isWholeFragmentTile(b, b.add(b.word(firstQuery), firstTileQuery), seqQ);
  // The warp's 16 rows of dq_accum as one flat run (its rows are dense),
  // and each lane's place in it of its (half, e) elements of the first n8
  // tile of D it adds: the slices below add constants to those.
  // (Its rows are D apart: the op's contract, strides [?, ?, D, 1].)
  int64_t rowFloats =
      cast<MemRefType>(arg(kGradDqAccum).getType()).getDimSize(3);
  Value firstRow = b.add(firstQuery, b.toIndex(firstTileQuery));
  Value run = viewRun(b, arg(kGradDqAccum), {batch, head, firstRow, b.index(0)},
                      kMmaM * rowFloats);
  SmallVector<Value, 2> rowInSq;
  SmallVector<Value, 4> places;
  for (int64_t half = 0; half < 2; ++half) {
    Value tileRow = b.add(lanes.quadRow, b.i32(half * 8));
    rowInSq.push_back(b.slt(b.add(firstRow, b.toIndex(tileRow)), seqQ));
    for (int64_t e = 0; e < 2; ++e) {
      // Row-major in a tile that Sq cuts, else getFragmentPlace's.
      Value tileColumn = b.add(b.mul(lanes.quadCol, b.i32(2)), b.i32(e));
      auto [placeRow, placeColumn] = getFragmentPlace(b, tileRow, tileColumn);
      places.push_back(b.add(
          b.add(b.mul(b.select(wholeTile, placeRow, tileRow), b.i32(rowFloats)),
                b.select(wholeTile, placeColumn, tileColumn)),
          b.mul(firstWarpDTile, b.i32(kMmaN))));
    }
  }
  // Four d8 tiles (16 registers) at a time, each added as soon as it is
  // summed: dK and dV hold 128 registers at head dim 128.
  constexpr int64_t kSliceTiles = 4;
  for (int64_t first = 0; first < warpDTiles; first += kSliceTiles) {
    // The last slice up to D's tiles, in pairs (B fragments come two at a
    // time; past D the tile holds zeros) of which those within D are added.
    int64_t tiles =
        std::min<int64_t>(kSliceTiles, llvm::alignTo(warpDTiles - first, 2));
    SmallVector<Value> out = zeroAccumulators(tiles);
    mma.accumulateSlice(keyLanes, a, keys, first, out);
    for (int64_t half = 0; half < 2; ++half)
      scf::IfOp::create(b, rowInSq[half], [&](OpBuilder &, Location) {
        for (int64_t e = 0; e < 2; ++e)
          for (int64_t d = 0; d < tiles && first + d < warpDTiles; ++d)
            memref::AtomicRMWOp::create(
                b, arith::AtomicRMWKind::addf,
                vector::ExtractOp::create(b, out[d],
                                          ArrayRef<int64_t>{half, e}),
                run,
                b.toIndex(
                    b.add(places[half * 2 + e], b.i32((first + d) * kMmaN))));
        scf::YieldOp::create(b);
      });
  }
}

Value GradKernelBuilder::getSharedColumnTerms(Value parity) {
  Value offset = b.add(b.index(layout.termsOffset),
                       b.mul(parity, b.index(layout.termsBytes)));
  return getSharedView(b, {2, shape.blockN}, b.getF32Type(), offset);
}

void GradKernelBuilder::forEachBatch(llvm::function_ref<void(Value)> body) {
  auto batches = scf::ForOp::create(
      b, gpu::BlockIdOp::create(b, gpu::Dimension::z),
      memref::DimOp::create(b, arg(kGradQ), 0),
      gpu::GridDimOp::create(b, gpu::Dimension::z));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(batches.getBody());
  body(batches.getInductionVar());
  // A CTA that visited no block never waited for its first copies; the
  // next batch's copies go to the same tiles.
  copies.waitForAll();
}

SmallVector<Value> GradKernelBuilder::forEachStreamedBlock(
    Value count, ArrayRef<Value> accumulators,
    llvm::function_ref<void(Value, Value)> issue,
    llvm::function_ref<SmallVector<Value>(Value, Value, ValueRange,
                                          llvm::function_ref<void()>)>
        body) {
  Value zero = b.index(0), one = b.index(1);
  auto ifThen = [&](Value condition, llvm::function_ref<void()> then) {
    scf::IfOp::create(b, condition, [&](OpBuilder &, Location) {
      then();
      scf::YieldOp::create(b);
    });
  };
  ifThen(b.slt(zero, count), [&] { issue(zero, zero); });
  copies.commit();
  auto loop = scf::ForOp::create(b, zero, count, one, accumulators);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value block = loop.getInductionVar();
  Value parity = singleBuffered ? zero : b.urem(block, b.index(2));
  // Block n has landed, and every warp is done with block n - 1, whose
  // buffer block n + 1's copies now take (with one buffer, once block n's
  // reads are done).
  copies.waitForAll();
  Value next = b.add(block, one);
  auto issueNext = [&](Value nextParity) {
    ifThen(b.slt(next, count), [&] { issue(next, nextParity); });
    copies.commit();
  };
  if (!singleBuffered)
    issueNext(b.sub(one, parity));
  auto release = [&] {
    if (!singleBuffered)
      return;
    gpu::BarrierOp::create(b);
    issueNext(zero);
  };
  scf::YieldOp::create(b,
                       body(block, parity, loop.getRegionIterArgs(), release));
  return loop.getResults();
}

SmallVector<Value> GradKernelBuilder::zeroAccumulators(int64_t count) {
  Value zero = arith::ConstantOp::create(
      b,
      DenseElementsAttr::get(getAccumulatorType(b), b.getF32FloatAttr(0.0f)));
  return SmallVector<Value>(count, zero);
}

std::pair<Value, Value> GradKernelBuilder::loadRowTerms(Value batch,
                                                        Value head, Value row,
                                                        Value rows) {
  Value at = b.smin(row, b.sub(rows, b.index(1)));
  SmallVector<Value, 3> indices = {batch, head, at};
  Value lse = memref::LoadOp::create(b, arg(kGradLse), indices);
  Value delta = memref::LoadOp::create(b, arg(kGradDelta), indices);
  return {b.fmul(lse, b.f32(static_cast<float>(M_LOG2E))), delta};
}

std::pair<SmallVector<Value>, SmallVector<Value>>
GradKernelBuilder::computeGradScores(
    ArrayRef<Value> scores, ArrayRef<Value> gradProbs,
    llvm::function_ref<std::pair<Value, Value>(int64_t, int64_t, int64_t,
                                               int64_t)>
        rowTerms) {
  SmallVector<Value> probabilities, gradScores;
  Value scaleLog2 = b.f32(shape.scaleLog2);
  for (int64_t m = 0; m < warpShape.mTiles; ++m)
    for (int64_t n = 0; n < warpShape.nTiles; ++n) {
      Value score = scores[m * warpShape.nTiles + n];
      Value gradProb = gradProbs[m * warpShape.nTiles + n];
      SmallVector<Value, 4> p, ds;
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t e = 0; e < 2; ++e) {
          auto [lse2, delta] = rowTerms(m, n, half, e);
          SmallVector<int64_t, 2> at = {half, e};
          Value s = vector::ExtractOp::create(b, score, at);
          // A masked score is -inf: P = 0. So is one of a row that saw no
          // key in the forward (LSE +inf).
          Value probability = emitExp2(
              b, math::FmaOp::create(b, s, scaleLog2,
                                     arith::NegFOp::create(b, lse2)));
          Value dp = vector::ExtractOp::create(b, gradProb, at);
          p.push_back(probability);
          // With a softcap, S is the capped score: dS of the raw one is
          // the cap's slope times that of the capped.
          Value weight = shape.softcap
                             ? b.fmul(probability, shape.softcap->getSlope(b, s))
                             : probability;
          ds.push_back(b.fmul(weight, arith::SubFOp::create(b, dp, delta)));
        }
      probabilities.push_back(
          vector::FromElementsOp::create(b, getAccumulatorType(b), p));
      gradScores.push_back(
          vector::FromElementsOp::create(b, getAccumulatorType(b), ds));
    }
  return {probabilities, gradScores};
}

void GradKernelBuilder::storeRows(const Lanes &lanes,
                                  ArrayRef<Value> accumulators, float factor,
                                  Value global, Value batch, Value head,
                                  Value firstRow, Value rows) {
  auto pairType = VectorType::get({2}, shape.elementType);
  Value factorPair = vector::BroadcastOp::create(
      b, VectorType::get({2}, b.getF32Type()), b.f32(factor));
  Value laneColumn =
      b.add(b.mul(lanes.quadCol, b.i32(2)),
            b.mul(lanes.columnGroup, b.i32(gradShape.dTiles * kMmaN)));
  for (int64_t m = 0; m < gradShape.mTiles; ++m)
    for (int64_t half = 0; half < 2; ++half) {
      Value row = lanes.getRow(b, firstRow, m, half);
      scf::IfOp::create(b, b.slt(row, rows), [&](OpBuilder &, Location) {
        for (int64_t d = 0; d < gradShape.dTiles; ++d) {
          Value pair = vector::ExtractOp::create(
              b, accumulators[m * gradShape.dTiles + d], half);
          if (factor != 1.0f)
            pair = arith::MulFOp::create(b, pair, factorPair);
          Value column = b.toIndex(b.add(b.i32(d * kMmaN), laneColumn));
          vector::StoreOp::create(b, arith::TruncFOp::create(b, pairType, pair),
                                  global, ValueRange{batch, head, row, column},
                                  /*nontemporal=*/false,
                                  getVectorAlignment(2, shape.elementType));
        }
        scf::YieldOp::create(b);
      });
    }
}

/// Packs [mTile][nTile] accumulators as A fragments.
SmallVector<Value> packAccumulators(KernelBuilder &b, const KernelShape &shape,
                                    ArrayRef<Value> accumulators) {
  return packOperandA(b, shape, [&](int64_t m, int64_t n, int64_t half) {
    return Value(vector::ExtractOp::create(
        b, accumulators[m * shape.nTiles + n], half));
  });
}

void GradKernelBuilder::buildDq() {
  AttentionWindow window = AttentionWindow::get(op);
  Value queries = getSharedTile(0), gradOut = getSharedTile(1);
  Value threadId = b.word(gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  FragmentSoftmax masking(b, shape, window, threadId, Value());
  CtaCoordinates cta = CtaCoordinates::compute(b, arg(kGradQ), arg(kGradK),
                                               KeyRows(), shape.blockM);

  forEachBatch([&](Value batch) {
    TileCoordinates tile;
    tile.batchIndex = tile.outputBatch = batch;
    tile.seqQ = cta.seqQ;
    tile.seqK = cta.seqK;
    tile.firstRow = cta.firstRow;
    tile.head = cta.head;
    tile.kvHead = cta.kvHead;
    tile.computeRange(b, shape.blockM, shape.blockN, window);

    Lanes lanes = Lanes::derive(b, shape, threadId);
    copies.copyTile(lanes, tile, arg(kGradQ), tile.head, tile.firstRow,
                    tile.seqQ, queries, shape.blockM, /*bounded=*/true);
    copies.copyTile(lanes, tile, arg(kGradDout), tile.head, tile.firstRow,
                    tile.seqQ, gradOut, shape.blockM, /*bounded=*/true);
    // [m][half]: the rows this lane holds.
    SmallVector<std::pair<Value, Value>> rowTerms;
    for (int64_t m = 0; m < shape.mTiles; ++m)
      for (int64_t half = 0; half < 2; ++half)
        rowTerms.push_back(loadRowTerms(batch, tile.head,
                                        lanes.getRow(b, tile.firstRow, m, half),
                                        tile.seqQ));

    Value firstBlock = tile.range.firstBlock;
    Value count = b.smax(b.sub(tile.range.lastBlockEnd, firstBlock),
                         b.index(0));
    Value unmaskedBegin = b.word(tile.range.unmaskedBegin);
    Value unmaskedEnd = b.word(tile.range.unmaskedEnd);
    auto blockLanes = [&] {
      return Lanes::derive(b, shape, hideFromHoisting(b, threadId));
    };
    SmallVector<Value> gradQuery = forEachStreamedBlock(
        count, zeroAccumulators(shape.mTiles * shape.dTiles),
        [&](Value block, Value parity) {
          Lanes copyLanes = blockLanes();
          Value keyBlock = b.word(b.add(firstBlock, block));
          copies.copyKeyBlock(copyLanes, tile, arg(kGradK),
                              getStreamedTile(0, parity), keyBlock,
                              /*bounded=*/true);
          copies.copyKeyBlock(copyLanes, tile, arg(kGradV),
                              getStreamedTile(1, parity), keyBlock,
                              /*bounded=*/true);
        },
        [&](Value block, Value parity, ValueRange carried,
            llvm::function_ref<void()> release) {
          Lanes l = blockLanes();
          Value keys = getStreamedTile(0, parity);
          Value values = getStreamedTile(1, parity);
          SmallVector<Value> scores = mma.multiplyTransposed(l, queries, keys);
          if (shape.softcap)
            shape.softcap->apply(b, scores);
          // Only the key blocks at the diagonal, a window's edges or past
          // Sk need the mask.
          Value keyBlock = b.add(firstBlock, block);
          scores = maskWhere(
              b, isMaskedBlock(b, b.word(keyBlock), unmaskedBegin, unmaskedEnd),
              scores, [&](SmallVectorImpl<Value> &hidden) {
                masking.applyMask(l, tile, hidden,
                                  b.mul(keyBlock, b.index(shape.blockN)));
              });
          SmallVector<Value> gradProbs =
              mma.multiplyTransposed(l, gradOut, values);
          auto [probabilities, gradScores] = computeGradScores(
              scores, gradProbs, [&](int64_t m, int64_t, int64_t half,
                                     int64_t) { return rowTerms[m * 2 + half]; });
          SmallVector<Value> accumulators(carried);
          mma.accumulateProduct(l, packAccumulators(b, shape, gradScores),
                                keys, accumulators);
          release();
          return accumulators;
        });
    storeRows(blockLanes(), gradQuery, shape.scale, arg(kGradDq), batch,
              tile.head, tile.firstRow, tile.seqQ);
  });
}

void GradKernelBuilder::buildDkv(AttentionGradKernel kernel) {
  bool withKey = kernel != AttentionGradKernel::Dv;
  bool withValue = kernel != AttentionGradKernel::Dk;
  // Keys are the rows here: the mask and the block range of the forward,
  // over the transposed window (AttentionWindow::transposed).
  AttentionWindow window = AttentionWindow::get(op).transposed();
  Value keys = getSharedTile(0), values = getSharedTile(1);
  Value threadId = b.word(gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  FragmentSoftmax masking(b, warpShape, window, threadId, Value());
  Value seqQ = memref::DimOp::create(b, arg(kGradQ), 2);
  Value seqK = memref::DimOp::create(b, arg(kGradK), 2);
  Value kvHead = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value group = b.udiv(memref::DimOp::create(b, arg(kGradQ), 1),
                       memref::DimOp::create(b, arg(kGradK), 1));
  Value firstKey = b.mul(gpu::BlockIdOp::create(b, gpu::Dimension::x),
                         b.index(shape.blockM));

  forEachBatch([&](Value batch) {
    // The tile as the forward's code sees it: rows are keys, the "keys"
    // are queries, and the diagonal is Sq - Sk.
    TileCoordinates tile;
    tile.batchIndex = tile.outputBatch = batch;
    tile.seqQ = seqK;
    tile.seqK = seqQ;
    tile.firstRow = firstKey;
    tile.head = kvHead;
    tile.computeRange(b, shape.blockM, shape.blockN, window);

    // With dq_accum, values the loops would hold are derived anew where
    // they are used: hoisted, a lane value of these and the LSE's and
    // delta's row pointers stayed live across the loops and spilled. (The
    // deterministic kernels keep them: there hiding them changed ptxas's
    // schedule of the head dim 256 kernels, 0.94-1.04 of their rates.)
    auto fresh = [&](Value value) {
      return op.getDqAccum() ? hideFromHoisting(b, value) : value;
    };
    Lanes lanes = Lanes::derive(b, shape, fresh(threadId));
    copies.copyTile(lanes, tile, arg(kGradK), kvHead, firstKey, seqK, keys,
                    shape.blockM, /*bounded=*/true);
    copies.copyTile(lanes, tile, arg(kGradV), kvHead, firstKey, seqK, values,
                    shape.blockM, /*bounded=*/true);

    // One loop over the query blocks of every query head of the group, so
    // that the next block's copies cross from one head to the next.
    Value firstBlock = tile.range.firstBlock;
    Value blocks = b.smax(b.sub(tile.range.lastBlockEnd, firstBlock),
                          b.index(0));
    // In 32 bits (blocks, heads and queries fit: checked by the JIT),
    // which takes half the registers held across the loop. A step is
    // divided by the blocks a head by a multiply-high where the warps are
    // one column (1-4% faster, backward-notes v40); over the grid of warps
    // by the division, whose quotient ptxas keeps in uniform registers
    // (there the multiply-high cost 2-4%).
    Value safeBlocks = b.word(b.umax(blocks, b.index(1)));
    std::optional<InvariantDivisor> blocksPerHead;
    if (columnWarps == 1)
      blocksPerHead = InvariantDivisor::get(b, safeBlocks);
    Value firstHead = b.word(b.mul(kvHead, group));
    Value firstBlockWord = b.word(firstBlock);
    Value unmaskedBegin = b.word(tile.range.unmaskedBegin);
    Value unmaskedEnd = b.word(tile.range.unmaskedEnd);
    auto locate = [&](Value step) {
      Value stepWord = b.word(step);
      Value quotient = blocksPerHead ? blocksPerHead->divide(b, stepWord)
                                     : b.udiv(stepWord, safeBlocks);
      Value head = b.toIndex(b.add(firstHead, quotient));
      Value index = blocksPerHead
                        ? blocksPerHead->remainder(b, stepWord, quotient)
                        : b.urem(stepWord, safeBlocks);
      Value firstQuery =
          b.toIndex(b.mul(b.add(firstBlockWord, index), b.i32(shape.blockN)));
      return std::pair{head, firstQuery};
    };
    auto blockLanes = [&] {
      return Lanes::derive(b, shape, hideFromHoisting(b, threadId));
    };
    // A warp's place in the grid of warps (the copies' lanes are any).
    auto warpLanes = [&] {
      return Lanes::derive(b, warpShape, hideFromHoisting(b, threadId),
                           columnWarps);
    };
    // And in dK's and dV's.
    auto gradLanes = [&] {
      return Lanes::derive(b, gradShape, hideFromHoisting(b, threadId),
                           gradColumnWarps);
    };
    int64_t count = gradShape.mTiles * gradShape.dTiles;
    SmallVector<Value> gradients = forEachStreamedBlock(
        b.mul(blocks, group),
        zeroAccumulators((int64_t(withKey) + int64_t(withValue)) * count),
        [&](Value step, Value parity) {
          auto [head, firstQuery] = locate(step);
          Lanes copyLanes = blockLanes();
          copies.copyTile(copyLanes, tile, arg(kGradQ), head, firstQuery,
                          seqQ, getStreamedTile(0, parity), shape.blockN,
                          /*bounded=*/true);
          copies.copyTile(copyLanes, tile, arg(kGradDout), head, firstQuery,
                          seqQ, getStreamedTile(1, parity), shape.blockN,
                          /*bounded=*/true);
          // The block's LSE and delta to shared memory, one query a thread,
          // by cp.async as the tiles (a load and a store would hold the
          // thread for the load's latency): each lane reads 2 x 16 of them
          // where they are needed, rather than holding them across the
          // GEMMs. Rows past Sq read zeros; their scores are masked.
          Value terms = getSharedColumnTerms(parity);
          Value tid = b.toIndex(copyLanes.tid);
          scf::IfOp::create(
              b, b.slt(tid, b.index(shape.blockN)), [&](OpBuilder &, Location) {
                Value query = b.add(firstQuery, tid);
                Value inBounds = b.slt(query, seqQ);
                SmallVector<Value, 3> at = {
                    fresh(batch), head, b.select(inBounds, query, b.index(0))};
                copies.copyElement(arg(kGradLse), at, terms, {b.index(0), tid},
                                   inBounds);
                copies.copyElement(arg(kGradDelta), at, terms,
                                   {b.index(1), tid}, inBounds);
                scf::YieldOp::create(b);
              });
        },
        [&](Value step, Value parity, ValueRange carried,
            llvm::function_ref<void()> release) {
          Lanes l = warpLanes();
          Value queries = getStreamedTile(0, parity);
          Value gradOut = getStreamedTile(1, parity);
          Value terms = getSharedColumnTerms(parity);
          Value firstQuery = locate(step).second;
          // This warp's first query column of the block.
          Value warpColumn = b.mul(l.columnGroup, b.i32(warpShape.blockN));
          SmallVector<Value> scores = mma.multiplyTransposed(l, keys, queries);
          if (shape.softcap)
            shape.softcap->apply(b, scores);
          // Only the query blocks at the diagonal, a window's edges or
          // past Sq need the mask.
          Value queryBlock =
              b.udiv(b.word(firstQuery), b.i32(shape.blockN));
          scores = maskWhere(
              b, isMaskedBlock(b, queryBlock, unmaskedBegin, unmaskedEnd),
              scores, [&](SmallVectorImpl<Value> &hidden) {
                masking.applyMask(l, tile, hidden,
                                  b.add(firstQuery, b.toIndex(warpColumn)));
              });
          // dv alone needs no dP^T: the dS^T computed from S^T in its
          // place is never used, and goes.
          SmallVector<Value> gradProbs =
              withKey ? mma.multiplyTransposed(l, values, gradOut) : scores;
          // The columns this lane holds: 2t and 2t + 1 of each n8 tile.
          Value laneColumn = b.add(b.mul(l.quadCol, b.i32(2)), warpColumn);
          auto [probabilities, gradScores] = computeGradScores(
              scores, gradProbs, [&](int64_t, int64_t n, int64_t, int64_t e) {
                Value column =
                    b.toIndex(b.add(laneColumn, b.i32(n * kMmaN + e)));
                auto load = [&](int64_t which) -> Value {
                  return memref::LoadOp::create(
                      b, terms, ValueRange{b.index(which), column});
                };
                // (log2e here: scaling the landed copies in shared
                // memory before the block's barrier made ptxas spill.)
                return std::pair{
                    b.fmul(load(0), b.f32(static_cast<float>(M_LOG2E))),
                    load(1)};
              });
          Value scoresTile =
              op.getDqAccum() ? getSharedGradScores() : Value();
          if (scoresTile)
            storeTransposedScores(l, gradScores, scoresTile);
          // dK's accumulators first, then dV's, of those the kernel has.
          SmallVector<Value> gradKey(carried.begin(),
                                     carried.begin() + (withKey ? count : 0));
          SmallVector<Value> gradValue(carried.begin() + gradKey.size(),
                                       carried.end());
          if (columnWarps > 1) {
            // dV += P^T dO and dK += dS^T Q over every query of the block:
            // P^T and dS^T of the other column's warps from shared memory.
            Value probabilitiesTile = getSharedProbabilities();
            storeTransposedScores(l, probabilities, probabilitiesTile);
            gpu::BarrierOp::create(b);
            int64_t kSteps = shape.blockN / kMmaK;
            Lanes gl = gradColumnWarps == columnWarps ? l : gradLanes();
            auto accumulate = [&](Value aTile, Value bTile,
                                  SmallVectorImpl<Value> &out) {
              mma.accumulate(mma.loadOperandA(aTile, gl.queryLanes,
                                              gradShape.mTiles, kSteps),
                             kSteps, gl.valueLanes, bTile, 0, gradShape.dTiles,
                             out);
            };
            if (withValue)
              accumulate(probabilitiesTile, gradOut, gradValue);
            if (withKey)
              accumulate(scoresTile, queries, gradKey);
          } else {
            if (withValue)
              mma.accumulateProduct(l,
                                    packAccumulators(b, shape, probabilities),
                                    gradOut, gradValue);
            if (withKey)
              mma.accumulateProduct(l, packAccumulators(b, shape, gradScores),
                                    queries, gradKey);
            // Every warp's dS^T is in shared memory.
            if (scoresTile)
              gpu::BarrierOp::create(b);
          }
          // Q and dO are read; dS^T and K stay for dQ.
          release();
          if (scoresTile) {
            auto [head, first] = locate(step);
            accumulateQueryGrad(blockLanes(), scoresTile, keys, batch, head,
                                first, seqQ);
          }
          llvm::append_range(gradKey, gradValue);
          return gradKey;
        });
    Lanes storeLanes = gradLanes();
    ArrayRef<Value> all(gradients);
    if (withKey)
      storeRows(storeLanes, all.take_front(count), shape.scale, arg(kGradDk),
                batch, kvHead, firstKey, seqK);
    if (withValue)
      storeRows(storeLanes, all.take_back(count), 1.0f, arg(kGradDv), batch,
                kvHead, firstKey, seqK);
  });
}

} // namespace

LogicalResult fmha::lowerAttentionGradToGPU(AttentionGradOp op,
                                            gpu::GPUModuleOp kernels,
                                            Chip chip) {
  for (Value operand : op->getOperands()) {
    auto type = cast<MemRefType>(operand.getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (type.getRank() == 4 &&
        (failed(type.getStridesAndOffset(strides, offset)) ||
         strides.back() != 1))
      return op.emitOpError("needs q, k, v, o, dout, dq, dk and dv dense "
                            "along the head dimension (innermost stride 1), "
                            "got ")
             << type;
  }
  // The mma.sync kernels keep one count of n8 tiles for dQ, dK and dV; the
  // WGMMA kernel's tiles hold both head dims.
  if (op.getValueHeadDim() != op.getHeadDim() &&
      (!op.getDqAccum() || chip != Chip::sm_90a))
    return op.emitOpError("v's head dim ")
           << op.getValueHeadDim() << " apart from q's " << op.getHeadDim()
           << " needs dq_accum and chip sm_90a (the WGMMA kernel), got "
           << (op.getDqAccum() ? "" : "no dq_accum, ") << "chip "
           << stringifyChip(chip);
  // The mma.sync dk/dv kernel holds dK and dV of its keys over all of D in
  // registers and its tiles in shared memory: past 128, at the multiples
  // of 32 only (isSm80OnePassGradHeadDim).
  if (op.getDqAccum() && chip != Chip::sm_90a &&
      !isSm80OnePassGradHeadDim(op.getHeadDim()))
    return op.emitOpError("dq_accum at head dim ")
           << op.getHeadDim() << " needs chip sm_90a, got "
           << stringifyChip(chip)
           << " (whose kernel takes head dims up to 128, 160, 192, 224 and "
              "256; without dq_accum the deterministic kernels run)";
  // The mma.sync kernel adds dq by f32 atomics from every thread: nothing
  // orders one block's adds after another's.
  if (op.getDqOrder() && chip != Chip::sm_90a)
    return op.emitOpError("dq_order needs chip sm_90a (its kernel adds a "
                          "block's dq with one bulk reduce that a counter can "
                          "order), got ")
           << stringifyChip(chip)
           << "; without dq_accum the backward is deterministic on every chip";
  // Only the WGMMA kernel walks a slice of a group's query heads.
  if (op.getDkvPartial() && chip != Chip::sm_90a)
    return op.emitOpError("dkv_partial needs chip sm_90a (its one-pass "
                          "kernel slices a group's query heads), got ")
           << stringifyChip(chip);
  auto create = [&](StringRef name, int64_t threads, int64_t sharedBytes,
                    std::array<GridAxis, 3> grid) {
    return createKernelFunc(
        op, kernels, name,
        getGradLaunchContract(op, threads, sharedBytes, grid));
  };
  auto build = [&](gpu::GPUFuncOp func,
                   llvm::function_ref<void(KernelBuilder &)> body) {
    KernelBuilder b(op.getLoc(), op.getContext());
    b.setInsertionPointToStart(&func.getBody().front());
    body(b);
    gpu::ReturnOp::create(b);
  };

  // Each kernel of the shared list, created in its launch order.
  auto createMain = [&](AttentionGradKernel kernel) {
    Sm80GradTiling tiling = getGradTiling(op);
    AttentionGradOperand rowsOperand =
        kernel == AttentionGradKernel::Dq ? kGradQ : kGradK;
    gpu::GPUFuncOp func = create(
        getAttentionGradKernelName(kernel), tiling.warps * kThreadsPerWarp,
        getGradSharedLayout(op, tiling).totalBytes,
        {GridAxis{{{rowsOperand, 2, static_cast<uint64_t>(tiling.rows)}}},
         GridAxis{{{rowsOperand, 1}}},
         GridAxis{{{rowsOperand, 0}}, kMaxGridDimY}});
    build(func, [&](KernelBuilder &b) {
      GradKernelBuilder builder(op, tiling, func, b);
      if (kernel == AttentionGradKernel::Dq)
        builder.buildDq();
      else
        builder.buildDkv(kernel);
    });
    return func;
  };
  // Delta and dq's conversion: \p lanes per row (getRowLanes).
  auto createRowKernel = [&](AttentionGradKernel kernel,
                             AttentionGradOperand rowsOperand, int64_t lanes) {
    uint64_t rows = getRowKernelRows(lanes);
    return create(
        getAttentionGradKernelName(kernel), kRowKernelWarps * kThreadsPerWarp,
        0,
        {GridAxis{{{rowsOperand, 2, rows}, {rowsOperand, 1}, {rowsOperand, 0}},
                  kMaxGridDimX},
         GridAxis{}, GridAxis{}});
  };
  bool dkvSm90a = op.getDqAccum() && chip == Chip::sm_90a;
  SmallVector<gpu::GPUFuncOp> funcs;
  for (AttentionGradKernel kernel : getAttentionGradKernels(
           op.getHeadDim(), bool(op.getDqAccum()), bool(op.getDkvPartial()))) {
    gpu::GPUFuncOp func;
    switch (kernel) {
    case AttentionGradKernel::Delta:
      func = createRowKernel(kernel, kGradO, getDeltaLanes(op));
      build(func, [&](KernelBuilder &b) { buildDeltaKernel(op, func, b); });
      break;
    case AttentionGradKernel::DqConvert:
      func = createRowKernel(kernel, kGradQ, getRowLanes(op.getHeadDim()));
      build(func, [&](KernelBuilder &b) {
        buildConvertKernel(op, func, b, dkvSm90a);
      });
      break;
    case AttentionGradKernel::DkvReduce:
      func = createRowKernel(
          kernel, kGradDk,
          getRowLanes(std::max(op.getHeadDim(), op.getValueHeadDim())));
      build(func, [&](KernelBuilder &b) { buildDkvReduceKernel(op, func, b); });
      break;
    case AttentionGradKernel::Dkv:
      func = dkvSm90a ? createAttentionGradDkvSm90a(op, kernels)
                      : createMain(kernel);
      break;
    case AttentionGradKernel::Dq:
    case AttentionGradKernel::Dk:
    case AttentionGradKernel::Dv:
      func = createMain(kernel);
      break;
    }
    funcs.push_back(func);
  }
  // The device's shared memory (max_shared_bytes): the main kernels took a
  // tiling that fits it where sm_80's has one (getSm80GradTiling); a kernel
  // still past it would fail at load, so it is refused here, by name.
  if (std::optional<uint64_t> most = op.getMaxSharedBytes())
    for (gpu::GPUFuncOp func : funcs) {
      uint64_t bytes = getLaunchContract(func).sharedBytes;
      if (bytes > *most) {
        InFlightDiagnostic error =
            op.emitOpError("max_shared_bytes is ")
            << *most << ", but kernel " << func.getName() << " on chip "
            << stringifyChip(chip) << " takes " << bytes
            << " bytes of shared memory a block at head dim "
            << op.getHeadDim();
        if (op.getDqAccum())
          error << "; without dq_accum the deterministic kernels fit";
        for (gpu::GPUFuncOp created : funcs)
          created.erase();
        return error;
      }
    }
  replaceByLaunches(op, funcs);
  return success();
}
