#pragma once
// A small interpreter of CEL, the Common Expression Language (github.com/google/cel-spec), for
// the sandbox to enforce CRD `x-kubernetes-validations` rules as kube-apiserver does. No CEL
// library for C++ ships in Debian, so this one is written by hand and implements only the part
// of the language that the CRDs we load use. Everything else fails at compile time with a
// CompileError, so that a caller refuses a rule it cannot enforce instead of skipping it.
//
// What it reads:
//   literals     null, true, false, 1, 0x1F, 1u, 1.5, 1e3, 'a', "a", r'raw', '''triple''',
//                [list], {map: literal}
//   operators    ?: || && == != < <= > >= in + - * / % ! unary -, .field, [index], f(x), x.f(y)
//   macros       has(x.f), e.all(x, p), e.exists(x, p), e.exists_one(x, p), e.filter(x, p),
//                e.map(x, f), e.map(x, p, f), over lists and over map keys
//   functions    size, contains, startsWith, endsWith, matches, lowerAscii, upperAscii,
//                int, uint, double, string, bool, dyn
//   variables    self and oldSelf (a rule that reads oldSelf is a transition rule), or those
//                the caller declares (a webhook's matchConditions: object, oldObject, request)
// with CEL's semantics: int, uint and double are distinct types, but == and the orderings
// compare them by numeric value (as Kubernetes' cel-go does); integer overflow and division by
// zero are errors; && and || absorb an error when the other side decides the result; selecting
// a field a map does not have is the error "no such key: <field>". Without the schema, a JSON
// integer is an int even where kube-apiserver would make it a double (a `number` field holding
// 1): comparisons agree, arithmetic mixing the two is a "no such overload" error here.
//
// Left out (a CompileError names them): bytes literals, messages and type names, optional
// syntax (x.?f), timestamps and durations, the Kubernetes libraries (quantity, url, ip, cidr,
// format, regex find, lists), string extension functions other than lowerAscii/upperAscii,
// field names escaped the Kubernetes way (__dash__, __dot__, reserved words).
//
// `matches` takes a string literal as its pattern, compiled at compile time by cel::Regex
// (mka/cel/regex.h: std::regex standing in for RE2, refusing what the two read differently).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/common/errors.h"

namespace mka::cel {

// The expression is not CEL or uses something outside the subset above. The message names the
// construct and its column (1-based, in code points; "line L, column C" when the expression has
// several lines) and says what to do instead.
class CompileError : public Error {
 public:
  CompileError(const std::string& message, int line, int column);
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  int line_;
  int column_;
};

// Evaluation failed: a missing key, a type mismatch, an overflow, the cost limit. The message
// is cel-go's wording where there is one ("no such key: name"), without a position, so a caller
// can report it as kube-apiserver does; column() says where in the expression it happened
// (0 when it concerns the whole expression).
class EvalError : public Error {
 public:
  EvalError(const std::string& message, int column);
  int column() const { return column_; }

 private:
  int column_;
};

// The values of a rule's variables, by name ("self", "oldSelf"), read from JSON as Kubernetes
// reads an object: object -> map, array -> list, integer -> int, float -> double. The pointers
// are borrowed: they must stay valid for the evaluate() call.
struct Activation {
  std::map<std::string, const nlohmann::json*, std::less<>> variables;
};

// One compiled expression.
//
// Threads: compile() is a pure function. A Program is immutable: evaluate() may run on any
// number of threads at once, and copies share the compiled tree.
class Program {
 public:
  // What one evaluation may spend before EvalError("cost limit exceeded"): one unit per
  // expression node evaluated, per element visited and per 64 bytes of string handled.
  // kube-apiserver's per-rule limit is of the same magnitude (1,000,000).
  static constexpr std::uint64_t kDefaultCostLimit = 1'000'000;
  // How deep operators and parentheses may nest.
  static constexpr int kMaxNesting = 100;

  // A CRD validation rule, reading self and oldSelf. Throws CompileError.
  static Program compile(std::string_view expression);
  // An expression that may read `variables` (and no others). Throws CompileError.
  static Program compile(std::string_view expression, std::vector<std::string> variables);

  // The value of the expression: a boolean for a rule, a string for a messageExpression (or
  // any other JSON value). Throws EvalError, also when a variable the expression reads is not
  // in `activation`.
  nlohmann::json evaluate(const Activation& activation, std::uint64_t costLimit = kDefaultCostLimit) const;

  // True when the expression reads oldSelf: kube-apiserver evaluates such a transition rule on
  // updates only.
  bool usesOldSelf() const;
  // True when the expression reads `variable` (a declared one; an iteration variable of that
  // name hides it).
  bool uses(std::string_view variable) const;
  const std::string& expression() const;

  // The checked tree (src/cel).
  struct Compiled;

 private:
  explicit Program(std::shared_ptr<const Compiled> compiled) : compiled_(std::move(compiled)) {}
  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace mka::cel
