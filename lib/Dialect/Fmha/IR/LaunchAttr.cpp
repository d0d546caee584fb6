//===- LaunchAttr.cpp - #fmha.launch, a kernel's launch contract ----------===//
//
// Part of FlashCore. The attribute's syntax (LaunchContract::print writes
// it, the parser below reads it) and the checks of `fmha.launch` against the
// gpu.func that carries it.
//
//===----------------------------------------------------------------------===//

#include "fmha/Dialect/Fmha/FmhaDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::fmha;

namespace {
/// Reads the body of `#fmha.launch<...>`; each parse function fails after
/// reporting at the offending token.
class LaunchParser {
public:
  explicit LaunchParser(AsmParser &parser) : parser(parser) {}

  FailureOr<LaunchContract> parse() {
    if (parser.parseLess() || parseKey("operands") ||
        parser.parseCommaSeparatedList(
            AsmParser::Delimiter::Square,
            [&]() -> ParseResult {
              std::string name;
              if (parser.parseKeywordOrString(&name))
                return failure();
              contract.operands.push_back(std::move(name));
              return success();
            }) ||
        parser.parseComma() || parseKey("threads") ||
        parser.parseInteger(contract.threads) || parser.parseComma() ||
        parseKey("shared_bytes") ||
        parser.parseInteger(contract.sharedBytes) || parser.parseComma() ||
        parseKey("grid") || parseGrid() || parser.parseComma())
      return failure();
    if (succeeded(parser.parseOptionalKeyword("persistent"))) {
      contract.persistent = true;
      if (parser.parseComma())
        return failure();
    }
    if (succeeded(parser.parseOptionalKeyword("dependent_launch"))) {
      contract.dependentLaunch = true;
      if (parser.parseComma())
        return failure();
    }
    if (parseKey("parameters") ||
        parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                       [&]() { return parseParameter(); }) ||
        parser.parseGreater())
      return failure();
    return contract;
  }

private:
  ParseResult parseKey(StringRef key) {
    return failure(parser.parseKeyword(key) || parser.parseEqual());
  }

  /// An operand's name, as its index.
  ParseResult parseOperand(unsigned &operand) {
    SMLoc loc = parser.getCurrentLocation();
    StringRef name;
    if (parser.parseKeyword(&name))
      return failure();
    auto found = llvm::find(contract.operands, name);
    if (found == contract.operands.end())
      return parser.emitError(loc, "'") << name << "' is not a launch operand";
    operand = found - contract.operands.begin();
    return success();
  }

  /// `name[dim]` or `ceildiv(name[dim], divisor)`.
  ParseResult parseFactor(GridFactor &factor) {
    bool divided = succeeded(parser.parseOptionalKeyword("ceildiv"));
    if ((divided && parser.parseLParen()) || parseOperand(factor.operand) ||
        parser.parseLSquare() || parser.parseInteger(factor.dim) ||
        parser.parseRSquare())
      return failure();
    if (divided &&
        (parser.parseComma() || parser.parseInteger(factor.divisor) ||
         parser.parseRParen()))
      return failure();
    return success();
  }

  /// `1`, or factors joined by `*`, optionally inside `min(..., max)`.
  ParseResult parseAxis(GridAxis &axis) {
    bool clamped = succeeded(parser.parseOptionalKeyword("min"));
    if (clamped && parser.parseLParen())
      return failure();
    int64_t one = 0;
    OptionalParseResult constant = parser.parseOptionalInteger(one);
    if (constant.has_value()) {
      if (failed(*constant))
        return failure();
      if (one != 1)
        return parser.emitError(parser.getCurrentLocation(),
                                "a grid axis without factors is 1, got ")
               << one;
    } else {
      do {
        if (parseFactor(axis.factors.emplace_back()))
          return failure();
      } while (succeeded(parser.parseOptionalStar()));
    }
    if (clamped && (parser.parseComma() || parser.parseInteger(axis.max) ||
                    parser.parseRParen()))
      return failure();
    return success();
  }

  ParseResult parseGrid() {
    unsigned axis = 0;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseCommaSeparatedList(
            AsmParser::Delimiter::Square, [&]() -> ParseResult {
              if (axis == 3)
                return parser.emitError(parser.getCurrentLocation(),
                                        "a grid has 3 axes");
              return parseAxis(contract.grid[axis++]);
            }))
      return failure();
    if (axis != 3)
      return parser.emitError(loc, "a grid has 3 axes, got ") << axis;
    return success();
  }

  /// An operand's name (its memref descriptor), `index(name)` (an index
  /// operand's value) or
  /// `tensor_map(name, element, box = [...], swizzle = bytes)`, with
  /// `, l2_promotion = bytes` before the `)` where it is not 128.
  ParseResult parseParameter() {
    KernelParameter &parameter = contract.parameters.emplace_back();
    if (succeeded(parser.parseOptionalKeyword("index"))) {
      parameter.kind = KernelParameter::Kind::Index;
      return failure(parser.parseLParen() || parseOperand(parameter.operand) ||
                     parser.parseRParen());
    }
    if (failed(parser.parseOptionalKeyword("tensor_map")))
      return parseOperand(parameter.operand);
    parameter.kind = KernelParameter::Kind::TensorMap;
    SMLoc elementLoc;
    StringRef element;
    if (parser.parseLParen() || parseOperand(parameter.operand) ||
        parser.parseComma() ||
        (elementLoc = parser.getCurrentLocation(),
         parser.parseKeyword(&element)))
      return failure();
    std::optional<TensorMapElement> parsed = parseTensorMapElement(element);
    if (!parsed)
      return parser.emitError(elementLoc, "tensor map element must be f16, "
                                          "bf16 or f32, got ")
             << element;
    parameter.element = *parsed;
    if (parser.parseComma() || parseKey("box") ||
        parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                       [&]() {
                                         return parser.parseInteger(
                                             parameter.box.emplace_back());
                                       }) ||
        parser.parseComma() || parseKey("swizzle") ||
        parser.parseInteger(parameter.swizzleBytes))
      return failure();
    if (succeeded(parser.parseOptionalComma()) &&
        (parseKey("l2_promotion") ||
         parser.parseInteger(parameter.l2PromotionBytes)))
      return failure();
    return parser.parseRParen();
  }

  AsmParser &parser;
  LaunchContract contract;
};
} // namespace

Attribute LaunchAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  FailureOr<LaunchContract> contract = LaunchParser(parser).parse();
  if (failed(contract))
    return {};
  return parser.getChecked<LaunchAttr>(loc, parser.getContext(),
                                       std::move(*contract));
}

void LaunchAttr::print(AsmPrinter &printer) const {
  printer << "<";
  getContract().print(printer.getStream());
  printer << ">";
}

LogicalResult LaunchAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 LaunchContract contract) {
  if (llvm::Error err = contract.verify())
    return emitError() << llvm::toString(std::move(err));
  for (const std::string &name : contract.operands)
    if (llvm::is_contained({StringRef("min"), StringRef("ceildiv"),
                            StringRef("tensor_map"), StringRef("index")},
                           StringRef(name)) ||
        llvm::count(contract.operands, name) != 1)
      return emitError() << "launch operand names must be unique and not "
                            "min, ceildiv, tensor_map or index, got '"
                         << name << "'";
  return success();
}

/// Checks that \p func's parameters are the ones \p contract lists: a
/// memref of the operand's rank per memref parameter, a pointer (to the
/// 128-byte map) or a tensor map descriptor per tensor map. After the
/// lowering to LLVM a memref parameter is many, and only the count of
/// leading tensor maps is checked there.
static LogicalResult verifyLaunchedFunction(Operation *func,
                                            LaunchContract contract) {
  auto gpuFunc = dyn_cast<gpu::GPUFuncOp>(func);
  if (!gpuFunc)
    return success();
  ArrayRef<Type> inputs = gpuFunc.getArgumentTypes();
  if (inputs.size() != contract.parameters.size())
    return func->emitOpError("has ")
           << inputs.size() << " parameters, its fmha.launch contract lists "
           << contract.parameters.size();
  // Each operand's rank, as its memref parameters give it.
  SmallVector<std::optional<int64_t>> ranks(contract.operands.size());
  for (auto [index, parameter, type] :
       llvm::enumerate(contract.parameters, inputs)) {
    StringRef operand = contract.operands[parameter.operand];
    if (parameter.kind == KernelParameter::Kind::TensorMap) {
      if (!isa<LLVM::LLVMPointerType, nvgpu::TensorMapDescriptorType>(type))
        return func->emitOpError("parameter ")
               << index << " is " << type << ", but fmha.launch makes it the "
               << "tensor map of '" << operand << "'";
      continue;
    }
    if (parameter.kind == KernelParameter::Kind::Index) {
      if (!type.isIndex() && !type.isInteger(64))
        return func->emitOpError("parameter ")
               << index << " is " << type << ", but fmha.launch makes it the "
               << "index '" << operand << "'";
      ranks[parameter.operand] = 1;
      continue;
    }
    auto memref = dyn_cast<MemRefType>(type);
    if (!memref)
      return func->emitOpError("parameter ")
             << index << " is " << type << ", but fmha.launch makes it the "
             << "memref descriptor of '" << operand << "'";
    ranks[parameter.operand] = memref.getRank();
  }
  for (auto [axis, rule] : llvm::enumerate(contract.grid))
    for (const GridFactor &factor : rule.factors)
      if (ranks[factor.operand] && factor.dim >= *ranks[factor.operand])
        return func->emitOpError("fmha.launch's grid reads ")
               << contract.operands[factor.operand] << "[" << factor.dim
               << "], but that operand has rank " << *ranks[factor.operand];
  return success();
}

LogicalResult FmhaDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  if (attribute.getName() != LaunchAttr::getFuncAttrName())
    return op->emitError("unknown fmha attribute on an operation: ")
           << attribute.getName();
  auto launch = dyn_cast<LaunchAttr>(attribute.getValue());
  if (!launch)
    return op->emitOpError("fmha.launch must be a #fmha.launch, got ")
           << attribute.getValue();
  if (!isa<gpu::GPUFuncOp, FunctionOpInterface>(op))
    return op->emitOpError("fmha.launch belongs on a kernel function");
  return verifyLaunchedFunction(op, launch.getContract());
}
