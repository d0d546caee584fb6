//===- attention-tiles.cpp - forward TFLOP/s of attention tiles ----------===//
//
// Part of FlashCore. Times the forward attention kernel of one problem at
// several tiles, in one process, rounds interleaved, through the JIT's
// typed launch (the kernel a JIT user gets, with the tile of
// KernelSpec::attentionTile): for head dims the harness's problems cannot
// describe, such as a v head dim apart from q's. Inputs are random bf16
// (never zeros); each round times 10 back-to-back launches between two
// events and the median of the rounds is reported, in TFLOP/s of
// 2 x B x Hq x Sq x Sk x (D + Dv) (halved when causal).
//
// Usage (GPU machine):
//   attention-tiles --head-dim=192 --value-head-dim=128 --batch=4 --heads=16
//       --seq=4096 [--causal] [--chip=sm_80]
//       --tiles=default,128x128x12x2,128x96x12x2
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/JIT.h"
#include "fmha/Runtime/CudaDriver.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

using namespace mlir::fmha;

namespace cl = llvm::cl;

static cl::opt<unsigned> headDim("head-dim", cl::desc("q's and k's head dim"),
                                 cl::init(128));
static cl::opt<unsigned> valueHeadDim("value-head-dim",
                                      cl::desc("v's and o's (0: head-dim)"),
                                      cl::init(0));
static cl::opt<long long> batch("batch", cl::init(4));
static cl::opt<long long> heads("heads", cl::desc("query heads"), cl::init(16));
static cl::opt<long long> kvHeads("kv-heads", cl::desc("0: heads"),
                                  cl::init(0));
static cl::opt<long long> seq("seq", cl::desc("Sq and Sk"), cl::init(4096));
static cl::opt<bool> causal("causal", cl::init(false));
static cl::opt<std::string>
    tiles("tiles", cl::desc("comma-separated: default, or MxNxWARPSxSTAGES"),
          cl::init("default"));
static cl::opt<unsigned> rounds("rounds", cl::init(7));
static cl::opt<std::string>
    chip("chip", cl::desc("sm_80 or sm_90a (default: the device's)"),
         cl::init(""));

static int fail(llvm::Error err) {
  llvm::errs() << "attention-tiles: " << llvm::toString(std::move(err)) << "\n";
  return 1;
}

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "attention tile sweep\n");
  llvm::Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return fail(driver.takeError());
  JITOptions options;
  if (!chip.empty()) {
    llvm::Expected<Chip> parsed = parseChip(chip);
    if (!parsed)
      return fail(parsed.takeError());
    options.chip = *parsed;
  }
  llvm::Expected<std::unique_ptr<JIT>> jit = JIT::create(options);
  if (!jit)
    return fail(jit.takeError());

  KernelSpec base;
  base.headDim = headDim;
  base.valueHeadDim = valueHeadDim;
  base.causal = causal;
  std::vector<std::pair<std::string, KernelSpec>> specs;
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(tiles).split(names, ',');
  for (llvm::StringRef name : names) {
    KernelSpec spec = base;
    if (name != "default") {
      llvm::SmallVector<llvm::StringRef, 4> parts;
      name.split(parts, 'x');
      unsigned values[4];
      if (parts.size() != 4 || llvm::any_of(llvm::seq(0, 4), [&](int i) {
            return parts[i].getAsInteger(10, values[i]);
          }))
        return fail(llvm::createStringError(
            "tile '" + name + "': expected default or MxNxWARPSxSTAGES"));
      spec.attentionTile =
          AttentionTiling{(*jit)->getLoadPlan().chip, values[0], values[1],
                          values[2], values[3]};
    }
    specs.emplace_back(name.str(), spec);
  }

  AttentionTensors t;
  t.batch = batch;
  t.queryHeads = heads;
  t.kvHeads = kvHeads ? kvHeads : heads;
  t.querySeq = t.keySeq = seq;
  t.setDenseStrides(base.getHeadDims());
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  auto buffer = [&](long long heads, unsigned dim) -> llvm::Expected<void *> {
    std::vector<uint16_t> host(size_t(batch) * heads * seq * dim);
    for (uint16_t &x : host) {
      float value = uniform(random);
      uint32_t bits;
      std::memcpy(&bits, &value, 4);
      x = static_cast<uint16_t>(bits >> 16); // bf16, truncated
    }
    llvm::Expected<CUdeviceptr> device = driver->allocate(host.size() * 2);
    if (!device)
      return device.takeError();
    if (llvm::Error err =
            driver->copyToDevice(*device, host.data(), host.size() * 2))
      return std::move(err);
    return reinterpret_cast<void *>(*device);
  };
  unsigned dv = base.getValueHeadDim();
  // q, k, v and o.
  void *pointers[4];
  for (auto [pointer, heads, dim] :
       {std::tuple{&pointers[0], t.queryHeads, headDim.getValue()},
        {&pointers[1], t.kvHeads, headDim.getValue()},
        {&pointers[2], t.kvHeads, dv},
        {&pointers[3], t.queryHeads, dv}}) {
    llvm::Expected<void *> made = buffer(heads, dim);
    if (!made)
      return fail(made.takeError());
    *pointer = *made;
  }
  t.q = pointers[0];
  t.k = pointers[1];
  t.v = pointers[2];
  t.o = pointers[3];

  llvm::Expected<CUevent> start = driver->createEvent();
  llvm::Expected<CUevent> end = driver->createEvent();
  if (!start || !end)
    return fail(llvm::joinErrors(start.takeError(), end.takeError()));
  auto time = [&](const KernelSpec &spec) -> llvm::Expected<float> {
    constexpr int kCalls = 10;
    if (llvm::Error err = driver->recordEvent(*start, nullptr))
      return std::move(err);
    for (int i = 0; i < kCalls; ++i)
      if (llvm::Error err = (*jit)->launchAttention(spec, t, nullptr))
        return std::move(err);
    if (llvm::Error err = driver->recordEvent(*end, nullptr))
      return std::move(err);
    if (llvm::Error err = driver->synchronize(nullptr))
      return std::move(err);
    llvm::Expected<float> ms = driver->elapsedMilliseconds(*start, *end);
    if (!ms)
      return ms.takeError();
    return *ms / kCalls;
  };
  std::vector<std::vector<float>> times(specs.size());
  for (auto &[name, spec] : specs) // compile, load and warm up
    for (int i = 0; i < 3; ++i)
      if (llvm::Expected<float> ms = time(spec); !ms)
        return fail(ms.takeError());
  for (unsigned r = 0; r < rounds; ++r)
    for (size_t i = 0; i < specs.size(); ++i) {
      size_t at = (i + r) % specs.size(); // rotated: clocks drop under load
      llvm::Expected<float> ms = time(specs[at].second);
      if (!ms)
        return fail(ms.takeError());
      times[at].push_back(*ms);
    }
  double flops =
      2.0 * batch * heads * seq * seq * (headDim + dv) / (causal ? 2 : 1);
  llvm::outs() << llvm::formatv(
      "| tile | {0}x{1}x{2} d{3} dv{4}{5} TFLOP/s | ms |\n|---|---|---|\n",
      batch.getValue(), heads.getValue(), seq.getValue(), headDim.getValue(),
      dv, causal ? " causal" : "");
  for (size_t i = 0; i < specs.size(); ++i) {
    std::vector<float> &ms = times[i];
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    float median = ms[ms.size() / 2];
    AttentionTiling tiling = (*jit)->getAttentionTiling(
        specs[i].second, seq, heads / (kvHeads ? kvHeads : heads));
    llvm::outs() << llvm::formatv(
        "| {0} ({1}x{2}, {3} warps, {4} stages) | {5:f0} | {6:f3} |\n",
        specs[i].first, tiling.blockM, tiling.blockN, tiling.warps,
        tiling.stages, flops / median / 1e9, median);
  }
  return 0;
}
