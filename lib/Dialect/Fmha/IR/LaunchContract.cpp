//===- LaunchContract.cpp - how the host launches a generated kernel ------===//
//
// Part of FlashCore.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/LaunchContract.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace mlir;
using namespace mlir::fmha;

llvm::StringRef fmha::stringifyTensorMapElement(TensorMapElement element) {
  switch (element) {
  case TensorMapElement::F16:
    return "f16";
  case TensorMapElement::BF16:
    return "bf16";
  case TensorMapElement::F32:
    return "f32";
  }
  llvm_unreachable("unknown tensor map element");
}

std::optional<TensorMapElement>
fmha::parseTensorMapElement(llvm::StringRef name) {
  for (TensorMapElement element :
       {TensorMapElement::F16, TensorMapElement::BF16, TensorMapElement::F32})
    if (name == stringifyTensorMapElement(element))
      return element;
  return std::nullopt;
}

unsigned fmha::getTensorMapElementBytes(TensorMapElement element) {
  return element == TensorMapElement::F32 ? 4 : 2;
}

static const char *const kAxisNames[] = {"x", "y", "z"};

llvm::Error LaunchContract::verify() const {
  auto fail = [](const std::string &what) {
    return llvm::createStringError("invalid launch contract: " + what);
  };
  if (threads == 0 || threads > 1024)
    return fail(llvm::formatv("threads is {0}, expected 1 to 1024", threads));
  auto checkOperand = [&](unsigned operand,
                          const llvm::Twine &where) -> llvm::Error {
    if (operand >= operands.size())
      return fail(llvm::formatv("{0} names operand {1}, but there are {2}",
                                where.str(), operand, operands.size())
                      .str());
    return llvm::Error::success();
  };
  for (auto [axis, rule] : llvm::enumerate(grid)) {
    for (const GridFactor &factor : rule.factors) {
      std::string where = llvm::formatv("grid {0}", kAxisNames[axis]);
      if (llvm::Error err = checkOperand(factor.operand, where))
        return err;
      if (factor.divisor == 0)
        return fail(where + " divides by 0");
    }
    int64_t limit = axis == 0 ? kMaxGridDimX : kMaxGridDimY;
    if (rule.max < 0 || rule.max > limit)
      return fail(llvm::formatv("grid {0} is clamped to {1}, expected 1 to {2}",
                                kAxisNames[axis], rule.max, limit)
                      .str());
  }
  for (auto [index, parameter] : llvm::enumerate(parameters)) {
    std::string where = llvm::formatv("parameter {0}", index);
    if (llvm::Error err = checkOperand(parameter.operand, where))
      return err;
    if (parameter.kind != KernelParameter::Kind::TensorMap)
      continue;
    if (parameter.box.empty() || parameter.box.size() > 5 ||
        llvm::is_contained(parameter.box, 0u))
      return fail(where + ": a tensor map box has 1 to 5 non-zero extents");
    if (!llvm::is_contained({0u, 32u, 64u, 128u}, parameter.swizzleBytes))
      return fail(llvm::formatv("{0}: swizzle is {1} bytes, expected 0, 32, "
                                "64 or 128",
                                where, parameter.swizzleBytes)
                      .str());
    if (!llvm::is_contained({0u, 64u, 128u, 256u}, parameter.l2PromotionBytes))
      return fail(llvm::formatv("{0}: l2_promotion is {1} bytes, expected 0, "
                                "64, 128 or 256",
                                where, parameter.l2PromotionBytes)
                      .str());
  }
  return llvm::Error::success();
}

llvm::Expected<std::array<unsigned, 3>>
LaunchContract::computeGrid(llvm::ArrayRef<llvm::ArrayRef<int64_t>> sizes,
                            unsigned residentCtas) const {
  if (sizes.size() != operands.size())
    return llvm::createStringError(
        llvm::formatv("the launch has {0} operands, the kernel takes {1}",
                      sizes.size(), operands.size()));
  std::array<unsigned, 3> extents;
  for (auto [axis, rule] : llvm::enumerate(grid)) {
    // Products saturate: an extent past any limit only needs to stay past it.
    constexpr int64_t kSaturated = int64_t(1) << 62;
    int64_t extent = 1;
    for (const GridFactor &factor : rule.factors) {
      llvm::ArrayRef<int64_t> operandSizes = sizes[factor.operand];
      if (factor.dim >= operandSizes.size())
        return llvm::createStringError(llvm::formatv(
            "operand {0} has {1} dimensions, the grid reads dimension {2}",
            operands[factor.operand], operandSizes.size(), factor.dim));
      int64_t size = operandSizes[factor.dim];
      if (size < 0)
        return llvm::createStringError(
            llvm::formatv("{0}[{1}] is {2}, expected at least 0",
                          operands[factor.operand], factor.dim, size));
      int64_t divisor = static_cast<int64_t>(factor.divisor);
      int64_t term = size / divisor + (size % divisor != 0);
      extent = term != 0 && extent > kSaturated / term ? kSaturated
                                                       : extent * term;
    }
    if (rule.max)
      extent = std::min(extent, rule.max);
    if (axis == 0 && persistent && residentCtas)
      extent = std::min<int64_t>(extent, residentCtas);
    int64_t limit = axis == 0 ? kMaxGridDimX : kMaxGridDimY;
    if (extent > limit) {
      std::string terms;
      for (const GridFactor &factor : rule.factors)
        terms += llvm::formatv("{0}{1}[{2}]", terms.empty() ? "" : " * ",
                               operands[factor.operand], factor.dim);
      return llvm::createStringError(llvm::formatv(
          "grid {0} extent from {1} is {2}, CUDA allows at most {3}",
          kAxisNames[axis], terms, extent, limit));
    }
    extents[axis] = static_cast<unsigned>(extent);
  }
  return extents;
}

unsigned LaunchContract::getLeadingTensorMaps() const {
  unsigned count = 0;
  while (count < parameters.size() &&
         parameters[count].kind == KernelParameter::Kind::TensorMap)
    ++count;
  return count;
}

//===----------------------------------------------------------------------===//
// The readable form
//===----------------------------------------------------------------------===//

void LaunchContract::print(llvm::raw_ostream &os) const {
  auto operandName = [&](unsigned operand) -> llvm::StringRef {
    return operand < operands.size() ? llvm::StringRef(operands[operand])
                                     : llvm::StringRef("<out of range>");
  };
  os << "operands = [";
  llvm::interleaveComma(operands, os);
  os << "], threads = " << threads << ", shared_bytes = " << sharedBytes
     << ", grid = [";
  llvm::interleaveComma(grid, os, [&](const GridAxis &axis) {
    if (axis.max)
      os << "min(";
    if (axis.factors.empty())
      os << "1";
    llvm::interleave(
        axis.factors, os,
        [&](const GridFactor &factor) {
          if (factor.divisor != 1)
            os << "ceildiv(";
          os << operandName(factor.operand) << "[" << factor.dim << "]";
          if (factor.divisor != 1)
            os << ", " << factor.divisor << ")";
        },
        " * ");
    if (axis.max)
      os << ", " << axis.max << ")";
  });
  os << "]";
  if (persistent)
    os << ", persistent";
  if (dependentLaunch)
    os << ", dependent_launch";
  os << ", parameters = [";
  llvm::interleaveComma(parameters, os, [&](const KernelParameter &parameter) {
    if (parameter.kind == KernelParameter::Kind::MemRef) {
      os << operandName(parameter.operand);
      return;
    }
    if (parameter.kind == KernelParameter::Kind::Index) {
      os << "index(" << operandName(parameter.operand) << ")";
      return;
    }
    os << "tensor_map(" << operandName(parameter.operand) << ", "
       << stringifyTensorMapElement(parameter.element) << ", box = [";
    llvm::interleaveComma(parameter.box, os);
    os << "], swizzle = " << parameter.swizzleBytes;
    if (parameter.l2PromotionBytes != KernelParameter::kDefaultL2PromotionBytes)
      os << ", l2_promotion = " << parameter.l2PromotionBytes;
    os << ")";
  });
  os << "]";
}

std::string LaunchContract::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  print(os);
  return text;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

llvm::json::Value LaunchContract::toJSON() const {
  llvm::json::Array gridJson;
  for (const GridAxis &axis : grid) {
    llvm::json::Array factors;
    for (const GridFactor &factor : axis.factors)
      factors.push_back(llvm::json::Object{{"operand", factor.operand},
                                           {"dim", factor.dim},
                                           {"divisor", factor.divisor}});
    gridJson.push_back(
        llvm::json::Object{{"factors", std::move(factors)}, {"max", axis.max}});
  }
  llvm::json::Array parametersJson;
  for (const KernelParameter &parameter : parameters) {
    if (parameter.kind != KernelParameter::Kind::TensorMap) {
      bool isIndex = parameter.kind == KernelParameter::Kind::Index;
      parametersJson.push_back(
          llvm::json::Object{{"kind", isIndex ? "index" : "memref"},
                             {"operand", parameter.operand}});
      continue;
    }
    llvm::json::Array box;
    for (uint32_t extent : parameter.box)
      box.push_back(extent);
    parametersJson.push_back(llvm::json::Object{
        {"kind", "tensor_map"},
        {"operand", parameter.operand},
        {"element", stringifyTensorMapElement(parameter.element)},
        {"box", std::move(box)},
        {"swizzle", parameter.swizzleBytes},
        {"l2_promotion", parameter.l2PromotionBytes}});
  }
  llvm::json::Array operandsJson;
  for (const std::string &name : operands)
    operandsJson.push_back(name);
  return llvm::json::Object{{"operands", std::move(operandsJson)},
                            {"threads", threads},
                            {"shared_bytes", sharedBytes},
                            {"grid", std::move(gridJson)},
                            {"persistent", persistent},
                            {"dependent_launch", dependentLaunch},
                            {"parameters", std::move(parametersJson)}};
}

namespace {
/// Reads the fields of one JSON object, remembering the first that is
/// missing or of the wrong kind.
class JsonReader {
public:
  JsonReader(const llvm::json::Value &value, llvm::StringRef where)
      : object(value.getAsObject()), where(where.str()) {
    if (!object)
      problem = this->where + " is not an object";
  }

  template <typename T> T integer(llvm::StringRef key) {
    std::optional<int64_t> value =
        object ? object->getInteger(key) : std::nullopt;
    if (!value || *value < 0 ||
        static_cast<uint64_t>(*value) > std::numeric_limits<T>::max()) {
      note(key, "a non-negative integer");
      return 0;
    }
    return static_cast<T>(*value);
  }
  bool boolean(llvm::StringRef key) {
    std::optional<bool> value = object ? object->getBoolean(key) : std::nullopt;
    if (!value)
      note(key, "a boolean");
    return value.value_or(false);
  }
  llvm::StringRef string(llvm::StringRef key) {
    std::optional<llvm::StringRef> value =
        object ? object->getString(key) : std::nullopt;
    if (!value)
      note(key, "a string");
    return value.value_or("");
  }
  const llvm::json::Array &array(llvm::StringRef key) {
    static const llvm::json::Array empty;
    const llvm::json::Array *value = object ? object->getArray(key) : nullptr;
    if (!value)
      note(key, "an array");
    return value ? *value : empty;
  }
  void note(llvm::StringRef key, llvm::StringRef expected) {
    if (problem.empty())
      problem = where + "." + key.str() + " is missing or not " +
                expected.str();
  }
  /// The first problem of this reader or of \p others.
  std::string takeProblem() { return problem; }

private:
  const llvm::json::Object *object;
  std::string where;
  std::string problem;
};
} // namespace

llvm::Expected<LaunchContract>
LaunchContract::fromJSON(const llvm::json::Value &value) {
  auto fail = [](const llvm::Twine &what) {
    return llvm::createStringError("launch contract JSON: " + what);
  };
  LaunchContract contract;
  JsonReader top(value, "contract");
  for (const llvm::json::Value &name : top.array("operands")) {
    std::optional<llvm::StringRef> text = name.getAsString();
    if (!text)
      return fail("contract.operands holds a non-string");
    contract.operands.push_back(text->str());
  }
  contract.threads = top.integer<unsigned>("threads");
  contract.sharedBytes = top.integer<uint64_t>("shared_bytes");
  contract.persistent = top.boolean("persistent");
  contract.dependentLaunch = top.boolean("dependent_launch");
  const llvm::json::Array &grid = top.array("grid");
  if (top.takeProblem().empty() && grid.size() != 3)
    return fail(llvm::formatv("contract.grid has {0} axes, expected 3",
                              grid.size()));
  for (auto [index, axisJson] : llvm::enumerate(grid)) {
    JsonReader axis(axisJson, llvm::formatv("contract.grid[{0}]", index).str());
    contract.grid[index].max = axis.integer<int64_t>("max");
    for (auto [f, factorJson] : llvm::enumerate(axis.array("factors"))) {
      JsonReader factor(
          factorJson,
          llvm::formatv("contract.grid[{0}].factors[{1}]", index, f).str());
      contract.grid[index].factors.push_back(
          {factor.integer<unsigned>("operand"), factor.integer<unsigned>("dim"),
           factor.integer<uint64_t>("divisor")});
      if (std::string problem = factor.takeProblem(); !problem.empty())
        return fail(problem);
    }
    if (std::string problem = axis.takeProblem(); !problem.empty())
      return fail(problem);
  }
  for (auto [index, parameterJson] : llvm::enumerate(top.array("parameters"))) {
    JsonReader reader(parameterJson,
                      llvm::formatv("contract.parameters[{0}]", index).str());
    KernelParameter parameter;
    parameter.operand = reader.integer<unsigned>("operand");
    llvm::StringRef kind = reader.string("kind");
    if (kind == "tensor_map") {
      parameter.kind = KernelParameter::Kind::TensorMap;
      llvm::StringRef element = reader.string("element");
      std::optional<TensorMapElement> parsed = parseTensorMapElement(element);
      if (!parsed && reader.takeProblem().empty())
        reader.note("element", "f16, bf16 or f32");
      parameter.element = parsed.value_or(TensorMapElement::BF16);
      for (const llvm::json::Value &extent : reader.array("box")) {
        std::optional<int64_t> e = extent.getAsInteger();
        if (!e || *e < 0 || *e > std::numeric_limits<uint32_t>::max())
          return fail(llvm::formatv(
              "contract.parameters[{0}].box holds a non-extent", index));
        parameter.box.push_back(static_cast<uint32_t>(*e));
      }
      parameter.swizzleBytes = reader.integer<unsigned>("swizzle");
      parameter.l2PromotionBytes = reader.integer<unsigned>("l2_promotion");
    } else if (kind == "index") {
      parameter.kind = KernelParameter::Kind::Index;
    } else if (kind != "memref" && reader.takeProblem().empty()) {
      reader.note("kind", "memref, tensor_map or index");
    }
    if (std::string problem = reader.takeProblem(); !problem.empty())
      return fail(problem);
    contract.parameters.push_back(std::move(parameter));
  }
  if (std::string problem = top.takeProblem(); !problem.empty())
    return fail(problem);
  if (llvm::Error err = contract.verify())
    return std::move(err);
  return contract;
}

llvm::Expected<LaunchContract> LaunchContract::parseJSON(llvm::StringRef text) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return llvm::createStringError("launch contract JSON: " +
                                   llvm::toString(value.takeError()));
  return fromJSON(*value);
}

llvm::hash_code fmha::hash_value(const LaunchContract &contract) {
  // The readable form holds every field.
  return llvm::hash_value(contract.str());
}
