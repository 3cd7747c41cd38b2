#pragma once
// The prepared form of one CRD version's schema (schema.h's Compiled), shared by the OpenAPI
// validation (schema_validation.cpp) and the rule evaluation (schema_rules.cpp).
//
// Threads: immutable once compile() returns; read by any number of request threads.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mka/cel/cel.h"
#include "mka/cel/regex.h"
#include "schema.h"

namespace mka::sandbox::schema {

struct Compiled {
  struct Rule {
    std::string rule;     // as written, for messages
    std::string message;  // trimmed; empty when the rule has none
    std::string reason;   // FieldValueInvalid (or empty), FieldValueForbidden, FieldValueRequired, FieldValueDuplicate
    std::string fieldPath;  // normalized ("spec.x", no leading dot); empty when the rule has none
    cel::Program program;
    std::optional<cel::Program> messageExpression;
  };
  // One schema node that has rules at or below it. Nodes without rules below are left out.
  struct Node {
    std::string type;  // the schema's type: kube-apiserver's "value" of a rule's field error
    std::vector<Rule> rules;
    std::vector<std::pair<std::string, Node>> properties;
    std::vector<Node> additionalProperties;  // none or one
    std::vector<Node> items;                 // none or one
    // Items of a list-type map correlate with the old list's entry that has the same keys;
    // items of other lists do not correlate, nor do the values of an atomic map.
    std::vector<std::string> mapKeys;
    bool mapList = false;
    bool atomicMap = false;
  };
  std::optional<Node> root;  // absent when the schema has no rules
  std::map<std::string, cel::Regex, std::less<>> patterns;
};

}  // namespace mka::sandbox::schema
