#include "match_conditions.h"

#include <set>
#include <string_view>
#include <vector>

#include "mka/cel/cel.h"
#include "mka/common/json_fields.h"
#include "mka/common/validation.h"

namespace mka::sandbox::detail {
namespace {

using nlohmann::json;

// kube-apiserver's limit per webhook (validateMatchConditions).
constexpr std::size_t kMaxConditions = 64;

// The variables of kube-apiserver's matchConditions environment; `authorizer` is declared so
// that an expression reading it is told why it is refused rather than that it is unknown.
const std::vector<std::string>& declaredVariables() {
  static const std::vector<std::string> names = {"object", "oldObject", "request", "authorizer"};
  return names;
}

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\n\r\f\v");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\n\r\f\v") + 1 - first);
}

const json& conditionsOf(const json& hook) {
  static const json none = json::array();
  const auto it = hook.is_object() ? hook.find("matchConditions") : hook.end();
  return it != hook.end() && it->is_array() ? *it : none;
}

// The webhooks' conditions are as they were stored: kube-apiserver's
// ignoreMutating/ValidatingWebhookMatchConditions, which lets an old configuration be written
// back after an upgrade changed what compiles.
bool unchanged(const json& configuration, const json& old) {
  const auto webhooks = [](const json& c) {
    const auto it = c.is_object() ? c.find("webhooks") : c.end();
    return it != c.end() && it->is_array() ? *it : json::array();
  };
  const json now = webhooks(configuration);
  const json before = webhooks(old);
  if (!old.is_object() || now.size() != before.size()) return false;
  for (std::size_t i = 0; i < now.size(); ++i)
    if (conditionsOf(now[i]) != conditionsOf(before[i])) return false;
  return true;
}

void validateExpression(const std::string& expression, const std::string& path, FieldErrors& errors) {
  const std::string text = trimmed(expression);
  if (text.empty()) {
    errors.push_back({path, "Required value", ""});
    return;
  }
  const std::string invalid = "Invalid value: " + json(text).dump();
  try {
    const auto program = cel::Program::compile(text, declaredVariables());
    if (program.uses("authorizer")) {
      errors.push_back({path, invalid,
                        "compilation failed: the sandbox does not evaluate authorizer (it authorizes nothing): "
                        "write the condition without it"});
    }
  } catch (const cel::CompileError& e) {
    errors.push_back({path, invalid, std::string("compilation failed: ") + e.what()});
  }
}

}  // namespace

FieldErrors validateMatchConditions(const json& configuration, const json& old) {
  FieldErrors errors;
  if (unchanged(configuration, old)) return errors;
  const auto hooks = configuration.is_object() ? configuration.find("webhooks") : configuration.end();
  if (hooks == configuration.end() || !hooks->is_array()) return errors;
  for (std::size_t h = 0; h < hooks->size(); ++h) {
    const json& conditions = conditionsOf((*hooks)[h]);
    const std::string path = "webhooks[" + std::to_string(h) + "].matchConditions";
    if (conditions.size() > kMaxConditions) {
      errors.push_back({path, "Too many: " + std::to_string(conditions.size()),
                        "must have at most " + std::to_string(kMaxConditions) + " items"});
    }
    std::set<std::string, std::less<>> names;
    for (std::size_t i = 0; i < conditions.size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      const json& condition = conditions[i];
      validateExpression(json_fields::stringMember(condition, "expression"), at + ".expression", errors);
      const std::string name = json_fields::stringMember(condition, "name");
      if (name.empty()) {
        errors.push_back({at + ".name", "Required value", ""});
        continue;
      }
      for (const auto& problem : validation::qualifiedName(name))
        errors.push_back({at + ".name", "Invalid value: " + json(name).dump(), problem});
      if (!names.insert(name).second) errors.push_back({at + ".name", "Duplicate value: " + json(name).dump(), ""});
    }
  }
  return errors;
}

ConditionsOutcome evaluateMatchConditions(const json& hook, const json& object, const json& oldObject,
                                          const json& request) {
  const json& conditions = conditionsOf(hook);
  if (conditions.empty()) return {};
  cel::Activation activation;
  activation.variables["object"] = &object;
  activation.variables["oldObject"] = &oldObject;
  activation.variables["request"] = &request;
  std::vector<std::string> errors;
  for (const auto& condition : conditions) {
    const std::string expression = json_fields::stringMember(condition, "expression");
    try {
      const json value = cel::Program::compile(expression, declaredVariables()).evaluate(activation);
      if (value == false) return {.call = false, .error = std::nullopt};
      if (!value.is_boolean()) {
        errors.push_back("expression '" + expression + "' resulted in error: its value is " + value.dump(-1) +
                         ", not a bool: write an expression that is true or false");
      }
    } catch (const cel::CompileError& e) {
      // Stored before the sandbox checked it, or by a newer interpreter: kube-apiserver's
      // filter reports an expression that does not compile as an error of that condition.
      errors.push_back("expression '" + expression + "' resulted in error: compilation failed: " + e.what());
    } catch (const cel::EvalError& e) {
      errors.push_back("expression '" + expression + "' resulted in error: " + e.what());
    }
  }
  if (errors.empty()) return {};
  if (json_fields::stringMember(hook, "failurePolicy", "Fail") == "Ignore")
    return {.call = false, .error = std::nullopt};
  std::string aggregate = errors.front();
  if (errors.size() > 1) {
    aggregate = "[";
    for (std::size_t i = 0; i < errors.size(); ++i) aggregate += (i == 0 ? "" : ", ") + errors[i];
    aggregate += "]";
  }
  return {.call = true, .error = aggregate};
}

}  // namespace mka::sandbox::detail
