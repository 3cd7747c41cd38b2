#include "internal.h"

namespace mka::cel {

struct Program::Compiled {
  std::string expression;
  internal::Parsed parsed;
};

CompileError::CompileError(const std::string& message, int line, int column)
    : Error(message), line_(line), column_(column) {}

EvalError::EvalError(const std::string& message, int column) : Error(message), column_(column) {}

Program Program::compile(std::string_view expression) { return compile(expression, {"self", "oldSelf"}); }

Program Program::compile(std::string_view expression, std::vector<std::string> variables) {
  auto compiled = std::make_shared<Compiled>();
  compiled->expression = std::string(expression);
  compiled->parsed = internal::parse(compiled->expression, std::move(variables));
  return Program(std::move(compiled));
}

nlohmann::json Program::evaluate(const Activation& activation, std::uint64_t costLimit) const {
  const auto& parsed = compiled_->parsed;
  std::vector<const nlohmann::json*> values(parsed.variables.size(), nullptr);
  for (std::size_t v = 0; v < parsed.variables.size(); ++v) {
    if (!parsed.uses[v]) continue;
    const std::string& name = parsed.variables[v];
    const auto it = activation.variables.find(name);
    if (it == activation.variables.end() || !it->second) {
      std::string fix = "pass its value in the activation";
      if (name == "oldSelf") fix = "a transition rule is evaluated on updates only, with the stored value as oldSelf";
      if (name == "self") fix = "pass the value the rule validates as self";
      throw EvalError("no value for " + name + ", which the expression reads: " + fix, 0);
    }
    values[v] = it->second;
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

bool Program::usesOldSelf() const { return uses("oldSelf"); }

bool Program::uses(std::string_view variable) const {
  const auto& parsed = compiled_->parsed;
  for (std::size_t v = 0; v < parsed.variables.size(); ++v)
    if (parsed.variables[v] == variable) return parsed.uses[v];
  return false;
}

const std::string& Program::expression() const { return compiled_->expression; }

}  // namespace mka::cel
