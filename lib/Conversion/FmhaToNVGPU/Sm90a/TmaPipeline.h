//===- TmaPipeline.h - sm_90a shared memory, mbarriers and TMA --*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm90a. The
// producer/consumer pipeline of the sm_90a attention kernel: where the Q
// tile, the K and V buffers and their mbarriers live in shared memory, the
// TMA loads that fill a buffer, and the mbarrier waits and arrivals that
// hand it between the producer and the consumers.
//
// Shared memory, from a 1024-byte aligned base (the 128-byte swizzle repeats
// every 8 rows of 128 bytes): one or two Q buffers, the `stages` K buffers,
// the `stages` V buffers, O's staging buffer where it has one, then the
// mbarriers (AttentionSharedLayout). A tile of R rows is D / 64 column blocks
// of R x 128 bytes, each exactly one TMA box, which is also the canonical WGMMA
// layout (WarpgroupGemm). Each buffer has a full barrier (the producer's arrive
// plus the TMA bytes; a K or V buffer's, one arrive per issuing warp) and an
// empty one (one arrive per consumer warp).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM90A_TMAPIPELINE_H
#define LIB_CONVERSION_FMHATONVGPU_SM90A_TMAPIPELINE_H

#include "Sm90a/Sm90aAttention.h"

namespace mlir::fmha::sm90a {

class TmaPipeline {
public:
  /// Barriers: Q full, Q empty, K full, V full, K empty, V empty, one per
  /// buffer each.
  enum Barrier {
    kQueryFull,
    kQueryEmpty,
    kKeyFull,
    kValueFull,
    kKeyEmpty,
    kValueEmpty
  };

  /// Emits the aligned base of the dynamic shared memory; \p threadId is
  /// the thread's id (index).
  static TmaPipeline create(KernelBuilder &b, const KernelShape &shape,
                            Value threadId);

  /// Thread 0 initializes every barrier, then the CTA synchronizes.
  void initBarriers();

  /// The 1024-byte aligned shared base (i32), where the first Q buffer
  /// starts.
  Value getBase() const { return base; }
  /// The shared address (i32) of Q buffer \p slot (i32).
  Value getQueryBuffer(Value slot);
  /// The Q buffer and the barrier parity of the \p iteration-th tile of
  /// this CTA (all i32).
  std::pair<Value, Value> getQuerySlotAndPhase(Value iteration);
  /// The shared address (i32) of O's staging buffer, where it has one
  /// (shape.sharedLayout.outputBytes).
  Value getOutputBuffer();
  /// The shared address (i32) of K buffer \p stage (i32).
  Value getKeyBuffer(Value stage);
  /// The shared address (i32) of V buffer \p stage (i32).
  Value getValueBuffer(Value stage);
  /// The shared address of barrier \p which of buffer \p stage (i32: a K
  /// or V stage, or a Q slot), as a pointer.
  Value getBarrier(Barrier which, Value stage = Value());
  /// The shared address \p address (i32) as a pointer.
  Value getSharedPointer(Value address);
  /// The shared address (i32) of kSlackBufferBytes in the alignment slack
  /// (the layout's totalBytes reserves kAtomBytes to round the base up):
  /// before the base where the rounding skipped that many bytes or more,
  /// else past the layout's last byte, where more than kAtomBytes minus
  /// them are left. No other use of shared memory reaches it.
  Value getSlackBuffer();
  static constexpr int64_t kSlackBufferBytes = kAtomBytes / 2;

  /// The buffer and the barrier parity of the \p count-th key block (all
  /// i32).
  std::pair<Value, Value> getStageAndPhase(Value count);

  /// Waits for the phase of parity \p phase (i32) of \p barrier to
  /// complete.
  void wait(Value barrier, Value phase);
  /// The producer's arrive on \p barrier, which then also waits for
  /// \p bytes of TMA loads.
  void expectBytes(Value barrier, int64_t bytes);
  /// The same with \p bytes an i32 value.
  void expectBytes(Value barrier, Value bytes);
  /// This thread's arrive on \p barrier, without bytes: an issuing warp's
  /// other than the first on a K or V full barrier (getIssuingWarps).
  void arrive(Value barrier);
  /// Lane 0 of each consumer warp arrives on \p barrier: called after the
  /// warp's reads of the buffer (WGMMAs or loads) have completed. The lane
  /// is that of \p threadId (index), by default the one create was given.
  void release(Value barrier, Value threadId = Value());

  /// Loads rows [row, row + rows) of (entry \p entryWord, head
  /// \p headWord) through tensor map \p map, one box per each of
  /// \p columnBlocks column blocks, into the tile at shared address
  /// \p tile, whose column blocks are \p tileRows rows apart (rows, or
  /// more where several loads fill one tile), completing on \p barrier
  /// (coordinates i32, as TMA takes them).
  void loadTile(Value map, Value tile, Value barrier, Value row, Value headWord,
                Value entryWord, int64_t rows, int64_t tileRows,
                int64_t columnBlocks);
  /// Orders this thread's generic-proxy accesses to shared memory (loads,
  /// stores) before the async proxy's that follow (TMA, WGMMA).
  void fenceAsyncShared();

private:
  TmaPipeline(KernelBuilder &b, const KernelShape &shape, Value threadId,
              Value base)
      : b(b), shape(shape), threadId(threadId), base(base) {}

  int64_t getBarriersOffset() const { return shape.sharedLayout.tail; }
  Value getBuffer(Value stage, int64_t firstOffset, int64_t bufferBytes);

  KernelBuilder &b;
  const KernelShape &shape;
  Value threadId, base;
};

} // namespace mlir::fmha::sm90a

#endif // LIB_CONVERSION_FMHATONVGPU_SM90A_TMAPIPELINE_H
