#pragma once
// Label and field selectors, as the API server parses and applies them (?labelSelector=,
// ?fieldSelector=, and the metav1.LabelSelector of webhook namespace/object selectors).

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::sandbox {

class LabelSelector {
 public:
  // "a=b,c!=d,e in (x,y),f notin (z),g,!h"; throws ApiError 400 naming the bad term.
  static LabelSelector parse(std::string_view text);
  // metav1.LabelSelector {matchLabels, matchExpressions[{key, operator In|NotIn|Exists|DoesNotExist, values}]};
  // null or {} selects everything. Throws ApiError 400 on a malformed selector.
  static LabelSelector fromJson(const nlohmann::json& selector);

  bool matches(const nlohmann::json& labels) const;  // labels: object or null
  bool empty() const { return requirements_.empty(); }

 private:
  struct Requirement {
    // GreaterThan/LessThan: "key>1", "key<1" (integer values), which the grammar also allows.
    enum class Op { Equals, NotEquals, In, NotIn, Exists, DoesNotExist, GreaterThan, LessThan };
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

class FieldSelector {
 public:
  // "metadata.name=x,metadata.namespace!=y"; fields are dotted paths into the object (the API
  // server allows metadata.name and metadata.namespace for every kind, plus per-kind fields).
  // Throws ApiError 400.
  static FieldSelector parse(std::string_view text);
  bool matches(const nlohmann::json& object) const;
  bool empty() const { return terms_.empty(); }
  // The dotted field names the selector uses ("metadata.name"), so the API layer can answer
  // 400 `field label not supported: <field>` for fields the kind does not allow.
  std::vector<std::string> fields() const;

 private:
  struct Term {
    std::vector<std::string> path;
    bool equals;
    std::string value;
  };
  std::vector<Term> terms_;
};

}  // namespace mka::sandbox
