//===- CacheEntry.cpp - one module as the JIT's disk cache holds it -------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/JIT/CacheEntry.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::fmha;

CacheEntry fmha::makeCacheEntry(LoadPath path, CompiledModule compiled) {
  CacheEntry entry;
  entry.contracts = std::move(compiled.contracts);
  entry.image =
      isPtxImage(path) ? std::move(compiled.ptx) : std::move(compiled.cubin);
  return entry;
}

std::string fmha::encodeCacheEntry(const CacheEntry &entry) {
  llvm::json::Object byName;
  for (const auto &[name, contract] : entry.contracts)
    byName[name] = contract.toJSON();
  std::string payload;
  llvm::raw_string_ostream os(payload);
  os << llvm::json::Value(std::move(byName)) << '\0' << entry.image;
  return payload;
}

llvm::Expected<CacheEntry> fmha::decodeCacheEntry(llvm::StringRef payload) {
  auto [json, image] = payload.split('\0');
  if (json.size() == payload.size())
    return llvm::createStringError("no launch contracts in the entry");
  if (image.empty())
    return llvm::createStringError("no image in the entry");
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(json);
  if (!value)
    return value.takeError();
  const llvm::json::Object *byName = value->getAsObject();
  if (!byName)
    return llvm::createStringError("the entry's contracts are not an object");
  CacheEntry entry;
  for (const auto &[name, contractJson] : *byName) {
    llvm::Expected<LaunchContract> contract =
        LaunchContract::fromJSON(contractJson);
    if (!contract)
      return contract.takeError();
    entry.contracts.emplace(name.str(), std::move(*contract));
  }
  entry.image = image.str();
  return entry;
}
