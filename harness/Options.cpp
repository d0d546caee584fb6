//===- Options.cpp - command-line options of the runner -------------------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "Checks.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace fmha_harness {

bool Options::parse(int argc, char **argv, int first, std::string &error) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      error = "unexpected argument '" + arg + "' (options are --key=value)";
      return false;
    }
    size_t eq = arg.find('=');
    if (eq == std::string::npos)
      values[arg.substr(2)] = "";
    else
      values[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
  }
  return true;
}

std::string Options::get(const std::string &key,
                         const std::string &fallback) const {
  used[key] = true;
  auto it = values.find(key);
  return it == values.end() ? fallback : it->second;
}

long long Options::getInt(const std::string &key, long long fallback) const {
  std::string text = get(key, "");
  if (text.empty())
    return fallback;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0') {
    std::fprintf(stderr, "fmha-runner: --%s expects an integer, got '%s'\n",
                 key.c_str(), text.c_str());
    std::exit(2);
  }
  return value;
}

bool Options::flag(const std::string &key) const {
  used[key] = true;
  return has(key);
}

RunOptions parseRunOptions(const Options &options) {
  RunOptions run;
  run.candidate = options.get("candidate", "ref");
  run.oracle = options.get("oracle", "ref");
  run.time = options.flag("time");
  run.check = !options.flag("no-check");
  return run;
}

bool Options::reportUnused() const {
  bool any = false;
  for (const auto &[key, value] : values)
    if (!used.count(key)) {
      std::fprintf(stderr, "fmha-runner: unknown option --%s\n", key.c_str());
      any = true;
    }
  return any;
}

uint64_t chooseSeed(const Options &options) {
  uint64_t seed =
      options.has("seed")
          ? uint64_t(options.getInt("seed", 0))
          : uint64_t(
                std::chrono::steady_clock::now().time_since_epoch().count());
  std::printf("seed %llu (replay with --seed=%llu)\n", (unsigned long long)seed,
              (unsigned long long)seed);
  return seed;
}

} // namespace fmha_harness
