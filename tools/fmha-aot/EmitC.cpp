//===- EmitC.cpp - the C header and source fmha-aot writes ----------------===//
//
// Part of FlashCore. The generated code is C99 (and C++ through extern "C")
// over cuda.h and libcuda only: the projects that build it in have no MLIR,
// no LLVM and no FlashCore library. Its code lives in templates/
// (fmha_kernels.h and fmha_kernels.c, embedded at build time), which compile
// and run on their own with placeholder tables; this file only fills their
// regions with data: the cubins, the operands' types, and each variant's
// launch contract as tables, which the template's one launcher reads.
//
//===----------------------------------------------------------------------===//

#include "AotKernel.h"

#include "fmha/Dialect/Fmha/TileConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir::fmha;
using namespace mlir::fmha::aot;

static const char kHeaderTemplate[] =
#include "templates/fmha_kernels.h.inc"
    ;
static const char kSourceTemplate[] =
#include "templates/fmha_kernels.c.inc"
    ;

//===----------------------------------------------------------------------===//
// Templates
//===----------------------------------------------------------------------===//

/// The prefix of every symbol in the templates, in lower and upper case.
static constexpr llvm::StringLiteral kTemplatePrefix = "fmha_kernels";
static constexpr llvm::StringLiteral kTemplateMacroPrefix = "FMHA_KERNELS";

/// \p text with the templates' prefix replaced by \p prefix, and their macro
/// prefix by its upper case.
static std::string expandPrefix(llvm::StringRef text, llvm::StringRef prefix) {
  std::string upper = prefix.upper();
  std::string result;
  result.reserve(text.size());
  while (!text.empty()) {
    if (text.consume_front(kTemplatePrefix)) {
      result += prefix;
      continue;
    }
    if (text.consume_front(kTemplateMacroPrefix)) {
      result += upper;
      continue;
    }
    result += text.front();
    text = text.drop_front();
  }
  return result;
}

/// Writes template \p text with its prefix expanded and each region (from a
/// `/* fmha-aot:begin NAME */` line to a `/* fmha-aot:end NAME */` line)
/// replaced by regions[NAME]. Every region of the template must be given,
/// and every given region must be in the template: a mismatch means the
/// embedded template and this file disagree.
static llvm::Error
fillTemplate(llvm::StringRef name, llvm::StringRef text, llvm::StringRef prefix,
             const llvm::StringMap<std::string> &regions,
             llvm::raw_ostream &os) {
  static constexpr llvm::StringLiteral kBegin = "/* fmha-aot:begin ";
  llvm::StringSet<> filled;
  while (!text.empty()) {
    size_t begin = text.find(kBegin);
    os << expandPrefix(text.take_front(begin), prefix);
    if (begin == llvm::StringRef::npos)
      break;
    text = text.drop_front(begin + kBegin.size());
    llvm::StringRef region = text.take_until([](char c) { return c == ' '; });
    std::string end = ("/* fmha-aot:end " + region + " */\n").str();
    size_t endAt = text.find(end);
    auto value = regions.find(region);
    if (endAt == llvm::StringRef::npos || value == regions.end())
      return llvm::createStringError(
          llvm::formatv("template {0}: region '{1}' {2}", name, region,
                        endAt == llvm::StringRef::npos ? "has no end marker"
                                                       : "is not filled"));
    os << value->second;
    filled.insert(region);
    text = text.drop_front(endAt + end.size());
  }
  for (const auto &region : regions)
    if (!filled.contains(region.getKey()))
      return llvm::createStringError(
          llvm::formatv("template {0} has no region '{1}'", name,
                        region.getKey()));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Descriptions
//===----------------------------------------------------------------------===//

/// A C string literal for \p text.
static std::string quote(llvm::StringRef text) {
  std::string result = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      result += '\\';
    if (c == '\n') {
      result += "\\n";
      continue;
    }
    result += c;
  }
  return result + "\"";
}

/// A float as a C literal that reads back to the same float.
static std::string floatLiteral(float value) {
  return llvm::formatv("{0:e9}f", static_cast<double>(value)).str();
}

/// The archs of \p file, comma separated.
static std::string getArchList(const AotFile &file) {
  return llvm::join(llvm::map_range(file.cubins,
                                    [](const AotCubin &c) { return c.arch; }),
                    ", ");
}

/// \p values as a C initializer list.
template <typename Range> static std::string initializer(const Range &values) {
  return "{" +
         llvm::join(llvm::map_range(values,
                                    [](auto v) { return std::to_string(v); }),
                    ", ") +
         "}";
}

/// One line describing what \p kernel computes, for comments and tables.
static std::string describe(const AotKernel &kernel) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (kernel.kind == AotKernel::Kind::Merge) {
    os << "fmha.merge_attention " << kernel.elementType << ", head dim "
       << kernel.headDim << (kernel.withLse ? ", lse" : "")
       << (kernel.withQueryOffsets
               ? ", the rows of sequences packed by query_offsets"
               : "");
  } else if (kernel.kind != AotKernel::Kind::Resample) {
    bool grad = kernel.kind == AotKernel::Kind::AttentionGrad;
    os << (grad ? "fmha.attention_grad " : "fmha.attention ")
       << kernel.elementType << ", head dim " << kernel.headDim;
    if (kernel.valueHeadDim != kernel.headDim)
      os << ", v head dim " << kernel.valueHeadDim;
    os << (kernel.causal ? ", causal" : "") << (kernel.withLse ? ", lse" : "")
       << (kernel.withDqAccum ? ", dq_accum" : "")
       << (kernel.withDqOrder ? ", dq_order" : "") << ", scale "
       << llvm::format("%.7g", kernel.scale)
       << (kernel.scaleIsDefault ? " (1/sqrt(D))" : "");
    if (kernel.softcap != 0)
      os << ", softcap " << llvm::format("%.7g", kernel.softcap);
    if (kernel.window)
      os << ", window [" << (*kernel.window)[0] << ", " << (*kernel.window)[1]
         << "]";
    if (kernel.withSinks)
      os << ", sinks";
    if (kernel.withKeyLengths)
      os << ", key lengths";
    if (kernel.pageSize)
      os << ", pages of " << kernel.pageSize << " rows";
    if (kernel.packQueryHeads)
      os << ", query heads packed by KV head";
    if (kernel.splitKeys)
      os << ", split keys (o and lse: S partial states of each "
         << (kernel.withQueryOffsets ? "packed sequence" : "batch entry")
         << ")";
    if (kernel.withQueryOffsets)
      os << ", sequences packed by query_offsets"
         << (kernel.withKeyOffsets ? " and key_offsets" : "");
  } else {
    os << "fmha.resample " << kernel.mode << " " << kernel.elementType << ", "
       << kernel.streamFeatures.size() << " stream(s) of "
       << llvm::join(llvm::map_range(
                         kernel.streamFeatures,
                         [](unsigned d) { return std::to_string(d); }),
                     ", ")
       << " features" << (kernel.withLengths ? ", lengths" : "");
  }
  return text;
}

/// The op of \p kernel as its launcher and args are named in C.
static llvm::StringRef getOpName(const AotKernel &kernel) {
  switch (kernel.kind) {
  case AotKernel::Kind::Attention:
    return "attention";
  case AotKernel::Kind::AttentionGrad:
    return "attention_grad";
  case AotKernel::Kind::Resample:
    return "resample";
  case AotKernel::Kind::Merge:
    return "merge_attention";
  }
  llvm_unreachable("unknown kernel kind");
}

/// How many kernel functions each op runs (the same in every cubin), and
/// the most any one runs.
static size_t countFunctions(const AotFile &file) {
  size_t count = 0;
  for (const AotKernel &kernel : file.kernels)
    count += kernel.variants.front().launches.size();
  return count;
}
static size_t countMostLaunches(const AotFile &file) {
  size_t most = 1;
  for (const AotKernel &kernel : file.kernels)
    most = std::max(most, kernel.variants.front().launches.size());
  return most;
}

/// The operand's sizes as the header documents them (`?` is dynamic).
static std::string describeOperand(const MemRefOperand &operand) {
  if (operand.isIndex)
    return operand.name + ": an index, passed as args.max_query_length";
  std::string text = operand.name + " [";
  for (unsigned d = 0; d < operand.rank; ++d) {
    if (d)
      text += ", ";
    text +=
        operand.sizes[d] == kDynamic ? "?" : std::to_string(operand.sizes[d]);
  }
  text += "]";
  if (operand.identityLayout) {
    text += " contiguous (row-major)";
  } else {
    bool anyStatic = llvm::any_of(operand.strides,
                                  [](int64_t s) { return s != kDynamic; });
    if (anyStatic) {
      text += " strides [";
      for (unsigned d = 0; d < operand.rank; ++d) {
        if (d)
          text += ", ";
        text += operand.strides[d] == kDynamic
                    ? "any"
                    : std::to_string(operand.strides[d]);
      }
      text += "]";
    } else {
      text += " any strides";
    }
  }
  text += llvm::formatv(", {0}-byte aligned", operand.alignBytes).str();
  return text;
}

/// The grid of \p launch as a formula over its operands' sizes, for the
/// header: `(ceildiv(q[2], 128), q[1], min(q[0], 65535))`.
static std::string describeGrid(const LaunchContract &launch) {
  auto describeAxis = [&](unsigned axis) {
    const GridAxis &rule = launch.grid[axis];
    std::string text;
    for (const GridFactor &factor : rule.factors) {
      std::string size =
          llvm::formatv("{0}[{1}]", launch.operands[factor.operand],
                        factor.dim);
      text += (text.empty() ? "" : " * ") +
              (factor.divisor == 1
                   ? size
                   : llvm::formatv("ceildiv({0}, {1})", size, factor.divisor)
                         .str());
    }
    if (text.empty())
      text = "1";
    if (rule.max)
      text = llvm::formatv("min({0}, {1})", text, rule.max).str();
    if (axis == 0 && launch.persistent)
      text = llvm::formatv("min({0}, SMs)", text).str();
    return text;
  };
  return llvm::formatv("({0}, {1}, {2})", describeAxis(0), describeAxis(1),
                       describeAxis(2))
      .str();
}

llvm::Error aot::checkLaunchContract(const AotKernel &kernel,
                                     const LaunchContract &launch) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::createStringError(
        ("kernel " + kernel.name + ": " + what + " (" + launch.str() + ")")
            .str());
  };
  if (llvm::Error err = launch.verify())
    return fail(llvm::toString(std::move(err)));
  auto names = llvm::map_range(kernel.operands, [](const MemRefOperand &o) {
    return o.name;
  });
  if (!llvm::equal(launch.operands, names))
    return fail(llvm::formatv("the launch contract's operands are [{0}], the "
                              "op's [{1}]",
                              llvm::join(launch.operands, ", "),
                              llvm::join(names, ", ")));
  for (const MemRefOperand &operand : kernel.operands)
    if (operand.rank > kMaxOperandRank)
      return fail(llvm::formatv("operand {0} has rank {1}; the generated C "
                                "holds at most {2}",
                                operand.name, operand.rank, kMaxOperandRank));
  for (const GridAxis &axis : launch.grid)
    for (const GridFactor &factor : axis.factors)
      if (factor.dim >= kernel.operands[factor.operand].rank)
        return fail(llvm::formatv("the grid reads dimension {0} of {1}, "
                                  "which has {2}",
                                  factor.dim, launch.operands[factor.operand],
                                  kernel.operands[factor.operand].rank));
  for (const KernelParameter &parameter : launch.parameters) {
    if (parameter.kind == KernelParameter::Kind::Index) {
      if (!kernel.operands[parameter.operand].isIndex)
        return fail("an index parameter (" +
                    launch.operands[parameter.operand] +
                    ") of an operand that is not an index");
      continue;
    }
    if (parameter.kind != KernelParameter::Kind::TensorMap)
      continue;
    const MemRefOperand &operand = kernel.operands[parameter.operand];
    if (parameter.box.size() > operand.rank)
      return fail(llvm::formatv("the tensor map of {0} has a box of {1} "
                                "dimensions, the operand {2}",
                                operand.name, parameter.box.size(),
                                operand.rank));
    if (getTensorMapElementBytes(parameter.element) != operand.elementBytes)
      return fail(llvm::formatv("the tensor map of {0} holds {1}, the operand "
                                "has {2}-byte elements",
                                operand.name,
                                stringifyTensorMapElement(parameter.element),
                                operand.elementBytes));
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// The header
//===----------------------------------------------------------------------===//

/// The banner of a generated file: what it is and where it came from.
static std::string getBanner(const AotFile &file, llvm::StringRef extension,
                             llvm::StringRef body) {
  std::string text;
  llvm::raw_string_ostream os(text);
  std::string title = llvm::formatv("/*===- {0}.{1} - generated by fmha-aot: do "
                                    "not edit ",
                                    file.prefix, extension);
  os << title
     << std::string(std::max<int>(3, 67 - static_cast<int>(title.size())),
                    '-')
     << "*- C -*-===*\\\n *\n"
     << body << " * Generated from: " << file.source
     << "\n * Command: " << file.command << "\n * Cubins: "
     << getArchList(file) << "\n"
     << "\\*===--------------------------------------------------------------"
        "--------===*/\n";
  return text;
}

llvm::Error aot::emitHeader(const AotFile &file, llvm::raw_ostream &os) {
  const std::string &p = file.prefix;
  std::string usage =
      llvm::formatv(" * FlashCore kernels compiled ahead of time, for the "
                    "CUDA driver API only:\n * compile {0}.c with any C99 or "
                    "C++ compiler and link libcuda.\n *\n"
                    " * Usage, in a thread with a current CUDA context:\n"
                    " *   {0}_module m;\n"
                    " *   if ({0}_load(&m) != {1}_SUCCESS) fprintf(stderr, "
                    "\"%s\\n\", m.message);\n"
                    " *   {0}_launch_<kernel>(&m, &args, stream);\n *\n",
                    p, llvm::StringRef(p).upper());
  std::string counts = llvm::formatv(
      "  {0}_NUM_CUBINS = {1},\n"
      "  {0}_NUM_KERNELS = {2},\n"
      "  {0}_NUM_FUNCTIONS = {3},\n"
      "  /* queries per counter of an attention_grad's dq_order */\n"
      "  {0}_DQ_ORDER_ROWS = {4},\n",
      llvm::StringRef(p).upper(), file.cubins.size(), file.kernels.size(),
      countFunctions(file), kQueryGradOrderBlock);

  std::string launchers;
  llvm::raw_string_ostream out(launchers);
  for (const AotKernel &kernel : file.kernels) {
    out << "\n/* " << kernel.name << ": " << describe(kernel) << ".\n";
    out << " * From " << kernel.origin << ". Operands:\n";
    for (const MemRefOperand &operand : kernel.operands)
      out << " *   " << describeOperand(operand) << "\n";
    for (auto [cubin, variant] : llvm::zip(file.cubins, kernel.variants)) {
      auto describeLaunch = [](const KernelLaunch &launch) {
        return llvm::formatv("{0} threads, {1} bytes of dynamic shared "
                             "memory, grid {2}{3}",
                             launch.launch.threads, launch.launch.sharedBytes,
                             describeGrid(launch.launch),
                             launch.launch.dependentLaunch
                                 ? ", a dependent launch (its launch "
                                   "overlaps the previous kernel's tail)"
                                 : "")
            .str();
      };
      out << " * " << cubin.arch << ": " << variant.tile;
      if (variant.launches.size() == 1) {
        out << ", " << describeLaunch(variant.launches.front()) << "\n";
        continue;
      }
      out << ", in order:\n";
      for (const KernelLaunch &launch : variant.launches)
        out << " *   " << launch.function << ": " << describeLaunch(launch)
            << "\n";
    }
    out << " */\n";
    out << llvm::formatv("{0}_status {0}_launch_{1}({0}_module *module,\n"
                         "    const {0}_{2}_args *args, CUstream stream);\n",
                         p, kernel.name, getOpName(kernel));
  }

  llvm::StringMap<std::string> regions;
  regions["banner"] = getBanner(file, "h", usage);
  regions["counts"] = counts;
  regions["launchers"] = launchers;
  return fillTemplate("fmha_kernels.h", kHeaderTemplate, p, regions, os);
}

//===----------------------------------------------------------------------===//
// The source
//===----------------------------------------------------------------------===//

/// The bytes of \p image as the initializer of an unsigned char array.
static void emitBytes(llvm::StringRef image, llvm::raw_ostream &os) {
  for (size_t i = 0; i < image.size(); ++i) {
    if (i % 16 == 0)
      os << (i ? "\n  " : "  ");
    os << static_cast<unsigned>(static_cast<unsigned char>(image[i])) << ",";
  }
  os << "\n";
}

/// "sm_86" -> {8, 6, false}; "sm_90a" -> {9, 0, true}; "sm_100" -> {10, 0}.
static std::string getTargetInitializer(llvm::StringRef arch) {
  llvm::StringRef digits = arch.drop_front(3);
  bool specific = digits.consume_back("a");
  return llvm::formatv("{{{0}, {1}, {2}}", digits.drop_back(1),
                       digits.take_back(1), specific ? 1 : 0)
      .str();
}

/// cuda.h's name of a tensor map's element type.
static llvm::StringRef getTensorMapDataType(TensorMapElement element) {
  switch (element) {
  case TensorMapElement::F16:
    return "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
  case TensorMapElement::BF16:
    return "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16";
  case TensorMapElement::F32:
    return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
  }
  llvm_unreachable("unknown tensor map element");
}

/// cuda.h's name of an L2 promotion (LaunchContract::verify admits these
/// four).
static llvm::StringRef getTensorMapL2Promotion(unsigned bytes) {
  switch (bytes) {
  case 64:
    return "CU_TENSOR_MAP_L2_PROMOTION_L2_64B";
  case 128:
    return "CU_TENSOR_MAP_L2_PROMOTION_L2_128B";
  case 256:
    return "CU_TENSOR_MAP_L2_PROMOTION_L2_256B";
  default:
    return "CU_TENSOR_MAP_L2_PROMOTION_NONE";
  }
}

/// cuda.h's name of a shared-memory swizzle span (LaunchContract::verify
/// admits these four).
static llvm::StringRef getTensorMapSwizzle(unsigned swizzleBytes) {
  switch (swizzleBytes) {
  case 32:
    return "CU_TENSOR_MAP_SWIZZLE_32B";
  case 64:
    return "CU_TENSOR_MAP_SWIZZLE_64B";
  case 128:
    return "CU_TENSOR_MAP_SWIZZLE_128B";
  default:
    return "CU_TENSOR_MAP_SWIZZLE_NONE";
  }
}

/// The 64-bit fields of the memref descriptors and index values that
/// \p launch passes.
static size_t countSlots(const AotKernel &kernel,
                         const LaunchContract &launch) {
  size_t slots = 0;
  for (const KernelParameter &parameter : launch.parameters)
    if (parameter.kind == KernelParameter::Kind::MemRef)
      slots += 3 + 2 * kernel.operands[parameter.operand].rank;
    else if (parameter.kind == KernelParameter::Kind::Index)
      slots += 1;
  return slots;
}

static size_t countTensorMaps(const LaunchContract &launch) {
  return llvm::count_if(launch.parameters, [](const KernelParameter &p) {
    return p.kind == KernelParameter::Kind::TensorMap;
  });
}

/// The tables of kernel \p index of \p file, whose functions are rows
/// \p firstFunction... of the variants table: its operands, and for each of
/// its functions and each cubin, the grid factors and the parameters of
/// that launch's contract. A function with the same symbol and contract in
/// two cubins (archs lowered for one chip) shares its tables. Returns, per
/// function, each cubin's variant initializer.
static std::vector<std::vector<std::string>>
emitKernelTables(const AotFile &file, size_t index, size_t firstFunction,
                 llvm::raw_ostream &os) {
  const std::string &p = file.prefix;
  std::string upper = llvm::StringRef(p).upper();
  const AotKernel &kernel = file.kernels[index];
  os << "\n/* " << kernel.name << ": " << describe(kernel) << ". */\n";
  os << "static const " << p << "_operand " << p << "_operands_" << index
     << "[] = {\n";
  for (const MemRefOperand &operand : kernel.operands)
    os << llvm::formatv(
        "  {{{0}, {{{1}}, {2}, {3}, {4}, {5}, {6}, {7}, {8}},\n",
        quote(operand.name),
        llvm::join(llvm::map_range(operand.dimNames, quote), ", "),
        operand.rank, operand.elementBytes, operand.alignBytes,
        operand.identityLayout ? 1 : 0, initializer(operand.sizes),
        initializer(operand.strides), operand.isIndex ? 1 : 0);
  os << "};\n";

  std::vector<std::vector<std::string>> rows;
  size_t functions = kernel.variants.front().launches.size();
  for (size_t j = 0; j < functions; ++j) {
    size_t function = firstFunction + j;
    auto launchIn = [&](size_t cubin) -> const KernelLaunch & {
      return kernel.variants[cubin].launches[j];
    };
    std::vector<std::string> initializers;
    for (size_t c = 0; c < kernel.variants.size(); ++c) {
      const KernelLaunch &current = launchIn(c);
      const LaunchContract &launch = current.launch;
      size_t first = 0;
      while (launchIn(first).function != current.function ||
             !(launchIn(first).launch == launch))
        ++first;
      std::string suffix = llvm::formatv("{0}_{1}", function, first);
      os << "/* " << kernel.name;
      if (functions > 1)
        os << "'s " << current.function;
      os << " on " << file.cubins[c].arch << ": #fmha.launch<" << launch.str()
         << ">";
      if (first != c)
        os << ": the tables of " << file.cubins[first].arch;
      os << " */\n";
      bool anyFactor = llvm::any_of(launch.grid, [](const GridAxis &axis) {
        return !axis.factors.empty();
      });
      if (first == c) {
        if (anyFactor) {
          os << "static const " << p << "_grid_factor " << p << "_grid_"
             << suffix << "[] = {";
          llvm::ListSeparator separator;
          for (const GridAxis &axis : launch.grid)
            for (const GridFactor &factor : axis.factors)
              os << separator
                 << llvm::formatv("{{{0}, {1}, {2}}", factor.operand,
                                  factor.dim, factor.divisor);
          os << "};\n";
        }
        os << "static const " << p << "_parameter " << p << "_parameters_"
           << suffix << "[] = {\n";
        for (const KernelParameter &parameter : launch.parameters) {
          // A memref descriptor or an index value: no map fields.
          if (parameter.kind != KernelParameter::Kind::TensorMap) {
            bool index = parameter.kind == KernelParameter::Kind::Index;
            os << llvm::formatv("  {{{0}_{1}, {2}, "
                                "CU_TENSOR_MAP_DATA_TYPE_UINT8, 0, 0, {{0}, "
                                "CU_TENSOR_MAP_SWIZZLE_NONE, "
                                "CU_TENSOR_MAP_L2_PROMOTION_NONE},\n",
                                upper, index ? "INDEX" : "MEMREF",
                                parameter.operand);
            continue;
          }
          os << llvm::formatv(
              "  {{{0}_TENSOR_MAP, {1}, {2}, {3}, {4}, {5}, {6}, {7}},\n",
              upper, parameter.operand, getTensorMapDataType(parameter.element),
              getTensorMapElementBytes(parameter.element), parameter.box.size(),
              initializer(parameter.box),
              getTensorMapSwizzle(parameter.swizzleBytes),
              getTensorMapL2Promotion(parameter.l2PromotionBytes));
        }
        os << "};\n";
      }
      initializers.push_back(llvm::formatv(
          "{{{0}, {1}, {2}, {{{3}, {4}, {5}}, {{{6}, {7}, {8}}, {9}, {10}, "
          "{11}, {12}, {13}_parameters_{14}}",
          quote(current.function), launch.threads, launch.sharedBytes,
          launch.grid[0].factors.size(), launch.grid[1].factors.size(),
          launch.grid[2].factors.size(), launch.grid[0].max, launch.grid[1].max,
          launch.grid[2].max, launch.persistent ? 1 : 0,
          launch.dependentLaunch ? 1 : 0,
          anyFactor ? p + "_grid_" + suffix : std::string("NULL"),
          launch.parameters.size(), p, suffix));
    }
    rows.push_back(std::move(initializers));
  }
  return rows;
}

/// The tables region of the source template.
static std::string getTables(const AotFile &file) {
  const std::string &p = file.prefix;
  std::string upper = llvm::StringRef(p).upper();
  std::string text;
  llvm::raw_string_ostream os(text);
  auto any = [&](AotKernel::Kind kind) {
    return llvm::any_of(file.kernels, [&](const AotKernel &kernel) {
      return kernel.kind == kind;
    });
  };
  size_t operands = 0, slots = 0, maps = 1;
  for (const AotKernel &kernel : file.kernels) {
    operands = std::max(operands, kernel.operands.size());
    for (const KernelVariant &variant : kernel.variants)
      for (const KernelLaunch &launch : variant.launches) {
        slots = std::max(slots, countSlots(kernel, launch.launch));
        maps = std::max(maps, countTensorMaps(launch.launch));
      }
  }
  os << "/* Which op launchers the kernels need, and the largest launch of "
        "any\n   function: launch operands, memref descriptor fields, tensor "
        "maps (at least\n   1, the size of an array); the most functions one "
        "kernel launches. */\n";
  os << llvm::formatv("#define {0}_ATTENTION_KERNELS {1}\n"
                      "#define {0}_ATTENTION_GRAD_KERNELS {2}\n"
                      "#define {0}_RESAMPLE_KERNELS {3}\n"
                      "#define {0}_MERGE_ATTENTION_KERNELS {8}\n"
                      "enum {{\n"
                      "  {0}_MAX_OPERANDS = {4},\n"
                      "  {0}_MAX_SLOTS = {5},\n"
                      "  {0}_MAX_MAPS = {6},\n"
                      "  {0}_MAX_LAUNCHES = {7}\n"
                      "};\n\n",
                      upper, any(AotKernel::Kind::Attention) ? 1 : 0,
                      any(AotKernel::Kind::AttentionGrad) ? 1 : 0,
                      any(AotKernel::Kind::Resample) ? 1 : 0, operands,
                      std::max<size_t>(slots, 1), maps, countMostLaunches(file),
                      any(AotKernel::Kind::Merge) ? 1 : 0);

  for (auto [index, cubin] : llvm::enumerate(file.cubins)) {
    os << "/* " << cubin.arch << " (lowered for chip " << cubin.chip
       << "), cubin, " << cubin.image.size() << " bytes. */\n";
    os << "static const unsigned char " << p << "_cubin_" << index << "["
       << cubin.image.size() << "] " << upper << "_ALIGNED = {\n";
    emitBytes(cubin.image, os);
    os << "};\n";
  }
  os << "static const unsigned char *const " << p << "_cubins[" << upper
     << "_NUM_CUBINS] = {";
  for (size_t i = 0; i < file.cubins.size(); ++i)
    os << (i ? ", " : "") << p << "_cubin_" << i;
  os << "};\n";
  os << "static const " << p << "_target " << p << "_targets[" << upper
     << "_NUM_CUBINS] = {";
  for (auto [index, cubin] : llvm::enumerate(file.cubins))
    os << (index ? ", " : "") << getTargetInitializer(cubin.arch);
  os << "};\n";
  os << "const char *const " << p << "_archs[" << upper << "_NUM_CUBINS] = {"
     << llvm::join(llvm::map_range(file.cubins,
                                   [](const AotCubin &c) {
                                     return quote(c.arch);
                                   }),
                   ", ")
     << "};\n";

  std::vector<std::vector<std::vector<std::string>>> variants;
  std::vector<size_t> firstFunctions;
  size_t function = 0;
  for (size_t index = 0; index < file.kernels.size(); ++index) {
    firstFunctions.push_back(function);
    variants.push_back(emitKernelTables(file, index, function, os));
    function += variants.back().size();
  }

  os << "\nstatic const " << p << "_kernel_table " << p << "_kernel_tables["
     << upper << "_NUM_KERNELS] = {\n";
  for (auto [index, kernel] : llvm::enumerate(file.kernels))
    os << "  {" << kernel.operands.size() << ", " << p << "_operands_" << index
       << ", " << firstFunctions[index] << ", " << variants[index].size()
       << "},\n";
  os << "};\n";
  os << "static const " << p << "_variant " << p << "_variants[" << upper
     << "_NUM_FUNCTIONS][" << upper << "_NUM_CUBINS] = {\n";
  for (auto [kernel, rows] : llvm::zip(file.kernels, variants))
    for (auto [j, row] : llvm::enumerate(rows)) {
      os << "  { /* " << kernel.name;
      if (rows.size() > 1)
        os << llvm::formatv(", function {0} of {1}", j + 1, rows.size());
      os << " */\n";
      for (const std::string &variant : row)
        os << "    " << variant << ",\n";
      os << "  },\n";
    }
  os << "};\n";
  return text;
}

/// The kernels region of the source template: one launcher per kernel and
/// the table of what each computes.
static std::string getKernels(const AotFile &file) {
  const std::string &p = file.prefix;
  std::string upper = llvm::StringRef(p).upper();
  std::string text;
  llvm::raw_string_ostream os(text);
  for (auto [index, kernel] : llvm::enumerate(file.kernels)) {
    llvm::StringRef op = getOpName(kernel);
    os << llvm::formatv("{0}_status {0}_launch_{1}({0}_module *module,\n"
                        "    const {0}_{2}_args *args, CUstream stream) {{\n"
                        "  return {0}_launch_{2}_kernel(module, {3}, args, "
                        "stream);\n"
                        "}\n\n",
                        p, kernel.name, op, index);
  }
  for (auto [index, kernel] : llvm::enumerate(file.kernels))
    if (!kernel.streamFeatures.empty())
      os << "static const int " << p << "_features_" << index << "[] = "
         << initializer(kernel.streamFeatures) << ";\n";
  if (llvm::any_of(file.kernels, [](const AotKernel &kernel) {
        return !kernel.streamFeatures.empty();
      }))
    os << "\n";
  os << "const " << p << "_kernel_info " << p << "_kernels[" << upper
     << "_NUM_KERNELS] = {\n";
  for (auto [index, kernel] : llvm::enumerate(file.kernels)) {
    bool resample = kernel.kind == AotKernel::Kind::Resample;
    std::array<int64_t, 2> window =
        kernel.window.value_or(std::array<int64_t, 2>{0, 0});
    // The launcher in the slot of the kernel's op, NULL in the others.
    auto launcher = [&](AotKernel::Kind kind) {
      return kernel.kind == kind ? p + "_launch_" + kernel.name
                                 : std::string("NULL");
    };
    os << "  {" << quote(kernel.name) << ", " << quote(getOpName(kernel))
       << ", " << quote(kernel.elementType) << ",\n   "
       << llvm::formatv("{0}, {1}, {2}, {3}, {4}, {5}, {6}, {{{7}, {8}}, "
                        "{9}, {10},\n   ",
                        kernel.headDim, kernel.valueHeadDim,
                        kernel.causal ? 1 : 0, kernel.withLse ? 1 : 0,
                        kernel.withDqAccum ? 1 : 0, kernel.withDqOrder ? 1 : 0,
                        kernel.window ? 1 : 0, window[0], window[1],
                        floatLiteral(kernel.scale),
                        floatLiteral(kernel.softcap))
       << (resample ? quote(kernel.mode) : "NULL") << ", "
       << kernel.streamFeatures.size() << ", "
       << (resample ? p + "_features_" + std::to_string(index) : "NULL") << ", "
       << (kernel.withLengths ? 1 : 0) << ",\n   "
       << launcher(AotKernel::Kind::Attention) << ", "
       << launcher(AotKernel::Kind::AttentionGrad) << ", "
       << launcher(AotKernel::Kind::Resample) << ",\n   "
       << (kernel.withSinks ? 1 : 0) << ", " << (kernel.withKeyLengths ? 1 : 0)
       << ", " << kernel.pageSize << ", " << (kernel.splitKeys ? 1 : 0) << ", "
       << (kernel.withQueryOffsets ? 1 : 0) << ", "
       << (kernel.withKeyOffsets ? 1 : 0) << ", "
       << launcher(AotKernel::Kind::Merge) << "},\n";
  }
  os << "};\n";
  return text;
}

llvm::Error aot::emitSource(const AotFile &file, llvm::raw_ostream &os) {
  llvm::StringMap<std::string> regions;
  regions["banner"] =
      getBanner(file, "c",
                " * The embedded cubins and each kernel's launch contract, as "
                "tables, and the\n * code that reads them (fmha-aot's "
                "templates/fmha_kernels.c). Needs cuda.h\n * and libcuda "
                "only.\n *\n");
  regions["tables"] = getTables(file);
  regions["kernels"] = getKernels(file);
  return fillTemplate("fmha_kernels.c", kSourceTemplate, file.prefix, regions,
                      os);
}
