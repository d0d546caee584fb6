//===- ResampleToGPU.cpp - fmha.resample as a gpu.func ---------------------===//
//
// Part of FlashCore. Lowers fmha.resample to one kernel plus a
// gpu.launch_func in its place.
//
// Launch (getResampleLaunchContract): the parameters are the op's memref
// operands in order (times of each stream, values of each stream, lengths
// of each stream if any, targets, out), each passed as an MLIR memref
// descriptor (allocated and aligned pointer, offset, sizes, strides). Grid:
// (ceil(T / block_t), min(B, 65535), 1), rows striding by the grid's y
// extent.
//
// Each CTA resamples block_t consecutive targets of one row. For each stream
// it copies the row's times to shared memory when they fit, then finds, once
// per target, the two samples and the weight the target needs (one thread per
// target, a binary search over the row's valid samples), keeping them in
// shared memory; then each thread reads a run of up to four consecutive
// 16-byte chunks of one target's features from both samples (ld/st.global.v4
// where rows are dense and D a multiple of 16 bytes, scalar otherwise),
// interpolates and writes them.
//
// Small problems are latency-bound (RoboCache's 256 x 500 -> 250 x 32 is
// 13 MB: a few microseconds of bandwidth), so the kernel keeps the chain of
// dependent global round trips short: each thread's target is loaded before
// the times are staged, the staging loop issues several items' loads before
// storing the first, and a feature run's loads are all in flight together.
// Large ones are bandwidth-bound: ptxas is held to enough registers for four
// CTAs per SM. The semantics, including the edge rules, are those of
// kernels-ref/resample.cu, computed the same way (f32, one fma), so the
// results match the reference. Every S is at least 1 (the verifier checks
// static sizes; the kernel reads sample 0 of a row without valid samples).
//
//===----------------------------------------------------------------------===//

#include "fmha/Conversion/FmhaToNVGPU/FmhaToNVGPU.h"
#include "KernelLaunch.h"
#include "fmha/Dialect/Fmha/TileConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
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
/// Threads each SM should hold of one resample kernel: half its 2048.
constexpr int32_t kResidentThreadsPerSM = 1024;
/// Accesses per thread whose global loads are issued together, in the
/// staging loop (items) and the feature loop (a run of one target's
/// features): one round trip for up to this many instead of one each.
constexpr int64_t kItemsInFlight = 4;

/// The samples of \p times' row \p row to use: S, or clamp(lengths[row], 0,
/// S) when \p lengths is given, as kernels-ref does.
Value getValidSamples(ImplicitLocOpBuilder &b, Value times, Value lengths,
                      Value row) {
  Value samples = memref::DimOp::create(b, times, 1);
  if (!lengths)
    return samples;
  Value length = memref::LoadOp::create(b, lengths, ValueRange{row});
  Value asIndex = arith::IndexCastOp::create(
      b, b.getIndexType(),
      arith::MaxSIOp::create(b, length,
                             arith::ConstantIntOp::create(b, 0, 32)));
  return arith::MinUIOp::create(b, asIndex, samples);
}

/// Zero constants of \p types.
SmallVector<Value> zerosOf(OpBuilder &builder, Location loc,
                           TypeRange types) {
  SmallVector<Value> zeros;
  for (Type type : types)
    zeros.push_back(arith::ConstantOp::create(
        builder, loc, cast<TypedAttr>(builder.getZeroAttr(type))));
  return zeros;
}

/// Extends a scalar or vector of 16-bit floats to f32.
Value toF32(ImplicitLocOpBuilder &nb, Value value) {
  Type f32 = nb.getF32Type();
  if (auto vector = dyn_cast<VectorType>(value.getType()))
    f32 = vector.clone(f32);
  if (value.getType() == f32)
    return value;
  return arith::ExtFOp::create(nb, f32, value);
}

/// Rounds a scalar or vector of f32 to \p type.
Value fromF32(ImplicitLocOpBuilder &nb, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return arith::TruncFOp::create(nb, type, value);
}

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

    // With at most one target per thread (block_t <= threads, every default
    // tile), each thread loads its target now, so the load overlaps the
    // staging of the times below instead of following it.
    Value ownTarget;
    Value hasTarget =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, tid, local);
    if (tile.getBlockT() <= tile.getThreads()) {
      auto load = scf::IfOp::create(
          b, hasTarget,
          [&](OpBuilder &builder, Location loc) {
            Value at = arith::AddIOp::create(builder, loc, firstTarget, tid);
            scf::YieldOp::create(
                builder, loc,
                ValueRange{memref::LoadOp::create(builder, loc, targets,
                                                  ValueRange{row, at})});
          },
          [&](OpBuilder &builder, Location loc) {
            scf::YieldOp::create(
                builder, loc,
                ValueRange{arith::ConstantFloatOp::create(
                    builder, loc, builder.getF32Type(), APFloat(0.0f))});
          });
      ownTarget = load.getResult(0);
    }

    int64_t featureOffset = 0;
    for (unsigned s = 0; s < streams; ++s) {
      Value times = func.getArgument(s);
      Value values = func.getArgument(streams + s);
      Value valid = getValidSamples(
          b, times, withLengths ? func.getArgument(2 * streams + s) : Value(),
          row);

      // Phase 0: rows that fit are copied to shared memory (one coalesced
      // read), so that the searches below do not chain global loads.
      currentTimes = times;
      timesStaged = arith::CmpIOp::create(b, arith::CmpIPredicate::ule, valid,
                                          constantIndex(kStagedTimes));
      scf::IfOp::create(b, timesStaged, [&](OpBuilder &builder, Location loc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(builder.getInsertionBlock(),
                            builder.getInsertionPoint());
        forEachThreadItemInFlight(
            valid, {b.getF32Type()},
            [&](OpBuilder &nb, Location loc, Value j) -> SmallVector<Value> {
              return {
                  memref::LoadOp::create(nb, loc, times, ValueRange{row, j})};
            },
            [&](Value j, ValueRange time) {
              memref::StoreOp::create(b, time[0], stagedTimes, ValueRange{j});
            });
        scf::YieldOp::create(b);
      });
      gpu::BarrierOp::create(b);

      // Phase 1: one thread per target finds its samples and weight.
      if (ownTarget) {
        scf::IfOp::create(b, hasTarget, [&](OpBuilder &builder, Location loc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(builder.getInsertionBlock(),
                              builder.getInsertionPoint());
          storeInterval(valid, ownTarget, tid, firstIndex, secondIndex, weight);
          scf::YieldOp::create(b);
        });
      } else {
        forEachThreadItem(local, [&](Value t) {
          Value target = memref::LoadOp::create(
              b, targets,
              ValueRange{row, arith::AddIOp::create(b, firstTarget, t)});
          storeInterval(valid, target, t, firstIndex, secondIndex, weight);
        });
      }
      gpu::BarrierOp::create(b);

      // Phase 2: each thread interpolates a run of consecutive accesses of
      // one target (16 bytes each where the layout allows it, else one
      // element): the run's loads share the target's indices and weight
      // and differ by constant offsets, so all of them are in flight
      // together at little register cost.
      auto valuesType = cast<MemRefType>(values.getType());
      int64_t features = valuesType.getDimSize(2);
      Type elementType = cast<MemRefType>(out.getType()).getElementType();
      int64_t width = getVectorWidth(valuesType, featureOffset);
      int64_t accesses = features / width;
      int64_t run = kItemsInFlight;
      while (accesses % run != 0)
        --run;
      Value runsPerTarget = constantIndex(accesses / run);
      Value runs = arith::MulIOp::create(b, local, runsPerTarget);
      forEachThreadItem(runs, [&](Value r) {
        Value t = arith::DivUIOp::create(b, r, runsPerTarget);
        Value firstFeature = arith::MulIOp::create(
            b, arith::RemUIOp::create(b, r, runsPerTarget),
            constantIndex(run * width));
        SmallVector<Value> samples =
            loadRun(values, t, firstFeature, run, width, elementType,
                    firstIndex, secondIndex, weight);
        Value w = samples[2 * run], noSample = samples[2 * run + 1];
        Value outRow = arith::AddIOp::create(b, firstTarget, t);
        for (int64_t k = 0; k < run; ++k) {
          Value result = interpolate(samples[k], samples[run + k], w, noSample,
                                     elementType, width);
          Value column = arith::AddIOp::create(
              b, firstFeature, constantIndex(featureOffset + k * width));
          // Owned storage: a ValueRange over a braced list would dangle.
          SmallVector<Value, 3> at = {row, outRow, column};
          if (width == 1)
            memref::StoreOp::create(b, result, out, at);
          else
            vector::StoreOp::create(b, result, out, at, /*nontemporal=*/false,
                                    llvm::MaybeAlign(kVectorBytes));
        }
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

  /// What target slot `t` needs for its \p run accesses of \p width
  /// elements from \p firstFeature on: the earlier samples' values, the
  /// later samples' (as stored: f32 only in interpolate, half the registers
  /// while they are in flight), the weight, and whether the row has no
  /// sample. The loads are unconditional, so nothing merges them into
  /// branch results (which LLVM would widen to f32 early): a row without
  /// valid samples still has S >= 1 in memory, and reads sample 0 in vain.
  SmallVector<Value> loadRun(Value values, Value t, Value firstFeature,
                             int64_t run, int64_t width, Type elementType,
                             Value firstIndex, Value secondIndex,
                             Value weight) {
    Value first = memref::LoadOp::create(b, firstIndex, ValueRange{t});
    Value second = memref::LoadOp::create(b, secondIndex, ValueRange{t});
    Value noSample =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, first,
                              arith::ConstantIntOp::create(b, kNoSample, 32));
    first = arith::MaxSIOp::create(b, first,
                                   arith::ConstantIntOp::create(b, 0, 32));
    SmallVector<Value> loaded;
    for (Value index : {first, second}) {
      Value sample = arith::IndexCastOp::create(b, b.getIndexType(), index);
      for (int64_t k = 0; k < run; ++k) {
        Value feature =
            arith::AddIOp::create(b, firstFeature, constantIndex(k * width));
        SmallVector<Value, 3> at = {row, sample, feature};
        if (width == 1)
          loaded.push_back(memref::LoadOp::create(b, values, at));
        else
          loaded.push_back(vector::LoadOp::create(
              b, VectorType::get({width}, elementType), values, at,
              /*nontemporal=*/false, llvm::MaybeAlign(kVectorBytes)));
      }
    }
    loaded.push_back(memref::LoadOp::create(b, weight, ValueRange{t}));
    loaded.push_back(noSample);
    return loaded;
  }

  /// v0 + w * (v1 - v0) in f32 (one fma, as kernels-ref), rounded to the
  /// output's element type; zeros for a row without samples.
  Value interpolate(Value stored0, Value stored1, Value w, Value noSample,
                    Type elementType, int64_t width) {
    Value v0 = toF32(b, stored0), v1 = toF32(b, stored1);
    if (width > 1)
      w = vector::BroadcastOp::create(b, v0.getType(), w);
    Value difference = arith::SubFOp::create(b, v1, v0);
    Value mixed = math::FmaOp::create(b, w, difference, v0);
    Type resultType =
        width == 1 ? elementType : VectorType::get({width}, elementType);
    Value zero = arith::ConstantOp::create(
        b, cast<TypedAttr>(b.getZeroAttr(resultType)));
    return arith::SelectOp::create(b, noSample, zero,
                                   fromF32(b, mixed, resultType));
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

  /// Emits `for (i = tid; i < count; i += threads * kItemsInFlight)` whose
  /// body first runs `load` for each of the iteration's kItemsInFlight items
  /// (i, i + threads, ...; zeros of \p loadedTypes past `count`), then `use`
  /// for each item below `count`: the loads of all items are in flight
  /// before the first result is needed.
  void forEachThreadItemInFlight(
      Value count, TypeRange loadedTypes,
      function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> load,
      function_ref<void(Value, ValueRange)> use) {
    Value threads = gpu::BlockDimOp::create(b, gpu::Dimension::x);
    Value step =
        arith::MulIOp::create(b, threads, constantIndex(kItemsInFlight));
    auto loop = scf::ForOp::create(b, tid, count, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> items, inRange;
    SmallVector<SmallVector<Value>> loaded;
    for (int64_t k = 0; k < kItemsInFlight; ++k) {
      Value item = loop.getInductionVar();
      if (k > 0)
        item = arith::AddIOp::create(
            b, item, arith::MulIOp::create(b, threads, constantIndex(k)));
      Value below =
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, item, count);
      auto guarded = scf::IfOp::create(
          b, below,
          [&](OpBuilder &builder, Location loc) {
            scf::YieldOp::create(builder, loc, load(builder, loc, item));
          },
          [&](OpBuilder &builder, Location loc) {
            scf::YieldOp::create(builder, loc,
                                 zerosOf(builder, loc, loadedTypes));
          });
      items.push_back(item);
      inRange.push_back(below);
      loaded.push_back(SmallVector<Value>(guarded.getResults()));
    }
    for (int64_t k = 0; k < kItemsInFlight; ++k)
      scf::IfOp::create(b, inRange[k], [&](OpBuilder &builder, Location loc) {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPoint(builder.getInsertionBlock(),
                            builder.getInsertionPoint());
        use(items[k], loaded[k]);
        scf::YieldOp::create(b);
      });
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

  ResampleOp op;
  ResampleTileAttr tile;
  gpu::GPUFuncOp func;
  ImplicitLocOpBuilder &b;
  Value tid, row, firstTarget;
  /// The current stream's times, its staged copy, and whether it was staged.
  Value currentTimes, stagedTimes, timesStaged;
};

/// The names of the stream operands: times0, ..., values0, ..., then
/// lengths0, ... where the op has lengths (both ops list them so).
std::vector<std::string> getStreamOperandNames(unsigned streams,
                                               bool withValues,
                                               bool withLengths) {
  std::vector<std::string> names;
  SmallVector<StringRef> kinds = {"times"};
  if (withValues)
    kinds.push_back("values");
  if (withLengths)
    kinds.push_back("lengths");
  for (StringRef kind : kinds)
    for (unsigned s = 0; s < streams; ++s)
      names.push_back((kind + Twine(s)).str());
  return names;
}

/// One CTA of `threads` per block_t targets of a row: grid (ceil(T /
/// block_t), min(B, 65535), 1), rows striding by the grid's y extent.
LaunchContract getResampleLaunchContract(ResampleOp op,
                                         ResampleTileAttr tile) {
  LaunchContract contract;
  contract.operands = getStreamOperandNames(
      op.getNumStreams(), /*withValues=*/true, !op.getLengths().empty());
  unsigned targets = contract.operands.size();
  contract.operands.push_back("targets");
  contract.operands.push_back("out");
  contract.threads = tile.getThreads();
  contract.grid = {GridAxis{{{targets, 1, tile.getBlockT()}}},
                   GridAxis{{{targets, 0}}, kMaxGridDimY}, GridAxis{}};
  contract.parameters = getOperandParameters(op);
  return contract;
}

/// One CTA of kCheckSortedThreads per row: grid (min(B, 65535), 1, 1), rows
/// striding by the grid's x extent.
LaunchContract getCheckSortedLaunchContract(CheckSortedOp op) {
  LaunchContract contract;
  contract.operands =
      getStreamOperandNames(op.getTimes().size(), /*withValues=*/false,
                            !op.getLengths().empty());
  contract.operands.push_back("first");
  contract.threads = kCheckSortedThreads;
  contract.grid = {GridAxis{{{0, 0}}, kMaxGridDimY}, GridAxis{}, GridAxis{}};
  contract.parameters = getOperandParameters(op);
  return contract;
}

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
      createKernelFunc(op, kernels, "resample",
                       getResampleLaunchContract(op, *tile), sharedTypes);
  // Bandwidth needs resident warps more than registers: ask ptxas to fit
  // enough CTAs for half the SM's threads (at 256 threads, 4 CTAs and at
  // most 64 registers; without the bound ptxas takes 80-90 and fits 2: a
  // version at 118 registers, 2 CTAs per SM, measured 25-50% slower on the
  // two large rows of ANCHORS.md).
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                IntegerAttr::get(IntegerType::get(context, 32),
                                 std::max(1, kResidentThreadsPerSM / threads)));

  ImplicitLocOpBuilder b(op.getLoc(), context);
  b.setInsertionPointToStart(&func.getBody().front());
  ResampleKernelBuilder(op, *tile, func, b).build();

  replaceByLaunch(op, func);
  return success();
}

LogicalResult fmha::lowerCheckSortedToGPU(CheckSortedOp op,
                                          gpu::GPUModuleOp kernels) {
  MLIRContext *context = op.getContext();
  gpu::GPUFuncOp func = createKernelFunc(op, kernels, "check_sorted",
                                         getCheckSortedLaunchContract(op));
  ImplicitLocOpBuilder b(op.getLoc(), context);
  b.setInsertionPointToStart(&func.getBody().front());

  unsigned streams = op.getTimes().size();
  bool withLengths = !op.getLengths().empty();
  Value first = func.getArgument(func.getNumArguments() - 1);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value threads = gpu::BlockDimOp::create(b, gpu::Dimension::x);
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value batch = memref::DimOp::create(b, func.getArgument(0), 0);
  // Rows stride by the grid's extent: any batch size is covered.
  auto rows =
      scf::ForOp::create(b, gpu::BlockIdOp::create(b, gpu::Dimension::x), batch,
                         gpu::GridDimOp::create(b, gpu::Dimension::x));
  b.setInsertionPointToStart(rows.getBody());
  Value row = rows.getInductionVar();
  Value rowBits = arith::ShLIOp::create(
      b, arith::IndexCastOp::create(b, b.getI64Type(), row),
      arith::ConstantIntOp::create(b, 32, 64));
  for (unsigned s = 0; s < streams; ++s) {
    Value times = func.getArgument(s);
    Value valid = getValidSamples(
        b, times, withLengths ? func.getArgument(streams + s) : Value(), row);
    Value pairs =
        arith::SubIOp::create(b, arith::MaxUIOp::create(b, valid, one), one);
    auto loop = scf::ForOp::create(b, tid, pairs, threads);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value i = loop.getInductionVar();
    Value earlier = memref::LoadOp::create(b, times, ValueRange{row, i});
    Value later = memref::LoadOp::create(
        b, times, ValueRange{row, arith::AddIOp::create(b, i, one)});
    // ugt: greater, or unordered (either one NaN).
    Value outOfOrder =
        arith::CmpFOp::create(b, arith::CmpFPredicate::UGT, earlier, later);
    scf::IfOp::create(b, outOfOrder, [&](OpBuilder &builder, Location loc) {
      ImplicitLocOpBuilder nb(loc, builder);
      Value position = arith::OrIOp::create(
          nb, rowBits, arith::IndexCastOp::create(nb, nb.getI64Type(), i));
      Value slot = arith::ConstantIndexOp::create(nb, s);
      memref::AtomicRMWOp::create(nb, arith::AtomicRMWKind::minu, position,
                                  first, ValueRange{slot});
      scf::YieldOp::create(nb);
    });
  }
  b.setInsertionPointAfter(rows);
  gpu::ReturnOp::create(b);

  replaceByLaunch(op, func);
  return success();
}
