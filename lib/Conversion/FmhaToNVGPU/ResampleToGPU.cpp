//===- ResampleToGPU.cpp - fmha.resample as a gpu.func
//---------------------===//
//
// Part of FlashCore. Lowers fmha.resample to one kernel plus a
// gpu.launch_func in its place.
//
// Kernel ABI: the parameters are the op's memref operands in order (times
// of each stream, values of each stream, lengths of each stream if any,
// targets, out), each passed as an MLIR memref descriptor (allocated and
// aligned pointer, offset, sizes, strides). Grid: (ceil(T / block_t),
// min(B, 65535), 1), rows striding by the grid's y extent; block:
// (threads, 1, 1).
//
// Each CTA resamples block_t consecutive targets of one row. For each stream
// it copies the row's times to shared memory when they fit, then finds, once
// per target, the two samples and the weight the target needs (one thread per
// target, a binary search over the row's valid samples), keeping them in
// shared memory; then all threads read the samples'
// features, consecutive threads consecutive 16-byte chunks (coalesced
// ld/st.global.v4 where rows are dense and D a multiple of 16 bytes, scalar
// otherwise), and write the output. The semantics, including the edge rules,
// are those of kernels-ref/resample.cu, computed the same way (f32, one fma),
// so the results match the reference.
//
//===----------------------------------------------------------------------===//

#include "FmhaToNVGPU.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::fmha;

namespace {

/// Marks "no valid sample in this row: write zeros" in the first-index slot.
constexpr int32_t kNoSample = -1;
/// The widest global access, ld/st.global.v4.b32 (KERNELS.md section 4).
constexpr int64_t kVectorBytes = 16;
/// Rows of up to this many samples are searched in shared memory (8 KB):
/// one coalesced read instead of ~11 dependent global loads per target.
/// Longer rows are searched in global memory.
constexpr int64_t kStagedTimes = 2048;

/// Builds the body of one resample kernel.
class ResampleKernelBuilder {
public:
  ResampleKernelBuilder(ResampleOp op, ResampleTileAttr tile,
                        gpu::GPUFuncOp func, ImplicitLocOpBuilder &b)
      : op(op), tile(tile), func(func), b(b) {}

  void build() {
    unsigned streams = op.getNumStreams();
    bool withLengths = !op.getLengths().empty();
    Value targets = func.getArgument(streams * (withLengths ? 3 : 2));
    Value out = func.getArgument(streams * (withLengths ? 3 : 2) + 1);
    ArrayRef<BlockArgument> shared = func.getWorkgroupAttributions();
    Value firstIndex = shared[0], secondIndex = shared[1], weight = shared[2];
    stagedTimes = shared[3];

    tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value blockT = constantIndex(tile.getBlockT());
    firstTarget = arith::MulIOp::create(
        b, gpu::BlockIdOp::create(b, gpu::Dimension::x), blockT);
    Value numTargets = memref::DimOp::create(b, targets, 1);
    // Targets of this CTA: min(block_t, T - firstTarget).
    Value local = arith::MinUIOp::create(
        b, blockT, arith::SubIOp::create(b, numTargets, firstTarget));

    // Rows stride by the grid's y extent, which is at most 65535: any batch
    // size is covered.
    Value batch = memref::DimOp::create(b, targets, 0);
    auto rows =
        scf::ForOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::y),
                           batch, gpu::GridDimOp::create(b, gpu::Dimension::y));
    b.setInsertionPointToStart(rows.getBody());
    row = rows.getInductionVar();

    int64_t featureOffset = 0;
    for (unsigned s = 0; s < streams; ++s) {
      Value times = func.getArgument(s);
      Value values = func.getArgument(streams + s);
      Value samples = memref::DimOp::create(b, times, 1);
      Value valid = samples;
      if (withLengths) {
        Value length = memref::LoadOp::create(
            b, func.getArgument(2 * streams + s), ValueRange{row});
        // clamp(lengths[b], 0, S), as the reference does.
        Value asIndex = arith::IndexCastOp::create(
            b, b.getIndexType(),
            arith::MaxSIOp::create(b, length,
                                   arith::ConstantIntOp::create(b, 0, 32)));
        valid = arith::MinUIOp::create(b, asIndex, samples);
      }

      // Phase 0: rows that fit are copied to shared memory (one coalesced
      // read), so that the searches below do not chain global loads.
      currentTimes = times;
      timesStaged = arith::CmpIOp::create(b, arith::CmpIPredicate::ule, valid,
                                          constantIndex(kStagedTimes));
      scf::IfOp::create(b, timesStaged, [&](OpBuilder &builder, Location loc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(builder.getInsertionBlock(),
                            builder.getInsertionPoint());
        forEachThreadItem(valid, [&](Value j) {
          Value time = memref::LoadOp::create(b, times, ValueRange{row, j});
          memref::StoreOp::create(b, time, stagedTimes, ValueRange{j});
        });
        scf::YieldOp::create(b);
      });
      gpu::BarrierOp::create(b);

      // Phase 1: one thread per target finds its samples and weight.
      forEachThreadItem(local, [&](Value t) {
        Value target = memref::LoadOp::create(
            b, targets,
            ValueRange{row, arith::AddIOp::create(b, firstTarget, t)});
        storeInterval(valid, target, t, firstIndex, secondIndex, weight);
      });
      gpu::BarrierOp::create(b);

      // Phase 2: every thread interpolates features, 16 bytes at a time
      // where the layout allows it.
      auto valuesType = cast<MemRefType>(values.getType());
      int64_t features = valuesType.getDimSize(2);
      Type elementType = cast<MemRefType>(out.getType()).getElementType();
      int64_t width = getVectorWidth(valuesType, featureOffset);
      Value chunksPerTarget = constantIndex(features / width);
      Value items = arith::MulIOp::create(b, local, chunksPerTarget);
      forEachThreadItem(items, [&](Value item) {
        Value t = arith::DivUIOp::create(b, item, chunksPerTarget);
        Value feature = arith::MulIOp::create(
            b, arith::RemUIOp::create(b, item, chunksPerTarget),
            constantIndex(width));
        Value result = interpolate(values, t, feature, width, elementType,
                                   firstIndex, secondIndex, weight);
        Value column =
            arith::AddIOp::create(b, feature, constantIndex(featureOffset));
        // Owned storage: a ValueRange over a braced list would dangle.
        SmallVector<Value, 3> at = {
            row, arith::AddIOp::create(b, firstTarget, t), column};
        if (width == 1)
          memref::StoreOp::create(b, result, out, at);
        else
          vector::StoreOp::create(b, result, out, at, /*nontemporal=*/false,
                                  llvm::MaybeAlign(kVectorBytes));
      });
      // The next stream reuses the shared buffers.
      gpu::BarrierOp::create(b);
      featureOffset += features;
    }
    b.setInsertionPointAfter(rows);
    gpu::ReturnOp::create(b);
  }

private:
  /// Elements per access: 16 bytes' worth when every access of the stream is
  /// 16-byte aligned (dense rows of values and out, D and the output offset
  /// multiples of the width), else 1.
  int64_t getVectorWidth(MemRefType valuesType, int64_t featureOffset) {
    auto outType = cast<MemRefType>(op.getOut().getType());
    int64_t elementBytes = valuesType.getElementTypeBitWidth() / 8;
    int64_t width = kVectorBytes / elementBytes;
    bool aligned = valuesType.getLayout().isIdentity() &&
                   outType.getLayout().isIdentity() &&
                   valuesType.getDimSize(2) % width == 0 &&
                   outType.getDimSize(2) % width == 0 &&
                   featureOffset % width == 0;
    return aligned ? width : 1;
  }

  /// The value of target slot `t` at features [feature, feature + width):
  /// zeros for a row without samples, else v0 + w * (v1 - v0) in f32.
  Value interpolate(Value values, Value t, Value feature, int64_t width,
                    Type elementType, Value firstIndex, Value secondIndex,
                    Value weight) {
    Type resultType =
        width == 1 ? elementType : VectorType::get({width}, elementType);
    Value first = memref::LoadOp::create(b, firstIndex, ValueRange{t});
    Value noSample =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, first,
                              arith::ConstantIntOp::create(b, kNoSample, 32));
    auto choice = scf::IfOp::create(
        b, noSample,
        [&](OpBuilder &builder, Location loc) {
          Value zero = arith::ConstantOp::create(
              builder, loc, builder.getZeroAttr(resultType));
          scf::YieldOp::create(builder, loc, zero);
        },
        [&](OpBuilder &builder, Location loc) {
          ImplicitLocOpBuilder nb(loc, builder);
          Value second = memref::LoadOp::create(nb, secondIndex, ValueRange{t});
          Value w = memref::LoadOp::create(nb, weight, ValueRange{t});
          auto sampleAt = [&](Value index) -> Value {
            Value i = arith::IndexCastOp::create(nb, nb.getIndexType(), index);
            SmallVector<Value, 3> at = {row, i, feature};
            if (width == 1)
              return toF32(nb, memref::LoadOp::create(nb, values, at));
            return toF32(nb, vector::LoadOp::create(
                                 nb, cast<VectorType>(resultType), values, at,
                                 /*nontemporal=*/false,
                                 llvm::MaybeAlign(kVectorBytes)));
          };
          Value v0 = sampleAt(first), v1 = sampleAt(second);
          if (width > 1)
            w = vector::BroadcastOp::create(nb, v0.getType(), w);
          Value difference = arith::SubFOp::create(nb, v1, v0);
          Value mixed = math::FmaOp::create(nb, w, difference, v0);
          scf::YieldOp::create(nb, fromF32(nb, mixed, resultType));
        });
    return choice.getResult(0);
  }

  Value constantIndex(int64_t value) {
    return arith::ConstantIndexOp::create(b, value);
  }

  /// Emits `for (i = tid; i < count; i += threads) body(i)`.
  void forEachThreadItem(Value count, function_ref<void(Value)> body) {
    Value step = gpu::BlockDimOp::create(b, gpu::Dimension::x);
    auto loop = scf::ForOp::create(b, tid, count, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }

  /// times[row, index] of the current stream, from shared memory when the
  /// row was staged there.
  Value loadTime(OpBuilder &builder, Location loc, Value index) {
    auto choice = scf::IfOp::create(
        builder, loc, timesStaged,
        [&](OpBuilder &nb, Location l) {
          scf::YieldOp::create(nb, l,
                               ValueRange{memref::LoadOp::create(
                                   nb, l, stagedTimes, ValueRange{index})});
        },
        [&](OpBuilder &nb, Location l) {
          scf::YieldOp::create(
              nb, l,
              ValueRange{memref::LoadOp::create(nb, l, currentTimes,
                                                ValueRange{row, index})});
        });
    return choice.getResult(0);
  }

  /// The number of samples among the current stream's times[row, 0:n) at or
  /// before `target`.
  Value countAtOrBefore(Value n, Value target) {
    Value zero = constantIndex(0), one = constantIndex(1);
    auto search = scf::WhileOp::create(
        b, TypeRange{b.getIndexType(), b.getIndexType()}, ValueRange{zero, n},
        [&](OpBuilder &builder, Location loc, ValueRange bounds) {
          Value open = arith::CmpIOp::create(
              builder, loc, arith::CmpIPredicate::ult, bounds[0], bounds[1]);
          scf::ConditionOp::create(builder, loc, open, bounds);
        },
        [&](OpBuilder &builder, Location loc, ValueRange bounds) {
          ImplicitLocOpBuilder nb(loc, builder);
          Value sum = arith::AddIOp::create(nb, bounds[0], bounds[1]);
          Value mid = arith::ShRUIOp::create(nb, sum, one);
          Value time = loadTime(nb, loc, mid);
          Value atOrBefore = arith::CmpFOp::create(
              nb, arith::CmpFPredicate::OLE, time, target);
          Value low = arith::SelectOp::create(
              nb, atOrBefore, arith::AddIOp::create(nb, mid, one), bounds[0]);
          Value high = arith::SelectOp::create(nb, atOrBefore, bounds[1], mid);
          scf::YieldOp::create(nb, ValueRange{low, high});
        });
    return search.getResult(0);
  }

  /// Stores, for target slot `t`, the two sample indices and the weight
  /// that the mode asks for (kernels-ref/resample.cu's rules).
  void storeInterval(Value valid, Value target, Value t, Value firstIndex,
                     Value secondIndex, Value weight) {
    Type i32 = b.getI32Type();
    Value zero = constantIndex(0), one = constantIndex(1);
    Value zeroF =
        arith::ConstantFloatOp::create(b, b.getF32Type(), APFloat(0.0f));
    Value count = countAtOrBefore(valid, target);
    Value empty =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, valid, zero);
    Value before =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, count, zero);
    Value after =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, count, valid);
    Value last =
        arith::SubIOp::create(b, arith::MaxUIOp::create(b, valid, one), one);
    // Inside: i = count - 1 (clamped so the loads below stay in bounds
    // on the edge paths, whose results are then discarded).
    Value i = arith::MinUIOp::create(
        b, arith::SubIOp::create(b, arith::MaxUIOp::create(b, count, one), one),
        last);
    Value next =
        arith::MinUIOp::create(b, arith::AddIOp::create(b, i, one), last);
    Value t0 = loadTime(b, b.getLoc(), i);
    Value t1 = loadTime(b, b.getLoc(), next);

    Value first, second, w;
    switch (op.getMode()) {
    case ResampleMode::previous:
      first = second = i;
      w = zeroF;
      break;
    case ResampleMode::nearest: {
      Value toPrevious = arith::SubFOp::create(b, target, t0);
      Value toNext = arith::SubFOp::create(b, t1, target);
      Value takePrevious = arith::CmpFOp::create(b, arith::CmpFPredicate::OLE,
                                                 toPrevious, toNext);
      first = second = arith::SelectOp::create(b, takePrevious, i, next);
      w = zeroF;
      break;
    }
    case ResampleMode::linear:
      first = i;
      second = next;
      w = arith::DivFOp::create(b, arith::SubFOp::create(b, target, t0),
                                arith::SubFOp::create(b, t1, t0));
      break;
    }
    // Edges: before the first sample take it, after the last take it.
    Value edge = arith::SelectOp::create(b, before, zero, last);
    Value onEdge = arith::OrIOp::create(b, before, after);
    first = arith::SelectOp::create(b, onEdge, edge, first);
    second = arith::SelectOp::create(b, onEdge, edge, second);
    w = arith::SelectOp::create(b, onEdge, zeroF, w);
    Value firstI32 = arith::SelectOp::create(
        b, empty, arith::ConstantIntOp::create(b, kNoSample, 32),
        arith::IndexCastOp::create(b, i32, first));
    memref::StoreOp::create(b, firstI32, firstIndex, ValueRange{t});
    memref::StoreOp::create(b, arith::IndexCastOp::create(b, i32, second),
                            secondIndex, ValueRange{t});
    memref::StoreOp::create(b, w, weight, ValueRange{t});
  }

  /// Extends a scalar or vector of 16-bit floats to f32.
  static Value toF32(ImplicitLocOpBuilder &nb, Value value) {
    Type f32 = nb.getF32Type();
    if (auto vector = dyn_cast<VectorType>(value.getType()))
      f32 = vector.clone(f32);
    if (value.getType() == f32)
      return value;
    return arith::ExtFOp::create(nb, f32, value);
  }

  /// Rounds a scalar or vector of f32 to \p type.
  static Value fromF32(ImplicitLocOpBuilder &nb, Value value, Type type) {
    if (value.getType() == type)
      return value;
    return arith::TruncFOp::create(nb, type, value);
  }

  ResampleOp op;
  ResampleTileAttr tile;
  gpu::GPUFuncOp func;
  ImplicitLocOpBuilder &b;
  Value tid, row, firstTarget;
  /// The current stream's times, its staged copy, and whether it was staged.
  Value currentTimes, stagedTimes, timesStaged;
};

} // namespace

LogicalResult fmha::lowerResampleToGPU(ResampleOp op,
                                       gpu::GPUModuleOp kernels) {
  std::optional<ResampleTileAttr> tile = op.getTile();
  if (!tile)
    return op.emitOpError(
        "has no tile configuration: run fmha-materialize-tiles first");

  // The kernel: one parameter per operand, shared buffers for the search.
  MLIRContext *context = op.getContext();
  auto workgroup = gpu::AddressSpaceAttr::get(
      context, gpu::GPUDialect::getWorkgroupAddressSpace());
  int64_t blockT = tile->getBlockT();
  Type i32 = IntegerType::get(context, 32), f32 = Float32Type::get(context);
  SmallVector<Type> sharedTypes = {
      MemRefType::get({blockT}, i32, nullptr, workgroup),
      MemRefType::get({blockT}, i32, nullptr, workgroup),
      MemRefType::get({blockT}, f32, nullptr, workgroup),
      MemRefType::get({kStagedTimes}, f32, nullptr, workgroup)};
  int32_t threads = tile->getThreads();
  gpu::GPUFuncOp func =
      createKernelFunc(op, kernels, "resample", sharedTypes, threads);

  ImplicitLocOpBuilder b(op.getLoc(), context);
  b.setInsertionPointToStart(&func.getBody().front());
  ResampleKernelBuilder(op, *tile, func, b).build();

  // The launch in place of the op.
  ImplicitLocOpBuilder host(op.getLoc(), op);
  Value targets = op.getTargets();
  Value batch = memref::DimOp::create(host, targets, 0);
  Value rowBlocks = arith::MinUIOp::create(
      host, batch, arith::ConstantIndexOp::create(host, kMaxGridDimY));
  Value numTargets = memref::DimOp::create(host, targets, 1);
  Value blocks = arith::CeilDivUIOp::create(
      host, numTargets, arith::ConstantIndexOp::create(host, blockT));
  Value one = arith::ConstantIndexOp::create(host, 1);
  Value blockSize = arith::ConstantIndexOp::create(host, threads);
  gpu::LaunchFuncOp::create(host, func, gpu::KernelDim3{blocks, rowBlocks, one},
                            gpu::KernelDim3{blockSize, one, one},
                            /*dynamicSharedMemorySize=*/Value(),
                            op->getOperands());
  op.erase();
  return success();
}
