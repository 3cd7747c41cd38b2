#include "internal.h"

namespace mka::cel {

using internal::kVariableCount;
using internal::kVariables;

struct Program::Compiled {
  std::string expression;
  internal::Parsed parsed;
};

CompileError::CompileError(const std::string& message, int line, int column)
    : Error(message), line_(line), column_(column) {}

EvalError::EvalError(const std::string& message, int column) : Error(message), column_(column) {}

Program Program::compile(std::string_view expression) {
  auto compiled = std::make_shared<Compiled>();
  compiled->expression = std::string(expression);
  compiled->parsed = internal::parse(compiled->expression);
  return Program(std::move(compiled));
}

nlohmann::json Program::evaluate(const Activation& activation, std::uint64_t costLimit) const {
  const auto& parsed = compiled_->parsed;
  std::vector<const nlohmann::json*> values(kVariableCount, nullptr);
  for (int v = 0; v < kVariableCount; ++v) {
    if (!parsed.uses[v]) continue;
    const auto it = activation.variables.find(kVariables[v]);
    if (it == activation.variables.end() || !it->second) {
      throw EvalError("no value for " + std::string(kVariables[v]) + ", which the expression reads: " +
                          (kVariables[v] == "oldSelf"
                               ? "a transition rule is evaluated on updates only, with the stored value as oldSelf"
                               : "pass the value the rule validates as self"),
                      0);
    }
    values[static_cast<std::size_t>(v)] = it->second;
  }
  try {
    return internal::evaluate(*parsed.root, values, parsed.slots, costLimit).toJson();
  } catch (const internal::Failure& f) {
    const int column = f.offset == std::string::npos ? 0 : internal::positionOf(compiled_->expression, f.offset).column;
    throw EvalError(f.what(), column);
  } catch (const internal::CostExceeded& e) {
    throw EvalError(e.what(), 0);
  }
}

bool Program::usesOldSelf() const { return compiled_->parsed.uses[1]; }

const std::string& Program::expression() const { return compiled_->expression; }

}  // namespace mka::cel
