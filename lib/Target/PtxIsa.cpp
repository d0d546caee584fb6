//===- PtxIsa.cpp - PTX ISA versions and what accepts them ----------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Target/PtxIsa.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::fmha;

namespace {
struct CudaPtx {
  CudaVersion cuda;
  PtxIsa ptx;
};
} // namespace

/// CUDA release -> newest PTX ISA it accepts (PTX ISA, "Release notes").
/// CUDA 12.6 kept 8.5; 12.7 was never released.
static constexpr CudaPtx kCudaPtxTable[] = {
    {{11, 0}, {7, 0}}, {{11, 1}, {7, 1}}, {{11, 2}, {7, 2}}, {{11, 3}, {7, 3}},
    {{11, 4}, {7, 4}}, {{11, 5}, {7, 5}}, {{11, 6}, {7, 6}}, {{11, 7}, {7, 7}},
    {{11, 8}, {7, 8}}, {{12, 0}, {8, 0}}, {{12, 1}, {8, 1}}, {{12, 2}, {8, 2}},
    {{12, 3}, {8, 3}}, {{12, 4}, {8, 4}}, {{12, 5}, {8, 5}}, {{12, 6}, {8, 5}},
    {{12, 8}, {8, 7}}, {{12, 9}, {8, 8}}, {{13, 0}, {9, 0}}, {{13, 1}, {9, 1}},
};

CudaVersion CudaVersion::fromDriverEncoding(int version) {
  return {static_cast<unsigned>(version / 1000),
          static_cast<unsigned>((version % 1000) / 10)};
}

std::string CudaVersion::str() const {
  return llvm::formatv("{0}.{1}", major, minor).str();
}

std::string PtxIsa::str() const {
  return llvm::formatv("{0}.{1}", major, minor).str();
}

std::string PtxIsa::feature() const {
  return llvm::formatv("+ptx{0}{1}", major, minor).str();
}

llvm::Expected<PtxIsa> fmha::parsePtxIsa(llvm::StringRef text) {
  unsigned major = 0, minor = 0;
  auto [majorText, minorText] = text.split('.');
  bool valid = minorText.empty()
                   ? text.size() == 2 && !text.getAsInteger(10, major) &&
                         ((minor = major % 10), (major /= 10), true)
                   : !majorText.getAsInteger(10, major) &&
                         !minorText.getAsInteger(10, minor) && minor < 10;
  if (!valid || major == 0)
    return llvm::createStringError(llvm::formatv(
        "invalid PTX ISA version '{0}'; expected major.minor such as 9.0",
        text));
  return PtxIsa{major, minor};
}

PtxIsa fmha::getNewestPtxIsa(CudaVersion cuda) {
  PtxIsa newest{6, 0};
  for (const CudaPtx &entry : kCudaPtxTable)
    if (!(cuda < entry.cuda))
      newest = entry.ptx;
  return newest;
}

CudaVersion fmha::getFirstCudaAccepting(PtxIsa isa) {
  for (const CudaPtx &entry : kCudaPtxTable)
    if (!(entry.ptx < isa))
      return entry.cuda;
  return llvm::ArrayRef(kCudaPtxTable).back().cuda;
}

PtxIsa fmha::getMinimumPtxIsa(Chip chip) {
  switch (chip) {
  case Chip::sm_80:
    return {7, 0};
  case Chip::sm_90a:
    // WGMMA and TMA need 8.0; the attention kernel's TMA loads name their
    // destination shared::cta (cp.async.bulk.tensor.*.shared::cta), which
    // PTX ISA 8.6 introduced.
    return {8, 6};
  }
  llvm_unreachable("unknown chip");
}

llvm::Expected<PtxIsa> fmha::selectPtxIsa(Chip chip, CudaVersion cuda,
                                          llvm::StringRef consumer) {
  PtxIsa accepted = getNewestPtxIsa(cuda);
  PtxIsa needed = getMinimumPtxIsa(chip);
  if (accepted < needed)
    return llvm::createStringError(llvm::formatv(
        "{0} needs PTX ISA {1} (CUDA {2}), but {3} accepts PTX ISA up to "
        "{4}: install CUDA {2} or newer there",
        stringifyChip(chip), needed.str(), getFirstCudaAccepting(needed).str(),
        consumer, accepted.str()));
  return kNewestLlvmPtxIsa < accepted ? kNewestLlvmPtxIsa : accepted;
}
