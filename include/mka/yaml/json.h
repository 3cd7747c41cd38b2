#pragma once
// YAML to JSON the way Kubernetes reads manifests (sigs.k8s.io/yaml over go-yaml v2): plain
// scalars resolve by YAML 1.1 rules (true/yes/on -> true, 010 -> 8, 1_000 -> 1000, ~ -> null),
// quoted and block scalars stay strings, "<<" merge keys are honoured, and non-string keys are
// written as strings (yes: 1 -> {"true": 1}).
//
// Threads: pure functions.

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/yaml/document.h"

namespace mka::yaml {

// A value JSON cannot hold (NaN, infinities, a collection as a key, a !!int that is not one).
class ConversionError : public Error {
 public:
  using Error::Error;
};

// A scalar resolved by its spelling (plain) or its tag. Throws ConversionError.
nlohmann::json scalarToJson(const Node& node);
// What `text` written as a plain scalar reads as. Throws ConversionError (.nan, .inf).
nlohmann::json resolvePlain(const std::string& text);
// Throws ConversionError.
nlohmann::json toJson(const Node& node);
// Every document of a stream that is not empty or null. Throws SyntaxError, LimitError or
// ConversionError, each an mka::Error whose text starts "yaml: ".
std::vector<nlohmann::json> parseJson(std::string_view text, const Limits& limits);

// `value` as a block-style YAML document that parseJson reads back as `value`: strings that
// would resolve to something else (true, 010, null, "") are quoted.
std::string toYaml(const nlohmann::json& value);
// The same, keys in the order they were written.
std::string toYaml(const nlohmann::ordered_json& value);

}  // namespace mka::yaml
