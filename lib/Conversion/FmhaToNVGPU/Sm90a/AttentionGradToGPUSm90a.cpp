//===- AttentionGradToGPUSm90a.cpp - the backward's main kernel on sm_90a -===//
//
// Part of FlashCore. The main kernel of fmha.attention_grad with dq_accum
// on sm_90a (tiles of 64, 128 or 256 columns; a head dim below them
// computes on TMA's zeros past D and stores D's columns), in
// FlashAttention-3's design
// (KERNELS.md section 6): attention_grad_dkv, between the chip-independent
// attention_grad_delta (delta = rowsum(dO O), dq_accum zeroed) and
// attention_grad_dq_convert (dq = scale dq_accum) of
// Sm80/AttentionGradToGPUSm80.cpp.
//
// One CTA per block of 128 keys of one (batch, KV head) (64 at head dim
// 256: below); warpgroup 0 is the producer, warpgroups 1 and 2 the
// consumers, each owning 64 of the keys. The producer's first thread loads
// the K and V tiles once, then Q and dO of every block of 64 queries (128
// at head dim 64: GradGeometry) of every query head of the group through
// two buffers (TMA, a full and an empty mbarrier each); its second warp's
// first thread is the dQ writer. Per query block each consumer computes,
// with keys as rows (so that P^T and dS^T come out of the WGMMA
// accumulators already as register A fragments):
//
//   S^T = K Q^T, dP^T = V dO^T        (WGMMA, both operands in shared memory)
//   P^T = exp2(S^T scale log2e - LSE log2e), masked in the blocks that
//   need it (the diagonal's, a window's edges, past Sq);
//   dS^T = P^T (dP^T - D)
//   (the block's LSE log2e and delta stored in shared memory two blocks
//   earlier by a consumer thread per query)
//   dV += P^T dO, dK += dS^T Q        (WGMMA, A from registers)
//   dS^T to shared memory (bf16/f16, as the TMA's 128-byte swizzle lays a
//   tile out; two buffers); both consumers meet (named barrier 2), their
//   only meeting per block
//   dQ = dS K                          (WGMMA, both transposed from shared
//                                      memory; consumer c computes the
//                                      head-dim columns [c D/2, (c+1) D/2),
//                                      or at head dim 64 the block's rows
//                                      [64 c, 64 (c + 1)))
//   dQ (f32) to a staging buffer once the writer has freed it (an
//   mbarrier), arriving on its staged mbarrier; the next block's S^T and
//   dP^T issued under that hand-off
//
// The writer adds each staged block's rows to dq_accum with one bulk
// reduce-add (cp.reduce.async.bulk .add.f32) and frees the buffer once the
// add has read it; the staging buffers alternate. So the consumers do not
// wait for each other's staging, and run out of step between their dS^T
// meetings.
//
// With dq_order (the deterministic mode) the adds into each query block's
// rows of dq_accum keep one order, FlashAttention-3's: from the last key
// block that sees the block to the first, which is the order they reach it
// in under a causal mask. The writer waits until the block's counter
// (zeroed by the delta kernel) reaches the number of key blocks after its
// own that see the block, adds, waits for the add to complete and counts
// it. The key blocks launch from the last, so a CTA only ever waits for
// CTAs launched before it.
//
// At head dim 256 dK and dV of 64 keys would take all of a consumer's
// registers, so the consumers split the head dim (GradGeometry): a CTA
// owns 64 keys, which both consumers share; each computes S^T and dP^T for
// half of a block's queries, stores its P^T and dS^T to shared memory,
// and after their meeting accumulates dV += P^T dO and dK += dS^T Q with
// A from shared memory over its half of D's columns, then dQ over the
// same half. One Q/dO buffer and one dQ staging buffer fit beside tiles
// of 256 columns.
//
// Where D or Dv ends a column block or more short of 256 (d136 to d192,
// 192/128, 256/128), halves of the tile would leave the second consumer
// computing zeros while the first computes all of its columns: the two
// instead share out whole 64-column blocks of each of dK, dV and dQ for
// the least larger N (GradGeometry::getBalancedSplit; d192: 64 + 64 + 128
// and 128 + 128 + 64 columns of dK, dV and dQ against 128 each), each
// consumer's code emitted apart behind a uniform branch, its named
// barriers in the form without .aligned. Up to 192 columns the tiles then
// hold 192 (getTileColumns), not 256, which leaves room for two Q/dO
// buffers.
//
// The producer warpgroup keeps 24 registers, the consumers 240: all that
// the CTA launches with (nvvm.maxnreg 168 x 384 threads).
//
// dK (times scale) and dV stay in registers over the whole group and are
// stored once, after the consumers' last meeting: each warp stages its rows
// in its slab of the K and V tiles (WarpSlab, as the forward's O) and
// stores them by 16-byte chunks. dq_accum is dense [B, Hq, Sq, D] f32 (a
// block's rows are contiguous) with each row's 16-byte chunks permuted
// (getQueryGradColumn, which the conversion reads through); a block past Sq
// adds only its rows below Sq.
//
// With dkv_partial a CTA walks one slice of its group's query heads (the
// grid's y a (KV head, slice) pair): its dK and dV, partial sums over that
// slice, go as f32 pairs straight from the accumulators into the slice's
// rows of dkv_partial (no staging: the tiles stay untouched), which
// attention_grad_dkv_reduce sums in slice order. So the CTAs of an MQA
// group under a causal mask (key block 0's walking every query block of
// every head) are split into shorter ones that fill the GPU
// (getAttentionGradSlices picks the count at launch).
//
// Launch: the TMA tensor maps of q, k, v and dout first (boxes of 64 or
// 128 rows x 64 elements, 128-byte swizzle; rows past S read as zeros),
// then the op's operands as memref descriptors; 384 threads; a grid of
// (key blocks, KV heads (times slices), min(B, 65535)), the batches
// striding by the grid's z extent. Under a causal mask the CTAs take those in
// another order, longest first in sections of heads that fill a wave
// (getLongestFirstCta).
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"
#include "AttentionLowerings.h"
#include "KernelLaunch.h"
#include "Sm90a/FragmentSoftmax.h"
#include "Sm90a/PingPong.h"
#include "Sm90a/TmaPipeline.h"
#include "Sm90a/WarpSlab.h"
#include "Sm90a/WarpgroupGemm.h"
#include "TileSchedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>
#include <cassert>
#include <cmath>

using namespace mlir;
using namespace mlir::fmha;
using namespace mlir::fmha::sm90a;

namespace {

/// The tensor maps, first among the parameters: dk's and dv's only where
/// the kernel stores them by TMA (storesGradsByTma).
enum GradMap : unsigned { kQMap, kKMap, kVMap, kDoutMap, kDkMap, kDvMap };

/// The consumer warpgroups.
constexpr int64_t kConsumers = 2;
constexpr int64_t kConsumerThreads = kConsumers * kWarpgroupThreads;
/// 32-bit registers of an SM, shared by the threads of a CTA at launch.
constexpr int64_t kRegistersPerSm = 65536;
/// The registers each thread launches with: the SM's share of each of the
/// kernel's threads, rounded down to the allocation granule of 8.
constexpr int32_t getLaunchRegisters() {
  return kRegistersPerSm / ((kConsumers + 1) * kWarpgroupThreads) / 8 * 8;
}
/// Named barriers among the consumers (0 is __syncthreads): the first
/// blocks' LSE and delta stored, a block's dS^T (and P^T) stored, every
/// WGMMA that reads the K and V tiles completed.
constexpr int32_t kTermsStored = 1, kScoresStored = 2, kTilesRead = 3;
/// The thread that adds each block's staged dQ to dq_accum (the producer
/// warpgroup's second warp, which has no other work).
constexpr int64_t kWriterThread = kThreadsPerWarp;

/// How the two consumers share a CTA's work. At head dim 128 each owns 64
/// of the CTA's 128 keys: its S^T and dP^T cover every query of a block of
/// 64, P^T and dS^T stay in its registers as the A operands of dV and dK,
/// it holds dK and dV of its keys over all of D, and computes dQ over half
/// of D's columns. At 64 the blocks are of 128 queries (FlashAttention-3's
/// 128 x 128 there: GEMMs twice as long for the same meetings), and each
/// consumer computes dQ of 64 of the block's rows over all of D. At 256
/// dK and dV of 64 keys would take 256 registers alone, so (FlashAttention-
/// 3's choice there) both share the CTA's 64 keys: each computes S^T and
/// dP^T for half of a block's queries, P^T and dS^T meet in shared memory,
/// and each holds dK, dV and computes dQ for half of D's columns (at 192,
/// and short of 256, its own column blocks: consumerGrads). The bigger
/// tiles leave room for fewer Q/dO and dQ staging buffers.
struct GradGeometry {
  bool splitHeadDim;
  /// Keys of a CTA, queries of a streamed block.
  int64_t blockKeys, blockQueries;
  /// Queries of a consumer's S^T and dP^T; D's columns of its dK and dV.
  int64_t scoreColumns, gradColumns;
  /// Whether a consumer's dQ is its 64 of the block's rows over all of D,
  /// rather than all of them over its half of D.
  bool queryGradByRows;
  /// The N of a consumer's dK, dV and dQ GEMMs, its accumulators' widths:
  /// D's (Dv's for dV) own columns rounded up to WGMMA's step where a
  /// consumer's N spans the head dim (its MN-major B's last column block
  /// read in part), else gradColumns and half the tile's.
  int64_t keyGradColumns, valueGradColumns, queryGradColumns;
  /// Buffers of the streamed Q and dO, and of dQ's staging.
  int64_t stages, stagingBuffers;

  /// D's (for dV Dv's) columns of one consumer's GEMM: from `first`, a
  /// column block's first, `count` of them (its N).
  struct Columns {
    int64_t first, count;
  };
  /// One consumer's columns of dK, dV and dQ.
  struct ConsumerGrads {
    Columns key, value, query;
  };
  /// Where the consumers split the head dim: each consumer's own columns
  /// (consumer 0's first), whole column blocks of each GEMM shared out so
  /// that the larger of their N totals is least (getBalancedSplit). Always
  /// at tiles of 192 columns; at 256 only where half of the tile's columns
  /// each would do worse (D or Dv short of 256). Empty where both take
  /// half of the tile's columns of all three.
  SmallVector<ConsumerGrads, 2> consumerGrads;

  static SmallVector<ConsumerGrads, 2> getBalancedSplit(int64_t qkHeadDim,
                                                        int64_t vHeadDim);
  /// The larger of the two consumers' total N in \p split.
  static int64_t getLargerTotal(ArrayRef<ConsumerGrads> split) {
    int64_t larger = 0;
    for (const ConsumerGrads &grads : split)
      larger = std::max(larger, grads.key.count + grads.value.count +
                                    grads.query.count);
    return larger;
  }

  static GradGeometry get(int64_t headDim) {
    return get(headDim, headDim, headDim);
  }

  /// Of tiles of \p headDim columns (getTileColumns) for q's and k's head
  /// dim \p qkHeadDim and v's \p vHeadDim; the one-argument form where
  /// they fill the tile.
  static GradGeometry get(int64_t headDim, int64_t qkHeadDim,
                          int64_t vHeadDim) {
    GradGeometry g;
    g.splitHeadDim = headDim > 2 * kBoxColumns;
    AttentionGradBlocks blocks = getSm90aAttentionGradBlocks(headDim);
    g.blockKeys = blocks.keys;
    g.blockQueries = blocks.queries;
    g.scoreColumns =
        g.splitHeadDim ? g.blockQueries / kConsumers : g.blockQueries;
    g.gradColumns = g.splitHeadDim ? headDim / kConsumers : headDim;
    g.queryGradByRows = g.blockQueries > kWgmmaM;
    g.keyGradColumns = g.splitHeadDim
                           ? g.gradColumns
                           : int64_t(llvm::alignTo(qkHeadDim, kWgmmaNStep));
    g.valueGradColumns = g.splitHeadDim
                             ? g.gradColumns
                             : int64_t(llvm::alignTo(vHeadDim, kWgmmaNStep));
    g.queryGradColumns = g.queryGradByRows
                             ? int64_t(llvm::alignTo(qkHeadDim, kWgmmaNStep))
                             : headDim / kConsumers;
    // Two Q/dO buffers fit up to tiles of 192 columns.
    g.stages = headDim > 3 * kBoxColumns ? 1 : 2;
    if (g.splitHeadDim) {
      g.consumerGrads = getBalancedSplit(qkHeadDim, vHeadDim);
      // Tiles of 256 keep their halves where those do as well (192 needs
      // the split: its halves are not whole column blocks).
      if (headDim == 4 * kBoxColumns && !g.consumerGrads.empty() &&
          getLargerTotal(g.consumerGrads) >= 3 * g.gradColumns)
        g.consumerGrads.clear();
    }
    // Two staging buffers only at head dim 128: at 64 they would pass the
    // SM's 227 KB by 80 bytes.
    g.stagingBuffers = headDim == 2 * kBoxColumns ? 2 : 1;
    return g;
  }
};

/// getBalancedSplit: the split geometry's column blocks of dK (D's), dV
/// (Dv's) and dQ (D's) shared out between the two consumers, each a run of
/// one or two blocks of each GEMM (a consumer's accumulators hold at most
/// 128 columns of each), consumer 0 the first run; the N of a run is its
/// columns rounded up to WGMMA's step. The split whose larger total N is
/// least; empty where a GEMM has one block (or more than four).
SmallVector<GradGeometry::ConsumerGrads, 2>
GradGeometry::getBalancedSplit(int64_t qkHeadDim, int64_t vHeadDim) {
  using Columns = GradGeometry::Columns;
  auto run = [](int64_t headDim, int64_t fromBlock, int64_t toBlock) {
    int64_t first = fromBlock * kBoxColumns;
    int64_t last = std::min(headDim, toBlock * kBoxColumns);
    return Columns{first, int64_t(llvm::alignTo(last - first, kWgmmaNStep))};
  };
  int64_t keyBlocks = llvm::divideCeil(qkHeadDim, kBoxColumns);
  int64_t valueBlocks = llvm::divideCeil(vHeadDim, kBoxColumns);
  const int64_t maxBlocks = 2;
  // Consumer 0 takes `first` of a GEMM's `blocks`, consumer 1 the rest.
  auto firstChoices = [&](int64_t blocks) {
    SmallVector<int64_t> choices;
    for (int64_t first = 1; first < blocks; ++first)
      if (first <= maxBlocks && blocks - first <= maxBlocks)
        choices.push_back(first);
    return choices;
  };
  SmallVector<GradGeometry::ConsumerGrads, 2> split;
  for (int64_t key : firstChoices(keyBlocks))
    for (int64_t value : firstChoices(valueBlocks))
      for (int64_t query : firstChoices(keyBlocks)) {
        GradGeometry::ConsumerGrads first{run(qkHeadDim, 0, key),
                                          run(vHeadDim, 0, value),
                                          run(qkHeadDim, 0, query)};
        GradGeometry::ConsumerGrads second{run(qkHeadDim, key, keyBlocks),
                                           run(vHeadDim, value, valueBlocks),
                                           run(qkHeadDim, query, keyBlocks)};
        if (split.empty() ||
            getLargerTotal({first, second}) < getLargerTotal(split))
          split = {first, second};
      }
  return split;
}

/// Where everything lives in shared memory, from the 1024-byte aligned
/// base: the K and V tiles, the Q and the dO buffers (a block's rows each),
/// two dS^T buffers (the key rows of a block's queries: a 128-byte swizzled
/// column block per 64 queries), where the consumers split the head dim
/// two P^T buffers alike, the f32 dQ staging buffers (rows x D, dense), two
/// buffers of a block's LSE log2e and delta (an f32 per query each), then
/// the mbarriers: K and V full, K and V empty, per buffer a full and an
/// empty one, then per staging buffer a staged and a free one.
struct GradSharedLayout {
  int64_t keyTileBytes, blockBytes, gradScoresBytes, stagingBytes, termsBytes;
  int64_t keys, values, queries, gradOut, gradScores, probs, staging, terms,
      barriers;
  int64_t totalBytes;

  static GradSharedLayout get(int64_t headDim, int64_t elementBytes) {
    GradGeometry geometry = GradGeometry::get(headDim);
    GradSharedLayout l;
    l.keyTileBytes = geometry.blockKeys * headDim * elementBytes;
    l.blockBytes = geometry.blockQueries * headDim * elementBytes;
    l.stagingBytes = geometry.blockQueries * headDim * 4;
    l.termsBytes = 2 * geometry.blockQueries * 4;
    l.keys = 0;
    l.values = l.keys + l.keyTileBytes;
    l.queries = l.values + l.keyTileBytes;
    l.gradOut = l.queries + geometry.stages * l.blockBytes;
    l.gradScoresBytes =
        geometry.blockKeys * geometry.blockQueries * elementBytes;
    l.gradScores = l.gradOut + geometry.stages * l.blockBytes;
    l.probs = l.gradScores + 2 * l.gradScoresBytes;
    l.staging = l.probs + (geometry.splitHeadDim ? 2 * l.gradScoresBytes : 0);
    l.terms = l.staging + geometry.stagingBuffers * l.stagingBytes;
    l.barriers = l.terms + 2 * l.termsBytes;
    // The dynamic shared memory is 16-byte aligned; the base is rounded
    // up to the swizzle atom.
    l.totalBytes = l.barriers +
                   8 * (2 + 2 * geometry.stages + 2 * geometry.stagingBuffers) +
                   kAtomBytes;
    assert(uint64_t(l.totalBytes) <=
               getChipLimits(Chip::sm_90a).maxSharedBytesPerBlock &&
           "fits an SM's shared memory");
    return l;
  }
};

int64_t getElementBytes(AttentionGradOp op) {
  return op.getQ().getType().getElementTypeBitWidth() / 8;
}

/// The columns the kernel's tiles hold, for every tile (dK and dV, dQ and
/// the staging share their geometry): the larger of D and Dv rounded up to
/// 64, 128 or 256 (getAttentionGradTileColumns), but 192 for those within
/// it whose column blocks the consumers can share out (getBalancedSplit):
/// its halves would split a block, and without the 64 columns of zeros a
/// second Q/dO buffer fits.
int64_t getTileColumns(AttentionGradOp op) {
  int64_t headDim = std::max(op.getHeadDim(), op.getValueHeadDim());
  if (headDim > 2 * kBoxColumns && headDim <= 3 * kBoxColumns &&
      !GradGeometry::getBalancedSplit(op.getHeadDim(), op.getValueHeadDim())
           .empty())
    return 3 * kBoxColumns;
  return getAttentionGradTileColumns(headDim);
}

/// Whether the consumers store dK and dV by TMA: each warp's slab (its
/// kWarpRows keys) as one box of dk and one of dv, which the TMA clips at
/// Sk's rows and D's columns. On tiles of 64 columns a slab is one
/// 128-byte swizzle period wide, laid out as the TMA's own 128-byte
/// swizzle; wider slabs XOR their chunks across periods, and dkv_partial
/// stores f32 partials from the registers.
bool storesGradsByTma(AttentionGradOp op) {
  return getTileColumns(op) == kBoxColumns && !op.getDkvPartial();
}

/// The shape the sm_90a emitters read: keys are the rows (blockM), a
/// query block the columns (blockN) of S^T.
KernelShape getGradShape(AttentionGradOp op) {
  GradGeometry geometry = GradGeometry::get(getTileColumns(op));
  KernelShape shape{};
  shape.blockM = geometry.blockKeys;
  shape.blockN = geometry.blockQueries;
  shape.stages = geometry.stages;
  shape.consumers = kConsumers;
  shape.headDim = op.getHeadDim();
  shape.valueHeadDim = op.getValueHeadDim();
  shape.keyColumns = shape.valueColumns = getTileColumns(op);
  shape.keyColumnBlocks = shape.valueColumnBlocks =
      shape.keyColumns / kBoxColumns;
  shape.elementType = op.getQ().getType().getElementType();
  shape.scale = op.getScaleOrDefault();
  shape.scaleLog2 = shape.scale * static_cast<float>(M_LOG2E);
  shape.softcap = ScoreCap::get(op);
  return shape;
}

/// \p shape with a consumer's S^T as its tile: block_n its queries.
KernelShape getScoreShape(KernelShape shape, const GradGeometry &geometry) {
  shape.blockN = geometry.scoreColumns;
  return shape;
}

class GradDkvKernel {
public:
  GradDkvKernel(AttentionGradOp op, gpu::GPUFuncOp func, KernelBuilder &b)
      : op(op), func(func), b(b), shape(getGradShape(op)),
        geometry(GradGeometry::get(shape.keyColumns, shape.headDim,
                                   shape.valueHeadDim)),
        layout(GradSharedLayout::get(shape.keyColumns, getElementBytes(op))),
        window(AttentionWindow::get(op).transposed()),
        ordered(static_cast<bool>(op.getDqOrder())),
        storesByTma(storesGradsByTma(op)),
        scoreShape(getScoreShape(shape, geometry)),
        threadId(gpu::ThreadIdOp::create(b, gpu::Dimension::x)),
        pipeline(TmaPipeline::create(b, shape, threadId)),
        gemm(b, shape, pipeline), masking(b, scoreShape, window) {}

  void build();

private:
  enum Barrier {
    kTilesFull,
    kTilesEmpty,
    kBlockFull,
    kBlockEmpty,
    kQueryGradStaged,
    kQueryGradFree
  };

  Value arg(AttentionGradOperand operand) {
    // After the tensor maps (GradMap).
    unsigned maps = (storesByTma ? kDvMap : kDoutMap) + 1;
    return func.getArgument(maps + getAttentionGradOperandIndex(op, operand));
  }
  Value map(GradMap which) { return func.getArgument(which); }
  /// Shared address (i32) of \p offset from the base, plus \p stage (i32)
  /// times \p stride.
  /// Where the consumers split the head dim the base is taken anew at each
  /// use: with one Q/dO buffer every tile address is loop-invariant, and
  /// LLVM would hoist the WGMMA descriptors of all of them (16 k steps a
  /// GEMM at head dim 256) out of the loop, into spilled registers.
  Value address(int64_t offset, Value stage = Value(), int64_t stride = 0) {
    Value base = geometry.splitHeadDim ? hideFromHoisting(b, pipeline.getBase())
                                       : pipeline.getBase();
    Value at = b.add(base, b.i32(offset));
    return stage ? b.add(at, b.mul(stage, b.i32(stride))) : at;
  }
  Value barrier(Barrier which, Value stage = Value()) {
    // The first slot of each kind, in the Barrier enum's order.
    int64_t stages = geometry.stages, staging = geometry.stagingBuffers;
    const int64_t firstSlots[] = {
        0, 1, 2, 2 + stages, 2 + 2 * stages, 2 + 2 * stages + staging};
    return pipeline.getSharedPointer(
        address(layout.barriers + 8 * firstSlots[which], stage, 8));
  }
  void initBarriers();
  /// Sets the role's thread id (from \p ctaThreadId), the CTA's
  /// coordinates and its query blocks (seqQ .. firstBlock, tile). Each
  /// role computes its own after setmaxnreg: values live across it are
  /// spilled by the producer, which keeps 24 registers.
  void computeCoordinates(Value ctaThreadId);
  /// Whether the CTAs take their tiles in getLongestFirstTile's order:
  /// under a causal mask (the transposed window's left side alone), where
  /// key block n sees the query blocks from first(n) on, fewer the larger
  /// n (backward-notes.md v54).
  bool takesLongestFirst() const { return window.left && !window.right; }
  /// This CTA's key block, KV head and first batch (index) in the order of
  /// getLongestFirstCta, from its place in the grid (\p gridBlock and
  /// \p gridHead: blockIdx.x and .y, index): in the grid's order (key blocks
  /// fastest) the last heads' longest CTAs would launch with the last waves.
  std::tuple<Value, Value, Value> getLongestFirstTile(Value gridBlock,
                                                      Value gridHead);
  /// Where streamed block `step` (i32) is: its query head and its index
  /// among the CTA's query blocks of that head (i32). Where carriesPlaces,
  /// the roles carry head and index through their loops and advance them
  /// a block at a time; elsewhere those are null, and the step is divided
  /// by the run-time block count where they are used (getHead,
  /// getFirstQuery).
  struct BlockPlace {
    Value step, head, index;
  };
  /// Whether the roles carry the places: where the consumers split the
  /// head dim, whose blocks are half as long, so that the division costs
  /// more of each. Measured there +2-9%; on tiles of 64 and 128 columns,
  /// carried, 1-7% slower (backward-notes v33).
  bool carriesPlaces() const { return geometry.splitHeadDim; }
  /// The place of streamed block 0.
  BlockPlace getFirstPlace() {
    Value zero = b.i32(0);
    return carriesPlaces() ? BlockPlace{zero, firstHead, zero}
                           : BlockPlace{zero, Value(), Value()};
  }
  /// The place of the block after \p place: the next of its head, or the
  /// next head's first.
  BlockPlace advance(BlockPlace place) {
    Value step = b.add(place.step, b.i32(1));
    if (!carriesPlaces())
      return {step, Value(), Value()};
    Value index = b.add(place.index, b.i32(1));
    Value wraps = b.eq(index, blocks);
    return {step, b.select(wraps, b.add(place.head, b.i32(1)), place.head),
            b.select(wraps, b.i32(0), index)};
  }
  /// What a loop carries of \p place: head and index, or nothing.
  SmallVector<Value> getCarried(BlockPlace place) {
    if (!carriesPlaces())
      return {};
    return {place.head, place.index};
  }
  /// The place of block \p step from what a loop carried of it.
  BlockPlace getCarriedPlace(Value step, ValueRange carried) {
    if (!carriesPlaces())
      return {step, Value(), Value()};
    return {step, carried[0], carried[1]};
  }
  /// The query head (i32) of the block at \p place.
  Value getHead(BlockPlace place) {
    return place.head ? place.head
                      : b.add(firstHead, b.udiv(place.step, blocks));
  }
  /// The first query (i32) of the block at \p place.
  Value getFirstQuery(BlockPlace place) {
    Value index = place.index ? place.index : b.urem(place.step, blocks);
    return b.mul(b.add(firstBlock, index), b.i32(geometry.blockQueries));
  }
  /// Runs \p body for each batch of this CTA (firstBatch, or blockIdx.z
  /// where the grid's order stands, striding by gridDim.z), carrying
  /// \p carried (i32) from \p initial.
  void forEachBatch(ValueRange initial,
                    llvm::function_ref<SmallVector<Value>(
                        Value batch, Value iteration, ValueRange carried)>
                        body);
  SmallVector<Value> buildProducer(Value batch, Value iteration, Value loaded);
  /// The dQ writer: each block's staged dQ, once staged, added to
  /// dq_accum; its buffer freed once the add has read it.
  SmallVector<Value> buildWriter(Value batch, Value written);
  /// The global address (i64) of the 4-byte element (\p batch (index),
  /// \p head, \p row (i32)) of \p tensor (lse, delta or dq_order).
  Value getWordAddress(Value tensor, Value batch, Value head, Value row);
  /// \p operand (lse or delta, [B, Hq, Sq] f32) at (\p batch (index),
  /// \p head, \p query (i32)).
  Value loadRowTerm(AttentionGradOperand operand, Value batch, Value head,
                    Value query);
  SmallVector<Value> buildConsumer(Value batch, Value iteration,
                                   Value consumed);
  /// S^T = K Q^T and dP^T = V dO^T of the block in the buffers of
  /// \p consumed (two WGMMA groups), once its tiles have landed.
  std::pair<Value, Value> issueScores(Value consumed);
  /// A query block's work up to its dQ: from its S^T and dP^T (in flight)
  /// and its row terms (in shared memory), adds to dK and dV and computes
  /// dQ = dS K; every WGMMA completed. Returns dK, dV and dQ.
  std::tuple<Value, Value, Value> buildBlock(BlockPlace place, Value consumed,
                                             Value gradKey, Value gradValue,
                                             Value scores, Value gradProbs);
  /// Hands a block's dQ to the writer: stages it once the writer has freed
  /// its buffer, then (where \p hasNext) issues the next block's S^T and
  /// dP^T, so that they run under the staging's tail, and stores the row
  /// terms \p laterTerms of the block after it. Returns the next block's
  /// S^T and dP^T (in flight) where \p hasNext.
  std::pair<Value, Value> handOffQueryGrad(Value step, Value consumed,
                                           Value queryGrad, bool hasNext,
                                           std::pair<Value, Value> laterTerms);
  /// The LSE and delta of the block at \p place, loaded by the first
  /// consumer threads, one query each, where its step is a block; 0 in
  /// the other threads.
  std::pair<Value, Value> loadRowTerms(Value batch, BlockPlace place);
  /// Stores what loadRowTerms loaded for block \p step, the LSE times
  /// log2e, into the buffer of \p consumed's parity.
  void storeRowTerms(std::pair<Value, Value> terms, Value step, Value consumed);
  /// Whether this consumer thread loads and stores the row terms of block
  /// \p step (a query each).
  Value isTermLoader(Value step) {
    return b.and_(b.slt(step, steps),
                  b.slt(getConsumerThread(), b.i32(geometry.blockQueries)));
  }
  /// The dQ staging buffer of the \p count th block (i32) and the phase of
  /// its staged and free barriers: the two buffers alternate.
  std::pair<Value, Value> getStagingSlotAndPhase(Value count) {
    Value buffers = b.i32(geometry.stagingBuffers);
    return {b.urem(count, buffers), b.urem(b.udiv(count, buffers), b.i32(2))};
  }
  /// The lane's fragment coordinates, its row relative to the CTA's first
  /// key: where the consumers split the head dim both own all of them, so
  /// the row does not count the consumer's (consumerRow).
  FragmentLanes deriveLanes() {
    FragmentLanes lanes = FragmentLanes::derive(b, threadId);
    if (geometry.splitHeadDim)
      lanes.laneRow = b.sub(lanes.laneRow, lanes.consumerRow);
    return lanes;
  }
  /// This consumer warpgroup's index (index): 0 or 1.
  Value getConsumer(const FragmentLanes &lanes) {
    return b.udiv(lanes.consumerRow, b.index(kWgmmaM));
  }
  /// getConsumer as an i32 that ptxas knows is warp-uniform: for the
  /// shared addresses of WGMMA operands.
  Value getUniformConsumer(const FragmentLanes &lanes) {
    return makeWarpUniform(b, b.word(getConsumer(lanes)));
  }
  /// The shared byte offset of this consumer's key rows in a K or V tile
  /// (i32).
  Value getKeyRowsOffset(const FragmentLanes &lanes) {
    if (geometry.splitHeadDim)
      return b.i32(0);
    return b.mul(getUniformConsumer(lanes), b.i32(kWgmmaM * kSwizzleBytes));
  }
  /// Where the consumers split the head dim: the first query of this
  /// consumer's S^T in a block (index).
  Value getScoreColumn(const FragmentLanes &lanes) {
    return b.mul(getConsumer(lanes), b.index(geometry.scoreColumns));
  }
  /// The shared address (i32) of the row terms of \p consumed's parity.
  Value getRowTerms(Value consumed) {
    return address(layout.terms, b.urem(consumed, b.i32(2)), layout.termsBytes);
  }
  /// The consumer thread's index among the consumers (i32).
  Value getConsumerThread() {
    return b.word(b.sub(threadId, b.index(kWarpgroupThreads)));
  }
  /// Whether the query block from \p firstQuery (i32) needs the mask: one
  /// outside the blocks that every key row of the tile sees whole (the
  /// diagonal's, a window's edges, a last block past Sq), as an i1.
  Value needsMask(Value firstQuery);
  /// P^T of the block from its S^T WGMMA (waited for here, under dP^T's):
  /// the probabilities, and them packed as the A registers of dV's WGMMA.
  /// The mask is applied where \p masked (i1) holds.
  std::pair<SmallVector<Value>, SmallVector<Value>>
  computeProbs(const FragmentLanes &lanes, Value scores, Value terms,
               Value firstQueryIndex, Value masked);
  /// dS^T = P^T (dP^T - delta) from the dP^T WGMMA (complete), packed as
  /// the A registers of dK's WGMMA.
  SmallVector<Value> computeGradScores(const FragmentLanes &lanes,
                                       Value gradProbs,
                                       ArrayRef<Value> probabilities,
                                       Value terms);
  /// Element i's row term (0: LSE log2e, 1: delta) from \p terms.
  Value loadTerm(const FragmentLanes &lanes, Value terms, int64_t which,
                 int64_t i);
  /// The consumer's loop over a batch's query blocks, then its dK and dV
  /// stored (buildConsumer, with `grads` where set).
  Value buildConsumerBlocks(Value batch, Value iteration, Value consumed);
  /// Issues dQ = dS K for this consumer's rows or columns (half of the
  /// tile's, or its own of a balanced split).
  Value issueQueryGrad(const FragmentLanes &lanes, Value gradScores);
  /// Stores this consumer's part of dS^T or P^T into \p tile (shared,
  /// i32), in the TMA swizzle.
  void storeScoreTile(const FragmentLanes &lanes, ArrayRef<Value> packed,
                      Value tile);
  void stageQueryGrad(const FragmentLanes &lanes, Value gradQuery,
                      Value staging);
  void reduceQueryGrad(Value batch, Value head, Value firstQuery,
                       Value staging);
  /// With dq_order: the counter of the query block from \p firstQuery (i32)
  /// of (\p batch, \p head), as a global address (i64).
  Value getOrderCounter(Value batch, Value head, Value firstQuery);
  /// With dq_order: how many key blocks add into the query block from
  /// \p firstQuery before this CTA's (i32). They add from the last key block
  /// to the first (FlashAttention-3's order for causal masks: the block that
  /// reaches a query block first adds first), so that is the number of key
  /// blocks after this CTA's that see it.
  Value getOrderRank(Value firstQuery);
  /// The index of the last key block of Sk (seqK's, computeCoordinates).
  Value getLastKeyBlock() {
    return b.sub(b.ceilDiv(seqK, b.index(geometry.blockKeys)), b.index(1));
  }
  /// Waits until \p counter reads \p rank, then orders the bulk reduce
  /// after the adds it counted.
  void waitForTurn(Value counter, Value rank);
  /// Once this CTA's bulk reduce has completed, counts it in \p counter.
  void passTurn(Value counter);
  /// dK or dV (\p accumulator) times \p factor, packed as the words of a
  /// WarpSlab of \p slabColumns (zeros past the accumulator's \p columns).
  SmallVector<std::array<Value, 2>> packGrads(Value accumulator,
                                              int64_t columns,
                                              int64_t slabColumns,
                                              float factor);
  /// Writes dK (times the scale) and dV of this consumer's keys and
  /// columns, and releases the K and V tiles: each warp stages its rows
  /// in its slab of the tiles, which no WGMMA reads any more, and stores
  /// them by TMA (storesByTma) or else by 16-byte chunks.
  void storeGrads(Value gradKey, Value gradValue, Value batch);
  /// With dkv_partial: writes dK (times the scale) and dV of this
  /// consumer's keys and columns as f32 into this CTA's slice of it, from
  /// the accumulators (8 bytes a lane: a warp's store covers 8 rows of 32
  /// bytes), and releases the K and V tiles.
  void storePartialGrads(Value gradKey, Value gradValue, Value batch);
  /// Where warp \p consumerWarp (i32, of the 8 consumer warps) keeps its
  /// rows of dK and dV: its first key among the CTA's (i32), and its first
  /// of D's (dk) and Dv's (dv) columns (i32).
  struct WarpGradPlace {
    Value key, keyColumn, valueColumn;
  };
  WarpGradPlace getWarpGradPlace(Value consumerWarp);
  void onThread(Value condition, llvm::function_ref<void()> then) {
    scf::IfOp::create(b, condition, [&](OpBuilder &, Location) {
      then();
      scf::YieldOp::create(b);
    });
  }
  void fenceAsyncGlobal() {
    NVVM::FenceProxyOp::create(
        b,
        NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_global),
        NVVM::SharedSpaceAttr());
  }
  /// Named barrier \p id of the consumers' threads. Where each consumer's
  /// code is emitted apart (`grads`), they reach it from different
  /// instructions, which nvvm.barrier's aligned form (every thread at the
  /// same one) does not allow: there barrier.sync without .aligned.
  void syncConsumers(int32_t id) {
    if (grads) {
      LLVM::CallIntrinsicOp::create(
          b, b.getStringAttr("llvm.nvvm.barrier.cta.sync.count"),
          ValueRange{b.i32(id), b.i32(kConsumerThreads)});
      return;
    }
    NVVM::BarrierOp::create(b, TypeRange{}, b.i32(id), b.i32(kConsumerThreads),
                            NVVM::BarrierReductionAttr(), Value());
  }
  /// Lane 0 of each consumer warp arrives on \p barrier.
  void release(Value barrier) { pipeline.release(barrier, threadId); }

  AttentionGradOp op;
  gpu::GPUFuncOp func;
  KernelBuilder &b;
  KernelShape shape;
  GradGeometry geometry;
  GradSharedLayout layout;
  AttentionWindow window;
  /// Whether dq_order orders the adds into dq_accum.
  bool ordered;
  /// storesGradsByTma: dK and dV stored by TMA, dk's and dv's maps among
  /// the parameters.
  bool storesByTma;
  /// The shape of a consumer's S^T: block_n its queries.
  KernelShape scoreShape;
  /// While a consumer of a balanced split is emitted (buildConsumer), its
  /// columns of dK, dV and dQ (geometry.consumerGrads); else null, and each
  /// consumer's columns follow from its index at run time.
  const GradGeometry::ConsumerGrads *grads = nullptr;
  /// The N of the emitted consumer's dK, dV and dQ: a balanced split's own,
  /// else the geometry's.
  int64_t getKeyGradColumns() const {
    return grads ? grads->key.count : geometry.keyGradColumns;
  }
  int64_t getValueGradColumns() const {
    return grads ? grads->value.count : geometry.valueGradColumns;
  }
  int64_t getQueryGradColumns() const {
    return grads ? grads->query.count : geometry.queryGradColumns;
  }
  /// The thread id (index): the whole CTA's, then each role's own copy,
  /// which LLVM may not hoist above setmaxnreg (computeCoordinates).
  Value threadId;
  TmaPipeline pipeline;
  WarpgroupGemm gemm;
  FragmentSoftmax masking;
  // Set by computeCoordinates(). slice (index) with dkv_partial only.
  Value seqQ, seqK, kvHead, slice, firstBatch, firstKey, steps, blocks,
      firstHead, firstBlock;
  /// The query blocks every key row of the tile sees whole (i32).
  Value unmaskedBegin, unmaskedEnd;
  TileCoordinates tile;
};

void GradDkvKernel::initBarriers() {
  onThread(b.eq(threadId, b.index(0)), [&] {
    Value one = b.i32(1), consumerWarps = b.i32(kConsumers * 4);
    NVVM::MBarrierInitOp::create(b, barrier(kTilesFull), one, Value());
    NVVM::MBarrierInitOp::create(b, barrier(kTilesEmpty), consumerWarps,
                                 Value());
    for (int64_t s = 0; s < geometry.stages; ++s) {
      NVVM::MBarrierInitOp::create(b, barrier(kBlockFull, b.i32(s)), b.i32(1),
                                   Value());
      NVVM::MBarrierInitOp::create(b, barrier(kBlockEmpty, b.i32(s)),
                                   consumerWarps, Value());
    }
    for (int64_t s = 0; s < geometry.stagingBuffers; ++s) {
      NVVM::MBarrierInitOp::create(b, barrier(kQueryGradStaged, b.i32(s)),
                                   b.i32(kConsumerThreads), Value());
      NVVM::MBarrierInitOp::create(b, barrier(kQueryGradFree, b.i32(s)), one,
                                   Value());
    }
    NVVM::FenceMbarrierInitOp::create(b);
  });
  gpu::BarrierOp::create(b);
}

void GradDkvKernel::forEachBatch(
    ValueRange initial,
    llvm::function_ref<SmallVector<Value>(Value, Value, ValueRange)> body) {
  SmallVector<Value> carried = {b.i32(0)};
  llvm::append_range(carried, initial);
  auto loop = scf::ForOp::create(
      b, firstBatch ? firstBatch : gpu::BlockIdOp::create(b, gpu::Dimension::z),
      memref::DimOp::create(b, arg(kGradQ), 0),
      gpu::GridDimOp::create(b, gpu::Dimension::z), carried);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  ValueRange arguments = loop.getRegionIterArgs();
  SmallVector<Value> results = {b.add(arguments[0], b.i32(1))};
  llvm::append_range(results, body(loop.getInductionVar(), arguments[0],
                                   arguments.drop_front()));
  scf::YieldOp::create(b, results);
}

SmallVector<Value> GradDkvKernel::buildProducer(Value batch, Value iteration,
                                                Value loaded) {
  // K and V, once the consumers are done with the previous batch's.
  Value parity = b.urem(iteration, b.i32(2));
  pipeline.wait(barrier(kTilesEmpty), b.xor_(parity, b.i32(1)));
  Value tilesFull = barrier(kTilesFull);
  pipeline.expectBytes(tilesFull, 2 * layout.keyTileBytes);
  Value keyRow = b.word(firstKey), kvHeadWord = b.word(kvHead);
  pipeline.loadTile(map(kKMap), address(layout.keys), tilesFull, keyRow,
                    kvHeadWord, b.word(batch), geometry.blockKeys,
                    geometry.blockKeys, shape.keyColumnBlocks);
  pipeline.loadTile(map(kVMap), address(layout.values), tilesFull, keyRow,
                    kvHeadWord, b.word(batch), geometry.blockKeys,
                    geometry.blockKeys, shape.valueColumnBlocks);

  SmallVector<Value> initial = {loaded};
  llvm::append_range(initial, getCarried(getFirstPlace()));
  auto loop = scf::ForOp::create(b, b.i32(0), steps, b.i32(1), initial);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  ValueRange carried = loop.getRegionIterArgs();
  Value current = carried[0];
  BlockPlace place =
      getCarriedPlace(loop.getInductionVar(), carried.drop_front());
  Value head = getHead(place), firstQuery = getFirstQuery(place);
  auto [stage, phase] = pipeline.getStageAndPhase(current);
  // The first pass over each buffer finds it empty: a fresh barrier
  // reports the phase before its first as complete.
  pipeline.wait(barrier(kBlockEmpty, stage), b.xor_(phase, b.i32(1)));
  Value full = barrier(kBlockFull, stage);
  pipeline.expectBytes(full, 2 * layout.blockBytes);
  pipeline.loadTile(map(kQMap),
                    address(layout.queries, stage, layout.blockBytes), full,
                    firstQuery, head, b.word(batch), geometry.blockQueries,
                    geometry.blockQueries, shape.keyColumnBlocks);
  pipeline.loadTile(map(kDoutMap),
                    address(layout.gradOut, stage, layout.blockBytes), full,
                    firstQuery, head, b.word(batch), geometry.blockQueries,
                    geometry.blockQueries, shape.valueColumnBlocks);
  SmallVector<Value> results = {b.add(current, b.i32(1))};
  llvm::append_range(results, getCarried(advance(place)));
  scf::YieldOp::create(b, results);
  return {loop.getResult(0)};
}

SmallVector<Value> GradDkvKernel::buildWriter(Value batch, Value written) {
  SmallVector<Value> initial = {written};
  llvm::append_range(initial, getCarried(getFirstPlace()));
  auto loop = scf::ForOp::create(b, b.i32(0), steps, b.i32(1), initial);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  ValueRange carried = loop.getRegionIterArgs();
  Value current = carried[0];
  BlockPlace place =
      getCarriedPlace(loop.getInductionVar(), carried.drop_front());
  Value head = getHead(place), firstQuery = getFirstQuery(place);
  auto [slot, phase] = getStagingSlotAndPhase(current);
  pipeline.wait(barrier(kQueryGradStaged, slot), phase);
  Value counter = ordered ? getOrderCounter(batch, head, firstQuery) : Value();
  if (ordered)
    waitForTurn(counter, getOrderRank(firstQuery));
  reduceQueryGrad(batch, head, firstQuery,
                  address(layout.staging, slot, layout.stagingBytes));
  // The add has read the buffer: the consumers may stage into it again.
  // (Ordered, it has also written dq_accum before the next CTA's turn.)
  NVVM::CpAsyncBulkWaitGroupOp::create(b, b.getI32IntegerAttr(0),
                                       ordered ? UnitAttr() : b.getUnitAttr());
  if (ordered)
    passTurn(counter);
  NVVM::MBarrierArriveOp::create(b, b.getI64Type(),
                                 barrier(kQueryGradFree, slot), Value(),
                                 NVVM::MemScopeKindAttr());
  SmallVector<Value> results = {b.add(current, b.i32(1))};
  llvm::append_range(results, getCarried(advance(place)));
  scf::YieldOp::create(b, results);
  return {loop.getResult(0)};
}

// The element offset in 32 bits (checkAttentionGradTensors refuses lse and
// delta that span more, and dq_order spans less than they do): memref.load's
// 64-bit arithmetic takes registers that the consumers' loop, and the
// producer warpgroup's 24, do not have.
Value GradDkvKernel::getWordAddress(Value tensor, Value batch, Value head,
                                    Value row) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, tensor);
  ValueRange strides = metadata.getStrides();
  Value offset = b.add(b.word(metadata.getOffset()),
                       b.add(b.mul(b.word(batch), b.word(strides[0])),
                             b.add(b.mul(head, b.word(strides[1])),
                                   b.mul(row, b.word(strides[2])))));
  Value base = arith::IndexCastUIOp::create(
      b, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, tensor));
  return b.add(
      base, b.mul(arith::ExtUIOp::create(b, b.getI64Type(), offset), b.i64(4)));
}

Value GradDkvKernel::loadRowTerm(AttentionGradOperand operand, Value batch,
                                 Value head, Value query) {
  Value pointer = LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), 1),
      getWordAddress(arg(operand), batch, head, query));
  return LLVM::LoadOp::create(b, b.getF32Type(), pointer, /*alignment=*/4);
}

// Where a balanced split gives the consumers GEMMs of different N, their
// accumulators differ in type: each consumer's code is emitted apart,
// behind a branch on the (warpgroup-uniform) consumer.
SmallVector<Value> GradDkvKernel::buildConsumer(Value batch, Value iteration,
                                                Value consumed) {
  if (geometry.consumerGrads.empty())
    return {buildConsumerBlocks(batch, iteration, consumed)};
  auto branch =
      scf::IfOp::create(b, TypeRange{consumed.getType()},
                        b.eq(getUniformConsumer(deriveLanes()), b.i32(0)),
                        /*withElseRegion=*/true);
  for (int64_t consumer = 0; consumer < kConsumers; ++consumer) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(consumer == 0 ? branch.thenBlock()
                                             : branch.elseBlock());
    grads = &geometry.consumerGrads[consumer];
    scf::YieldOp::create(b, buildConsumerBlocks(batch, iteration, consumed));
  }
  grads = nullptr;
  return {branch.getResult(0)};
}

// The loop is rotated so that no WGMMA is in flight across its back edge
// (ptxas serializes WGMMAs whose results a loop-carried value may read,
// C7514): iteration j hands off block j's dQ and, under that, runs block
// j + 1 up to its dQ.
Value GradDkvKernel::buildConsumerBlocks(Value batch, Value iteration,
                                         Value consumed) {
  // The first two blocks' row terms are loaded before the tiles land, so
  // that their latency passes under the TMA's rather than after it.
  BlockPlace firstPlace = getFirstPlace(), secondPlace = advance(firstPlace);
  std::pair<Value, Value> firstTerms[] = {loadRowTerms(batch, firstPlace),
                                          loadRowTerms(batch, secondPlace)};
  pipeline.wait(barrier(kTilesFull), b.urem(iteration, b.i32(2)));
  Value keyGradZero =
      LLVM::ZeroOp::create(b, getAccumulatorType(b, getKeyGradColumns()));
  Value valueGradZero =
      LLVM::ZeroOp::create(b, getAccumulatorType(b, getValueGradColumns()));
  Value queryGradZero =
      LLVM::ZeroOp::create(b, getAccumulatorType(b, getQueryGradColumns()));
  // Block 0, up to its dQ.
  auto first = scf::IfOp::create(
      b,
      TypeRange{keyGradZero.getType(), valueGradZero.getType(),
                queryGradZero.getType()},
      b.slt(b.i32(0), steps), /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(first.thenBlock());
    // Each block's row terms are stored two blocks ahead, so that the
    // dS^T barrier of the block between orders them (handOffQueryGrad).
    auto [scores, gradProbs] = issueScores(consumed);
    BlockPlace places[] = {firstPlace, secondPlace};
    for (auto [place, terms] : llvm::zip_equal(places, firstTerms))
      storeRowTerms(terms, place.step, b.add(consumed, place.step));
    syncConsumers(kTermsStored);
    auto [gradKey, gradValue, queryGrad] = buildBlock(
        firstPlace, consumed, keyGradZero, valueGradZero, scores, gradProbs);
    scf::YieldOp::create(b, ValueRange{gradKey, gradValue, queryGrad});
    b.setInsertionPointToStart(first.elseBlock());
    scf::YieldOp::create(b,
                         ValueRange{keyGradZero, valueGradZero, queryGradZero});
  }
  // Iteration j carries (getCarried) the place of block j + 1.
  SmallVector<Value> initial = {first.getResult(0), first.getResult(1),
                                first.getResult(2), consumed};
  llvm::append_range(initial, getCarried(secondPlace));
  auto loop = scf::ForOp::create(b, b.i32(0), steps, b.i32(1), initial);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    ValueRange carried = loop.getRegionIterArgs();
    Value step = loop.getInductionVar(), current = carried[3];
    Value next = b.add(step, b.i32(1));
    Value nextConsumed = b.add(current, b.i32(1));
    BlockPlace nextPlace = getCarriedPlace(next, carried.drop_front(4));
    BlockPlace laterPlace = advance(nextPlace);
    auto branch =
        scf::IfOp::create(b,
                          TypeRange{carried[0].getType(), carried[1].getType(),
                                    carried[2].getType()},
                          b.slt(next, steps), /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      std::pair<Value, Value> laterTerms = loadRowTerms(batch, laterPlace);
      auto [scores, gradProbs] = handOffQueryGrad(step, current, carried[2],
                                                  /*hasNext=*/true, laterTerms);
      auto [gradKey, gradValue, queryGrad] = buildBlock(
          nextPlace, nextConsumed, carried[0], carried[1], scores, gradProbs);
      scf::YieldOp::create(b, ValueRange{gradKey, gradValue, queryGrad});
      b.setInsertionPointToStart(branch.elseBlock());
      handOffQueryGrad(step, current, carried[2], /*hasNext=*/false, {});
      scf::YieldOp::create(b, carried.take_front(3));
    }
    SmallVector<Value> results = {branch.getResult(0), branch.getResult(1),
                                  branch.getResult(2), nextConsumed};
    llvm::append_range(results, getCarried(laterPlace));
    scf::YieldOp::create(b, results);
  }
  storeGrads(loop.getResult(0), loop.getResult(1), batch);
  return loop.getResult(3);
}

std::pair<Value, Value> GradDkvKernel::issueScores(Value consumed) {
  FragmentLanes lanes = deriveLanes();
  auto [stage, phase] = pipeline.getStageAndPhase(consumed);
  Value queries = address(layout.queries, stage, layout.blockBytes);
  Value gradOut = address(layout.gradOut, stage, layout.blockBytes);
  Value keyRows = getKeyRowsOffset(lanes);
  // Where the consumers split the head dim, each its half of the queries.
  if (geometry.splitHeadDim) {
    Value queryRows = b.mul(getUniformConsumer(lanes),
                            b.i32(geometry.scoreColumns * kSwizzleBytes));
    queries = b.add(queries, queryRows);
    gradOut = b.add(gradOut, queryRows);
  }
  pipeline.wait(barrier(kBlockFull, stage), phase);
  gemm.fence();
  Value scores = gemm.multiplyKMajor(
      b.add(address(layout.keys), keyRows), geometry.blockKeys, queries,
      geometry.blockQueries, geometry.scoreColumns, shape.headDim);
  gemm.commitGroup();
  Value gradProbs = gemm.multiplyKMajor(
      b.add(address(layout.values), keyRows), geometry.blockKeys, gradOut,
      geometry.blockQueries, geometry.scoreColumns, shape.valueHeadDim);
  gemm.commitGroup();
  return {scores, gradProbs};
}

std::tuple<Value, Value, Value>
GradDkvKernel::buildBlock(BlockPlace place, Value consumed, Value gradKey,
                          Value gradValue, Value scores, Value gradProbs) {
  FragmentLanes lanes = deriveLanes();
  Value firstQuery = getFirstQuery(place);
  auto [stage, phase] = pipeline.getStageAndPhase(consumed);
  Value queries = address(layout.queries, stage, layout.blockBytes);
  Value gradOut = address(layout.gradOut, stage, layout.blockBytes);
  Value terms = getRowTerms(consumed);
  auto [probabilities, packedProbs] = computeProbs(
      lanes, scores, terms, b.toIndex(firstQuery), needsMask(firstQuery));
  // dS^T (and P^T) into the buffers of this block's parity, last read by
  // the GEMMs of two blocks ago, which both consumers waited for before
  // the last block's dS^T barrier.
  Value parity = b.urem(consumed, b.i32(2));
  if (geometry.splitHeadDim) {
    // Each consumer's P^T and dS^T are half of the block's queries: both
    // halves meet in shared memory, and each consumer's dV, dK and dQ take
    // its half of D's columns.
    Value probs = address(layout.probs, parity, layout.gradScoresBytes);
    Value gradScores =
        address(layout.gradScores, parity, layout.gradScoresBytes);
    storeScoreTile(lanes, packedProbs, probs);
    gemm.waitGroup(0);
    storeScoreTile(lanes,
                   computeGradScores(lanes, gradProbs, probabilities, terms),
                   gradScores);
    pipeline.fenceAsyncShared();
    syncConsumers(kScoresStored);
    // B: this consumer's columns of dO (dV) or Q (dK), whose column
    // blocks are blockQueries rows of 128 bytes each.
    int64_t blockBytes = geometry.blockQueries * kSwizzleBytes;
    Value tileSplit =
        grads ? Value()
              : b.mul(getUniformConsumer(lanes),
                      b.i32(geometry.gradColumns / kBoxColumns * blockBytes));
    auto operandB = [&](Value tile, const GradGeometry::Columns *own) {
      return own ? b.add(tile, b.i32(own->first / kBoxColumns * blockBytes))
                 : b.add(tile, tileSplit);
    };
    gemm.fence();
    gradValue = gemm.accumulateSharedA(
        probs, operandB(gradOut, grads ? &grads->value : nullptr),
        geometry.blockQueries, getValueGradColumns(), gradValue);
    gradKey = gemm.accumulateSharedA(
        gradScores, operandB(queries, grads ? &grads->key : nullptr),
        geometry.blockQueries, getKeyGradColumns(), gradKey);
    gemm.commitGroup();
    Value queryGrad = issueQueryGrad(lanes, gradScores);
    gemm.commitGroup();
    // Q and dO were read by dK's and dV's WGMMAs: the producer may load
    // the next block under dQ's.
    gemm.waitGroup(1);
    release(barrier(kBlockEmpty, stage));
    gemm.waitGroup(0);
    return {gradKey, gradValue, queryGrad};
  }
  // dV's GEMM runs under dS^T's arithmetic.
  gemm.fence();
  gradValue =
      gemm.accumulateRegisterA(packedProbs, gradOut, geometry.blockQueries,
                               geometry.valueGradColumns, gradValue);
  gemm.commitGroup();
  // dP^T (the group before dV's) is complete.
  gemm.waitGroup(1);
  SmallVector<Value> packedGradScores =
      computeGradScores(lanes, gradProbs, probabilities, terms);
  gemm.fence();
  gradKey =
      gemm.accumulateRegisterA(packedGradScores, queries, geometry.blockQueries,
                               geometry.keyGradColumns, gradKey);
  gemm.commitGroup();

  // dS^T for dQ: both consumers' rows.
  Value gradScores = address(layout.gradScores, parity, layout.gradScoresBytes);
  storeScoreTile(lanes, packedGradScores, gradScores);
  pipeline.fenceAsyncShared();
  syncConsumers(kScoresStored);

  Value queryGrad = issueQueryGrad(lanes, gradScores);
  gemm.commitGroup();
  gemm.waitGroup(0);
  // Q and dO were read by dK's and dV's WGMMAs.
  release(barrier(kBlockEmpty, stage));
  return {gradKey, gradValue, queryGrad};
}

std::pair<Value, Value>
GradDkvKernel::handOffQueryGrad(Value step, Value consumed, Value queryGrad,
                                bool hasNext,
                                std::pair<Value, Value> laterTerms) {
  FragmentLanes lanes = deriveLanes();
  auto [slot, phase] = getStagingSlotAndPhase(consumed);
  Value staging = address(layout.staging, slot, layout.stagingBytes);
  // The buffer's last add (two blocks ago) has read it; a fresh barrier
  // reports the phase before its first as complete.
  pipeline.wait(barrier(kQueryGradFree, slot), b.xor_(phase, b.i32(1)));
  stageQueryGrad(lanes, queryGrad, staging);
  // Every thread's stores, made visible to the writer's bulk copy.
  pipeline.fenceAsyncShared();
  NVVM::MBarrierArriveOp::create(b, b.getI64Type(),
                                 barrier(kQueryGradStaged, slot), Value(),
                                 NVVM::MemScopeKindAttr());
  if (!hasNext)
    return {};
  std::pair<Value, Value> next = issueScores(b.add(consumed, b.i32(1)));
  // The block after next takes this block's terms buffer: every consumer
  // read it before this block's dS^T barrier, and reads the new terms
  // after the next block's.
  storeRowTerms(laterTerms, b.add(step, b.i32(2)), consumed);
  return next;
}

// The LSE and delta of a block, one query per consumer thread from
// the first (clamped: a query past Sq is masked), into shared
// memory, where each consumer thread reads those of its columns: held in
// registers they would take 32 of them across the GEMMs. Loaded a block
// ahead, so that their latency hides under a block's work.
std::pair<Value, Value> GradDkvKernel::loadRowTerms(Value batch,
                                                    BlockPlace place) {
  Value consumerThread = getConsumerThread();
  Type f32 = b.getF32Type();
  auto branch =
      scf::IfOp::create(b, TypeRange{f32, f32}, isTermLoader(place.step),
                        /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    Value head = getHead(place);
    Value query = b.smin(b.add(getFirstQuery(place), consumerThread),
                         b.sub(b.word(seqQ), b.i32(1)));
    // Scaled where stored (storeRowTerms), though LLVM folds that multiply
    // into this branch, next to the load, where the loading warps wait for
    // it: a stall that measured as slack (backward-notes v57).
    Value lse = loadRowTerm(kGradLse, batch, head, query);
    Value delta = loadRowTerm(kGradDelta, batch, head, query);
    scf::YieldOp::create(b, ValueRange{lse, delta});
    b.setInsertionPointToStart(branch.elseBlock());
    Value zero = b.f32(0.0f);
    scf::YieldOp::create(b, ValueRange{zero, zero});
  }
  return {branch.getResult(0), branch.getResult(1)};
}

void GradDkvKernel::storeRowTerms(std::pair<Value, Value> terms, Value step,
                                  Value consumed) {
  Value consumerThread = getConsumerThread();
  onThread(isTermLoader(step), [&] {
    Value slot = b.add(getRowTerms(consumed), b.mul(consumerThread, b.i32(4)));
    Value lse2 = b.fmul(terms.first, b.f32(static_cast<float>(M_LOG2E)));
    LLVM::StoreOp::create(b, lse2, pipeline.getSharedPointer(slot), 4);
    LLVM::StoreOp::create(b, terms.second,
                          pipeline.getSharedPointer(
                              b.add(slot, b.i32(geometry.blockQueries * 4))),
                          4);
  });
}

// The term of element i of the lane's fragment: 4 i' + 2 h + e is query
// column 8 i' + 2 t + e.
Value GradDkvKernel::loadTerm(const FragmentLanes &lanes, Value terms,
                              int64_t which, int64_t i) {
  Value laneTerms = b.add(terms, b.mul(b.word(lanes.quadCol), b.i32(8)));
  if (geometry.splitHeadDim)
    laneTerms =
        b.add(laneTerms, b.mul(b.word(getScoreColumn(lanes)), b.i32(4)));
  int64_t column = 8 * (i / 4) + i % 2;
  return LLVM::LoadOp::create(
      b, b.getF32Type(),
      pipeline.getSharedPointer(b.add(
          laneTerms, b.i32((which * geometry.blockQueries + column) * 4))),
      /*alignment=*/4);
}

Value GradDkvKernel::needsMask(Value firstQuery) {
  return isMaskedBlock(b, b.udiv(firstQuery, b.i32(geometry.blockQueries)),
                       unmaskedBegin, unmaskedEnd);
}

std::pair<SmallVector<Value>, SmallVector<Value>>
GradDkvKernel::computeProbs(const FragmentLanes &lanes, Value scores,
                            Value terms, Value firstQueryIndex, Value masked) {
  // Element 4 i + 2 h + e is key row g + 8 h, query column 8 i + 2 t + e.
  gemm.waitGroup(1);
  int64_t count = geometry.scoreColumns / 2;
  SmallVector<Value> values = unpackAccumulator(b, scores, count);
  if (shape.softcap)
    shape.softcap->apply(b, values);
  if (geometry.splitHeadDim)
    firstQueryIndex = b.add(firstQueryIndex, getScoreColumn(lanes));
  // Only the blocks at the diagonal, a window's edges or past Sq need the
  // mask: in the others its compares and selects on every score were a
  // fifth of the loop's instructions.
  values = maskWhere(b, masked, values, [&](SmallVectorImpl<Value> &scores) {
    masking.applyMask(scores, firstQueryIndex, lanes, tile,
                      FragmentSoftmax::MaskForm::Bits);
  });
  Value scaleLog2 = b.f32(shape.scaleLog2);
  SmallVector<Value> probabilities(count), packed;
  for (int64_t i = 0; i < count; ++i)
    // A masked score is -inf: P = 0. So is one of a query that saw no key
    // in the forward (LSE +inf).
    probabilities[i] =
        emitExp2(b, math::FmaOp::create(b, values[i], scaleLog2,
                                        arith::NegFOp::create(
                                            b, loadTerm(lanes, terms, 0, i))));
  for (int64_t i = 0; i < count; i += 2)
    packed.push_back(
        packPair(b, shape.elementType, probabilities[i], probabilities[i + 1]));
  // With a softcap, dS (computeGradScores) is of the raw scores: P times
  // the cap's slope takes P's place there (dV's P^T, packed, keeps P).
  if (shape.softcap)
    for (int64_t i = 0; i < count; ++i)
      probabilities[i] =
          b.fmul(probabilities[i], shape.softcap->getSlope(b, values[i]));
  return {probabilities, packed};
}

SmallVector<Value>
GradDkvKernel::computeGradScores(const FragmentLanes &lanes, Value gradProbs,
                                 ArrayRef<Value> probabilities, Value terms) {
  int64_t count = geometry.scoreColumns / 2;
  SmallVector<Value> gradProbValues = unpackAccumulator(b, gradProbs, count);
  auto gradScore = [&](int64_t j) {
    return b.fmul(probabilities[j],
                  arith::SubFOp::create(b, gradProbValues[j],
                                        loadTerm(lanes, terms, 1, j)));
  };
  SmallVector<Value> packed;
  for (int64_t i = 0; i < count; i += 2)
    packed.push_back(
        packPair(b, shape.elementType, gradScore(i), gradScore(i + 1)));
  return packed;
}

// Each consumer its 64 of the block's queries over all of D (A from
// column block c of dS^T), or all 64 over its half of D's columns (B from
// K's column blocks from D / 128 c).
Value GradDkvKernel::issueQueryGrad(const FragmentLanes &lanes,
                                    Value gradScores) {
  gemm.fence();
  Value consumer = getUniformConsumer(lanes);
  int64_t tileBytes = geometry.blockKeys * kSwizzleBytes;
  if (geometry.queryGradByRows)
    return gemm.multiplyMnMajor(
        b.add(gradScores, b.mul(consumer, b.i32(tileBytes))),
        address(layout.keys), geometry.blockKeys, geometry.queryGradColumns);
  if (grads)
    return gemm.multiplyMnMajor(
        gradScores,
        address(layout.keys + grads->query.first / kBoxColumns * tileBytes),
        geometry.blockKeys, grads->query.count);
  int64_t half = geometry.queryGradColumns;
  assert(half % kBoxColumns == 0 && "a consumer's columns are whole blocks");
  return gemm.multiplyMnMajor(
      gradScores,
      address(layout.keys, consumer, (half / kBoxColumns) * tileBytes),
      geometry.blockKeys, half);
}

// The 128-byte swizzle of a TMA tile: 16-byte chunk c of row r sits at
// chunk c ^ (r % 8). Element 4 i + 2 h + e of the lane is key row
// g + 8 h (so r % 8 = g), query 8 i + 2 t + e of the consumer's (from
// getScoreColumn): the pair is word t of the query's chunk.
void GradDkvKernel::storeScoreTile(const FragmentLanes &lanes,
                                   ArrayRef<Value> packed, Value tile) {
  Value laneRow = b.word(lanes.laneRow);
  Value swizzle = b.urem(laneRow, b.i32(8));
  Value quad = b.mul(b.word(lanes.quadCol), b.i32(4));
  Value firstChunk = geometry.splitHeadDim
                         ? b.word(b.udiv(getScoreColumn(lanes), b.index(8)))
                         : Value();
  for (int64_t i = 0; i < geometry.scoreColumns / 8; ++i)
    for (int64_t h = 0; h < 2; ++h) {
      // Queries past 64 in the next column block (128-query blocks).
      int64_t columnBlock = i / 8, inBlock = i % 8;
      Value block = columnBlock
                        ? b.add(tile, b.i32(columnBlock * geometry.blockKeys *
                                            kSwizzleBytes))
                        : tile;
      Value row = b.add(laneRow, b.i32(8 * h));
      Value chunk = b.xor_(firstChunk ? b.add(firstChunk, b.i32(inBlock))
                                      : b.i32(inBlock),
                           swizzle);
      Value at = b.add(block, b.add(b.mul(row, b.i32(kSwizzleBytes)),
                                    b.add(b.mul(chunk, b.i32(16)), quad)));
      LLVM::StoreOp::create(b, packed[2 * i + h], pipeline.getSharedPointer(at),
                            /*alignment=*/4);
    }
}

// Element 4 i + 2 h + e of the lane's m64nN dQ is query row
// 16 w + g + 8 h (of the consumer's 64 where it has rows of its own),
// column 8 i + 2 t + e (of its half of the tile's columns where it has
// those): in dq_accum's layout (getQueryGradColumn) each half-warp's 16
// lanes of a store land in 8 different 16-byte bank groups.
//
// The buffer holds the block's rows of D f32, dq_accum's, which the writer
// adds; where the consumers split the tile's columns and the second's
// reach past D, those (zeros) follow, dense [rows][tile columns - D], and
// are never added. They are stored only so that dQ's accumulator stays
// whole: with part of it dead, ptxas serialized the WGMMAs (C7511).
void GradDkvKernel::stageQueryGrad(const FragmentLanes &lanes, Value gradQuery,
                                   Value staging) {
  int64_t columns = getQueryGradColumns();
  int64_t headDim = shape.headDim, pastColumns = shape.keyColumns - headDim;
  SmallVector<Value> values = unpackAccumulator(b, gradQuery, columns / 2);
  Value laneRow = b.urem(lanes.laneRow, b.index(kWgmmaM));
  Value consumer = getConsumer(lanes);
  Value laneColumn = b.mul(lanes.quadCol, b.index(2));
  if (geometry.queryGradByRows)
    laneRow = b.add(laneRow, b.mul(consumer, b.index(kWgmmaM)));
  else if (grads)
    laneColumn = b.add(b.index(grads->query.first), laneColumn);
  else
    laneColumn = b.add(b.mul(consumer, b.index(columns)), laneColumn);
  auto pairType = VectorType::get({2}, b.getF32Type());
  auto storePair = [&](Value at, int64_t i, int64_t h) {
    Value pair = vector::FromElementsOp::create(
        b, pairType,
        ValueRange{values[4 * i + 2 * h], values[4 * i + 2 * h + 1]});
    LLVM::StoreOp::create(b, pair, pipeline.getSharedPointer(at),
                          /*alignment=*/8);
  };
  // The first of the last consumer's columns (of D's, or past them): the
  // consumers' columns end there plus `columns`.
  int64_t lastConsumerColumn = geometry.queryGradByRows ? 0
                               : grads                  ? grads->query.first
                                                        : columns;
  // Where every consumer's columns lie in whole groups of 32 within D, a
  // lane's 2 x columns / 8 stores take four addresses and constant
  // offsets. Pair i, h is at byte 4 D row + 4 laneColumn + 32 (i ^ r)
  // (row = laneRow + 8 h, r = row % 4: getQueryGradChunkXor is 2 r chunks,
  // which keeps i / 4), that is origin ^ 32 (i % 4) plus 128 (i / 4) +
  // 32 D h, where origin = 4 D laneRow + 4 laneColumn + 32 r: r alone sets
  // its bits 5 and 6 (laneColumn is the consumer's first column, a
  // multiple of 32, plus 2 t < 8).
  if (headDim % kQueryGradGroupColumns == 0 &&
      lastConsumerColumn + columns <= headDim) {
    Value row = b.word(laneRow);
    Value origin = b.add(b.add(b.mul(row, b.i32(4 * headDim)),
                               b.mul(b.word(laneColumn), b.i32(4))),
                         b.mul(getQueryGradChunkXor(b, row), b.i32(16)));
    SmallVector<Value> bases;
    for (int64_t c = 0; c < 4; ++c)
      bases.push_back(
          b.add(staging, c ? b.xor_(origin, b.i32(32 * c)) : origin));
    for (int64_t i = 0; i < columns / 8; ++i)
      for (int64_t h = 0; h < 2; ++h)
        storePair(b.add(bases[i % 4], b.i32(128 * (i / 4) + 32 * headDim * h)),
                  i, h);
    return;
  }
  for (int64_t i = 0; i < columns / 8; ++i)
    for (int64_t h = 0; h < 2; ++h) {
      Value row = b.add(laneRow, b.index(8 * h));
      Value column = b.add(laneColumn, b.index(8 * i));
      auto inD = [&] {
        return b.add(b.mul(row, b.index(headDim)),
                     getQueryGradColumn(b, row, column, headDim));
      };
      auto pastD = [&] {
        return b.add(b.index(geometry.blockQueries * headDim),
                     b.add(b.mul(row, b.index(pastColumns)),
                           b.sub(column, b.index(headDim))));
      };
      // Whether the column is within D is known here, unless the consumers
      // split the columns and the second's is past D: then it depends on
      // the consumer. \p first is the last consumer's column.
      // A balanced split's columns are all within D.
      int64_t first = lastConsumerColumn + 8 * i;
      Value element;
      if (first < headDim)
        element = inD();
      else if (geometry.queryGradByRows)
        element = pastD();
      else
        element = arith::SelectOp::create(b, b.slt(column, b.index(headDim)),
                                          inD(), pastD());
      storePair(b.add(staging, b.mul(b.word(element), b.i32(4))), i, h);
    }
}

void GradDkvKernel::reduceQueryGrad(Value batch, Value head, Value firstQuery,
                                    Value staging) {
  Value rows =
      b.smin(b.sub(b.word(seqQ), firstQuery), b.i32(geometry.blockQueries));
  Value accumulator = arg(kGradDqAccum);
  auto metadata = memref::ExtractStridedMetadataOp::create(b, accumulator);
  Value element = b.add(
      metadata.getOffset(),
      b.add(b.mul(batch, metadata.getStrides()[0]),
            b.add(b.mul(b.toIndex(head), metadata.getStrides()[1]),
                  b.mul(b.toIndex(firstQuery), metadata.getStrides()[2]))));
  Value pointer =
      memref::ExtractAlignedPointerAsIndexOp::create(b, accumulator);
  Value global = arith::IndexCastUIOp::create(
      b, b.getI64Type(), b.add(pointer, b.mul(element, b.index(4))));
  Value bytes = b.mul(rows, b.i32(shape.headDim * 4));
  LLVM::InlineAsmOp::create(
      b, TypeRange{}, ValueRange{global, staging, bytes},
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], "
      "[$1], $2;",
      "l,r,r", /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
  NVVM::CpAsyncBulkCommitGroupOp::create(b);
}

Value GradDkvKernel::getOrderCounter(Value batch, Value head,
                                     Value firstQuery) {
  return getWordAddress(arg(kGradDqOrder), batch, head,
                        b.udiv(firstQuery, b.i32(kQueryGradOrderBlock)));
}

// Key block n' sees query block m iff first(n') <= m < end(n') (the
// transposed KeyBlockRange), both nondecreasing in n'. Past this CTA's
// block n every end(n') > m already, so the blocks after n that see m are
// those up to the last n' with first(n') <= m: with the transposed
// window's left side (the forward's right), first(n') = max(floor((n' bk +
// c) / bq), 0), c = Sq - Sk - left, which is at most m iff n' <= ((m + 1)
// bq - 1 - c) / bk. That numerator is at least n bk (n qualifies) and
// below 2^32 (Sk < 2^31; a side past 2^30 keys, wider than any sequence
// that fits in memory, is clamped there), so it is computed in
// 32 bits, unsigned, in the writer's few registers.
Value GradDkvKernel::getOrderRank(Value firstQuery) {
  Value last = b.word(getLastKeyBlock());
  if (window.left) {
    int64_t left = std::min<int64_t>(*window.left, int64_t(1) << 30);
    Value numerator = b.sub(b.add(b.add(firstQuery, b.word(seqK)),
                                  b.i32(left + geometry.blockQueries - 1)),
                            b.word(seqQ));
    last = b.smin(last, b.udiv(numerator, b.i32(geometry.blockKeys)));
  }
  return b.sub(last, b.word(b.udiv(firstKey, b.index(geometry.blockKeys))));
}

void GradDkvKernel::waitForTurn(Value counter, Value rank) {
  auto spin = scf::WhileOp::create(b, TypeRange{}, ValueRange{});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(b.createBlock(&spin.getBefore()));
    auto load = LLVM::InlineAsmOp::create(
        b, b.getI32Type(), ValueRange{counter},
        "ld.acquire.gpu.global.b32 $0, [$1];", "=r,l",
        /*has_side_effects=*/true, /*is_align_stack=*/false,
        LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
    scf::ConditionOp::create(b, b.ne(load.getResult(0), rank), ValueRange{});
    b.setInsertionPointToStart(b.createBlock(&spin.getAfter()));
    scf::YieldOp::create(b);
  }
  // The earlier adds (acquired) before this thread's async-proxy reduce.
  fenceAsyncGlobal();
}

void GradDkvKernel::passTurn(Value counter) {
  // The reduce's writes (async proxy, complete) before the release.
  fenceAsyncGlobal();
  LLVM::InlineAsmOp::create(b, TypeRange{}, ValueRange{counter},
                            "red.release.gpu.global.add.u32 [$0], 1;", "l",
                            /*has_side_effects=*/true, /*is_align_stack=*/false,
                            LLVM::TailCallKind::None, LLVM::AsmDialectAttr(),
                            ArrayAttr());
}

// Element 4 i + 2 h + e of the lane's m64nN accumulator is key row
// g + 8 h of its warp's 16, column 8 i + 2 t + e of its consumer's (all of
// D, or its part where the consumers split the head dim).
SmallVector<std::array<Value, 2>> GradDkvKernel::packGrads(Value accumulator,
                                                           int64_t columns,
                                                           int64_t slabColumns,
                                                           float factor) {
  return packSlabWords(b, shape.elementType, accumulator, columns, slabColumns,
                       [&](Value element, int64_t) {
                         return factor == 1.0f ? element
                                               : b.fmul(element, b.f32(factor));
                       });
}

GradDkvKernel::WarpGradPlace
GradDkvKernel::getWarpGradPlace(Value consumerWarp) {
  int64_t consumerWarps = kWarpgroupThreads / kThreadsPerWarp;
  WarpGradPlace place{b.mul(consumerWarp, b.i32(kWarpRows)), b.i32(0),
                      b.i32(0)};
  if (!geometry.splitHeadDim)
    return place;
  place.key =
      b.mul(b.urem(consumerWarp, b.i32(consumerWarps)), b.i32(kWarpRows));
  if (grads) {
    place.keyColumn = b.i32(grads->key.first);
    place.valueColumn = b.i32(grads->value.first);
  } else {
    place.keyColumn = place.valueColumn =
        b.mul(b.udiv(consumerWarp, b.i32(consumerWarps)),
              b.i32(geometry.gradColumns));
  }
  return place;
}

void GradDkvKernel::storePartialGrads(Value gradKey, Value gradValue,
                                      Value batch) {
  auto [consumerWarp, lane] = WarpLanes::derive(b, threadId);
  WarpGradPlace place = getWarpGradPlace(consumerWarp);
  Value g = b.udiv(lane, b.i32(4)), t = b.urem(lane, b.i32(4));
  Value partial = arg(kGradDkvPartial);
  auto pairType = VectorType::get({2}, b.getF32Type());
  // Element 4 i + 2 h + e of the lane's accumulator is key row g + 8 h of
  // its warp's 16, column 8 i + 2 t + e of its consumer's (from
  // \p firstColumn); a partial row holds dk's D columns, then dv's Dv.
  auto store = [&](Value accumulator, int64_t columns, Value firstColumn,
                   int64_t limit, int64_t rowOffset, float factor) {
    SmallVector<Value> values = unpackAccumulator(b, accumulator, columns / 2);
    // Only a consumer's columns from 0 stay within the limit by their
    // count; a split's start at run time.
    bool checksColumns = geometry.splitHeadDim || columns > limit;
    for (int64_t h = 0; h < 2; ++h) {
      Value key =
          b.add(firstKey, b.toIndex(b.add(place.key, b.add(g, b.i32(8 * h)))));
      Value keyInside = b.slt(key, seqK);
      for (int64_t i = 0; i < columns / 8; ++i) {
        Value column =
            b.add(firstColumn, b.add(b.i32(8 * i), b.mul(t, b.i32(2))));
        Value inside = checksColumns
                           ? b.and_(keyInside, b.slt(column, b.i32(limit)))
                           : keyInside;
        onThread(inside, [&] {
          SmallVector<Value, 2> elements;
          for (int64_t e = 0; e < 2; ++e) {
            Value element = values[4 * i + 2 * h + e];
            elements.push_back(factor == 1.0f ? element
                                              : b.fmul(element, b.f32(factor)));
          }
          Value pair = vector::FromElementsOp::create(b, pairType, elements);
          vector::StoreOp::create(
              b, pair, partial,
              ValueRange{slice, batch, kvHead, key,
                         b.toIndex(b.add(column, b.i32(rowOffset)))},
              /*nontemporal=*/false, llvm::MaybeAlign(8));
        });
      }
    }
  };
  store(gradKey, getKeyGradColumns(), place.keyColumn, shape.headDim, 0,
        shape.scale);
  store(gradValue, getValueGradColumns(), place.valueColumn, shape.valueHeadDim,
        shape.headDim, 1.0f);
  // Each warp has completed its WGMMAs (each block waits for its dQ), and
  // the tiles are free once all eight have arrived: no tile was written.
  release(barrier(kTilesEmpty));
}

void GradDkvKernel::storeGrads(Value gradKey, Value gradValue, Value batch) {
  if (op.getDkvPartial())
    return storePartialGrads(gradKey, gradValue, batch);
  // Either consumer's last dQ reads all of K: both have completed every
  // WGMMA (each block waits for its dQ) before either overwrites a tile.
  syncConsumers(kTilesRead);
  auto [consumerWarp, lane] = WarpLanes::derive(b, threadId);
  int64_t consumerWarps = kWarpgroupThreads / kThreadsPerWarp;
  // A K or V tile holds a slab for each of the 8 consumer warps: of the
  // tile's half of the columns, or where a balanced split is emitted of
  // the consumer's own (WarpSlab::fitColumns), consumer 1's after consumer
  // 0's: a run of one block and one of two take at most 64 + 128 columns.
  int64_t columns = geometry.gradColumns;
  using Pick = GradGeometry::Columns GradGeometry::ConsumerGrads::*;
  auto slabIn = [&](int64_t tile, Pick which) -> WarpSlab {
    if (!grads)
      return {b.add(address(tile),
                    b.mul(consumerWarp, b.i32(WarpSlab::getBytes(columns)))),
              columns};
    auto width = [&](const GradGeometry::ConsumerGrads &consumer) {
      return WarpSlab::fitColumns((consumer.*which).count);
    };
    int64_t own = width(*grads);
    int64_t before =
        grads == &geometry.consumerGrads[0]
            ? 0
            : consumerWarps *
                  WarpSlab::getBytes(width(geometry.consumerGrads[0]));
    Value warp = b.urem(consumerWarp, b.i32(consumerWarps));
    return {b.add(address(tile + before),
                  b.mul(warp, b.i32(WarpSlab::getBytes(own)))),
            own};
  };
  WarpSlab keySlab = slabIn(layout.keys, &GradGeometry::ConsumerGrads::key);
  WarpSlab valueSlab =
      slabIn(layout.values, &GradGeometry::ConsumerGrads::value);
  keySlab.store(
      b, pipeline, lane,
      packGrads(gradKey, getKeyGradColumns(), keySlab.columns, shape.scale));
  valueSlab.store(
      b, pipeline, lane,
      packGrads(gradValue, getValueGradColumns(), valueSlab.columns, 1.0f));
  if (storesByTma) {
    WarpGradPlace place = getWarpGradPlace(consumerWarp);
    // The TMA (async proxy) reads what stmatrix wrote: every lane's writes
    // fenced, then lane 0 issues both boxes.
    pipeline.fenceAsyncShared();
    syncWarp(b);
    onThread(b.eq(lane, b.i32(0)), [&] {
      Value key = b.add(b.word(firstKey), place.key);
      auto storeBox = [&](GradMap grad, const WarpSlab &slab, Value column) {
        NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
            b, map(grad), pipeline.getSharedPointer(slab.base),
            ValueRange{column, key, b.word(kvHead), b.word(batch)}, Value(),
            NVVM::TMAStoreMode::TILE, Value());
      };
      storeBox(kDkMap, keySlab, place.keyColumn);
      storeBox(kDvMap, valueSlab, place.valueColumn);
      NVVM::CpAsyncBulkCommitGroupOp::create(b);
      // The tiles are free once the TMA has read the slabs; their writes
      // complete with the kernel.
      NVVM::CpAsyncBulkWaitGroupOp::create(b, b.getI32IntegerAttr(0),
                                           b.getUnitAttr());
    });
    release(barrier(kTilesEmpty));
    return;
  }
  syncWarp(b);
  WarpGradPlace place = getWarpGradPlace(consumerWarp);
  Value warpKey = place.key, firstKeyColumn = place.keyColumn,
        firstValueColumn = place.valueColumn;
  // The slab's columns past each accumulator's are zeros, not theirs: past
  // D (dk) and Dv (dv), or a balanced split's other consumer's; such a
  // split stores only as many as its wider accumulator has.
  int64_t keyLimit = grads ? grads->key.count : shape.headDim;
  int64_t valueLimit = grads ? grads->value.count : shape.valueHeadDim;
  int64_t storedColumns =
      grads ? int64_t(llvm::alignTo(std::max(keyLimit, valueLimit), 8))
            : columns;
  auto chunkType = VectorType::get({8}, shape.elementType);
  forEachLaneChunk(b, lane, storedColumns, [&](Value row, Value chunk) {
    auto load = [&](const WarpSlab &slab) -> Value {
      return vector::BitCastOp::create(b, chunkType,
                                       slab.loadChunk(b, pipeline, row, chunk));
    };
    // A balanced split's slabs differ in width: each is read only where
    // its chunk is stored.
    Value gradKeyChunk, gradValueChunk;
    if (!grads) {
      gradKeyChunk = load(keySlab);
      gradValueChunk = load(valueSlab);
    }
    Value key = b.add(firstKey, b.toIndex(b.add(warpKey, row)));
    Value slabColumn = b.mul(chunk, b.i32(8));
    // The tile's split compares D's columns (from the consumer's first)
    // with D and Dv, a balanced split the slab's with its own counts.
    Value column = grads ? slabColumn : b.add(firstKeyColumn, slabColumn);
    int64_t bound = grads ? storedColumns : shape.keyColumns;
    auto inRange = [&](int64_t limit) {
      Value inside = b.slt(key, seqK);
      return limit < bound ? b.and_(inside, b.slt(column, b.i32(limit)))
                           : inside;
    };
    auto store = [&](Value data, AttentionGradOperand operand,
                     Value firstColumn) {
      Value at = grads ? b.add(firstColumn, slabColumn) : column;
      vector::StoreOp::create(b, data, arg(operand),
                              ValueRange{batch, kvHead, key, b.toIndex(at)},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
    };
    if (!grads && shape.headDim == shape.valueHeadDim) {
      onThread(inRange(keyLimit), [&] {
        store(gradKeyChunk, kGradDk, firstKeyColumn);
        store(gradValueChunk, kGradDv, firstValueColumn);
      });
    } else {
      onThread(inRange(keyLimit), [&] {
        store(grads ? load(keySlab) : gradKeyChunk, kGradDk, firstKeyColumn);
      });
      onThread(inRange(valueLimit), [&] {
        store(grads ? load(valueSlab) : gradValueChunk, kGradDv,
              firstValueColumn);
      });
    }
  });
  // The producer's next TMA loads into the tiles (async proxy) come after
  // these generic-proxy accesses, and after every lane's.
  pipeline.fenceAsyncShared();
  syncWarp(b);
  release(barrier(kTilesEmpty));
}

void GradDkvKernel::computeCoordinates(Value ctaThreadId) {
  threadId = hideFromHoisting(b, ctaThreadId);
  seqQ = memref::DimOp::create(b, arg(kGradQ), 2);
  seqK = memref::DimOp::create(b, arg(kGradK), 2);
  kvHead = hideFromHoisting(b, gpu::BlockIdOp::create(b, gpu::Dimension::y));
  firstBatch = Value();
  // Ordered, the key blocks launch from the last: a CTA waits only for
  // CTAs launched before it, which are running or done.
  Value keyBlock =
      hideFromHoisting(b, gpu::BlockIdOp::create(b, gpu::Dimension::x));
  if (ordered)
    keyBlock = b.sub(getLastKeyBlock(), keyBlock);
  else if (takesLongestFirst())
    std::tie(keyBlock, kvHead, firstBatch) =
        getLongestFirstTile(keyBlock, kvHead);
  // With dkv_partial the grid's heads are (KV head, slice) pairs.
  Value slices;
  if (op.getDkvPartial()) {
    slices = memref::DimOp::create(b, arg(kGradDkvPartial), 0);
    slice = b.urem(kvHead, slices);
    kvHead = b.udiv(kvHead, slices);
  }
  firstKey = b.mul(keyBlock, b.index(geometry.blockKeys));
  // The tile as the forward's code sees it: rows are keys, the "keys" are
  // queries, and the diagonal is Sq - Sk (AttentionWindow::transposed).
  tile.seqQ = seqK;
  tile.seqK = seqQ;
  tile.firstRow = firstKey;
  tile.head = kvHead;
  tile.computeRange(b, geometry.blockKeys, geometry.blockQueries, window);
  // The query blocks of every query head of the group, in 32 bits (blocks,
  // heads and queries fit: TMA coordinates are 32-bit).
  Value group = b.word(b.udiv(memref::DimOp::create(b, arg(kGradQ), 1),
                              memref::DimOp::create(b, arg(kGradK), 1)));
  Value blockCount = b.word(b.smax(
      b.sub(tile.range.lastBlockEnd, tile.range.firstBlock), b.index(0)));
  // A slice walks ceil(G / S) of the group's heads, the last ones fewer
  // (none past the group).
  Value heads = group, sliceFirstHead = b.i32(0);
  if (slices) {
    Value sliceCount = b.word(slices);
    Value perSlice =
        b.udiv(b.add(group, b.sub(sliceCount, b.i32(1))), sliceCount);
    sliceFirstHead = b.mul(b.word(slice), perSlice);
    heads = b.smax(b.smin(b.sub(group, sliceFirstHead), perSlice), b.i32(0));
  }
  steps = b.mul(blockCount, heads);
  blocks = b.umax(blockCount, b.i32(1));
  firstHead = b.add(b.mul(b.word(kvHead), group), sliceFirstHead);
  firstBlock = b.word(tile.range.firstBlock);
  unmaskedBegin = b.word(tile.range.unmaskedBegin);
  unmaskedEnd = b.word(tile.range.unmaskedEnd);
}

std::tuple<Value, Value, Value>
GradDkvKernel::getLongestFirstTile(Value gridBlock, Value gridHead) {
  auto grid = [&](gpu::Dimension dimension) {
    return b.word(gpu::GridDimOp::create(b, dimension));
  };
  Value blocks = grid(gpu::Dimension::x), kvHeads = grid(gpu::Dimension::y);
  Value heads = b.mul(kvHeads, grid(gpu::Dimension::z));
  Value gridBatch =
      b.word(hideFromHoisting(b, gpu::BlockIdOp::create(b, gpu::Dimension::z)));
  Value cta =
      b.add(b.word(gridBlock),
            b.mul(blocks, b.add(b.word(gridHead), b.mul(kvHeads, gridBatch))));
  auto [block, head] = getLongestFirstCta(b, cta, blocks, heads);
  return {b.toIndex(block), b.toIndex(b.urem(head, kvHeads)),
          b.toIndex(b.udiv(head, kvHeads))};
}

void GradDkvKernel::build() {
  initBarriers();
  Value ctaThreadId = threadId;
  Value warpgroup = b.udiv(threadId, b.index(kWarpgroupThreads));
  // The consumers' setmaxnreg waits until the producer's has freed
  // enough of the registers the CTA launched with (nvvm.maxnreg each).
  RegisterSplit split = RegisterSplit::get(kConsumers);
  assert(split.producer * kWarpgroupThreads +
                 split.consumer * kConsumerThreads <=
             getLaunchRegisters() * (kConsumers + 1) * kWarpgroupThreads &&
         "the register split fits what the CTA launches with");
  scf::IfOp::create(
      b, b.eq(warpgroup, b.index(0)),
      [&](OpBuilder &, Location) {
        setMaxRegisters(b, split.producer, /*increase=*/false);
        computeCoordinates(ctaThreadId);
        onThread(b.eq(threadId, b.index(0)), [&] {
          forEachBatch({b.i32(0)},
                       [&](Value batch, Value iteration, ValueRange carried) {
                         return buildProducer(batch, iteration, carried[0]);
                       });
        });
        onThread(b.eq(threadId, b.index(kWriterThread)), [&] {
          forEachBatch({b.i32(0)}, [&](Value batch, Value, ValueRange carried) {
            return buildWriter(batch, carried[0]);
          });
          // No wait for the last adds: each block's loop has waited for
          // its add to read the staging buffer, and their writes complete
          // with the kernel (as the dK/dV TMA stores' do), so the CTA need
          // not outlive them.
        });
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &, Location) {
        setMaxRegisters(b, split.consumer, /*increase=*/true);
        computeCoordinates(ctaThreadId);
        forEachBatch({b.i32(0)},
                     [&](Value batch, Value iteration, ValueRange carried) {
                       return buildConsumer(batch, iteration, carried[0]);
                     });
        scf::YieldOp::create(b);
      });
}

} // namespace

Value fmha::getQueryGradChunkXor(KernelBuilder &b, Value row) {
  auto constant = [&](int64_t value) {
    return row.getType().isIndex() ? b.index(value) : b.i32(value);
  };
  return b.mul(b.urem(row, constant(4)), constant(2));
}

Value fmha::getQueryGradColumn(KernelBuilder &b, Value row, Value column,
                               int64_t headDim) {
  Value chunk = b.udiv(column, b.index(4));
  Value permuted = b.xor_(chunk, getQueryGradChunkXor(b, row));
  int64_t wholeGroups = headDim / kQueryGradGroupColumns;
  if (headDim % kQueryGradGroupColumns)
    permuted = arith::SelectOp::create(
        b, b.slt(column, b.index(wholeGroups * kQueryGradGroupColumns)),
        permuted, chunk);
  return b.add(b.mul(permuted, b.index(4)), b.urem(column, b.index(4)));
}

gpu::GPUFuncOp fmha::createAttentionGradDkvSm90a(AttentionGradOp op,
                                                 gpu::GPUModuleOp kernels) {
  KernelBuilder b(op.getLoc(), op.getContext());
  LaunchContract contract;
  contract.operands = getAttentionGradOperandNames(op);
  contract.threads = (kConsumers + 1) * kWarpgroupThreads;
  contract.sharedBytes =
      GradSharedLayout::get(getTileColumns(op), getElementBytes(op)).totalBytes;
  GradGeometry geometry = GradGeometry::get(getTileColumns(op));
  uint64_t blockKeys = geometry.blockKeys;
  // With dkv_partial a (KV head, slice) pair per y.
  GridAxis heads{{{kGradK, 1}}};
  if (op.getDkvPartial())
    heads.factors.push_back(
        {getAttentionGradOperandIndex(op, kGradDkvPartial), 0});
  contract.grid = {GridAxis{{{kGradK, 2, blockKeys}}}, heads,
                   GridAxis{{{kGradK, 0}}, kMaxGridDimY}};
  auto rows = [](int64_t count) {
    return SmallVector<uint32_t>{static_cast<uint32_t>(count),
                                 static_cast<uint32_t>(kBoxColumns)};
  };
  contract.parameters = {
      getTensorMapParameter(op, kGradQ, rows(geometry.blockQueries),
                            kSwizzleBytes),
      getTensorMapParameter(op, kGradK, rows(blockKeys), kSwizzleBytes),
      getTensorMapParameter(op, kGradV, rows(blockKeys), kSwizzleBytes),
      getTensorMapParameter(op, kGradDout, rows(geometry.blockQueries),
                            kSwizzleBytes)};
  if (storesGradsByTma(op))
    for (AttentionGradOperand grad : {kGradDk, kGradDv})
      contract.parameters.push_back(
          getTensorMapParameter(op, grad, rows(kWarpRows), kSwizzleBytes));
  llvm::append_range(contract.parameters, getOperandParameters(op));
  gpu::GPUFuncOp func = createKernelFunc(
      op, kernels, getAttentionGradKernelName(AttentionGradKernel::Dkv),
      contract);
  // The registers a thread starts with, stated: without it ptxas may not
  // find them at the entry and then ignores setmaxnreg (C7508), leaving the
  // consumers at this count (seen at head dim 64).
  func->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(),
                b.getI32IntegerAttr(getLaunchRegisters()));
  b.setInsertionPointToStart(&func.getBody().front());
  GradDkvKernel(op, func, b).build();
  gpu::ReturnOp::create(b);
  return func;
}
