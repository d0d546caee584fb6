//===- PingPong.h - sm_90a warpgroup roles: setmaxnreg, turns ---*- C++ -*-===//
//
// Part of FlashCore. Private to lib/Conversion/FmhaToNVGPU/Sm90a. How the
// warpgroups of the sm_90a attention kernel share an SM: the producer gives
// its registers to the consumers (setmaxnreg), and with two or three
// consumers, named barriers make them take turns issuing their GEMMs
// (FlashAttention-3's ping-pong): consumer c waits on barrier 1 + c before
// issuing and then arrives on the next consumer's, so the tensor cores run
// one warpgroup's GEMMs while the other computes its softmax, instead of
// both contending at once.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_FMHATONVGPU_SM90A_PINGPONG_H
#define LIB_CONVERSION_FMHATONVGPU_SM90A_PINGPONG_H

#include "Sm90a/Sm90aAttention.h"

namespace mlir::fmha::sm90a {

/// Registers per thread after setmaxnreg, by consumer warpgroups
/// (FlashAttention-3: 128 * 24 + 256 * 240 and 128 * 32 + 384 * 160 of the
/// 65536 registers of an SM).
struct RegisterSplit {
  int32_t producer, consumer;

  static RegisterSplit get(int64_t consumers) {
    return consumers <= 2 ? RegisterSplit{24, 240} : RegisterSplit{32, 160};
  }
};

/// setmaxnreg: this warpgroup's threads give up registers down to, or take
/// them up to, \p count each.
void setMaxRegisters(KernelBuilder &b, int32_t count, bool increase);

/// The consumers' turns at issuing GEMMs, over named barriers 1 .. consumers
/// (barrier 0 is __syncthreads), the barrier after them where every
/// consumer meets once its last GEMM of a tile has completed, and one per
/// consumer after that for its own threads.
class ConsumerTurns {
public:
  /// \p threadId is the thread's id (index).
  ConsumerTurns(KernelBuilder &b, int64_t consumers, Value threadId)
      : b(b), consumers(consumers), threadId(threadId) {}

  /// Before the first tile: consumer 0 gives itself the first turn. Every
  /// consumer then waits for and passes on its turn the same number of
  /// times per tile (both run the same key blocks), so the one pass left
  /// over at the end of a tile is the first turn of the next.
  void start();
  /// Waits until it is this consumer's turn to issue GEMMs.
  void waitForTurn();
  /// Gives the turn to the next consumer, after this one issued its GEMMs.
  void passTurn();
  /// Waits until every consumer has got past its tile's last GEMM.
  void waitForAllDrained();
  /// Waits until every thread of every consumer (one consumer too) has
  /// arrived: the same barrier as waitForAllDrained's, so every consumer
  /// must reach the two in the same order.
  void syncConsumers();
  /// Waits until every thread of this consumer warpgroup has arrived
  /// (named barrier 2 + consumers + c, after syncConsumers').
  void syncWarpgroup();

private:
  bool takesTurns() const { return consumers > 1; }
  Value getConsumerIndex();

  KernelBuilder &b;
  int64_t consumers;
  Value threadId;
};

} // namespace mlir::fmha::sm90a

#endif // LIB_CONVERSION_FMHATONVGPU_SM90A_PINGPONG_H
