#pragma once
// Private to src/cel: the values the evaluator computes with, the syntax tree the parser builds
// and the evaluator walks, and how the parts hand them over (lexer.cpp -> parser.cpp ->
// evaluator.cpp, tied together by program.cpp).
//
// Threads: a Node tree is built once by compile() and only read afterwards, from any thread;
// a Value belongs to the one evaluation that made it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mka/cel/cel.h"
#include "mka/cel/regex.h"

namespace mka::cel::internal {

// 2^63 and 2^64 as doubles, exactly: the bounds of int and uint conversions and comparisons.
inline constexpr double kTwo63 = 9223372036854775808.0;
inline constexpr double kTwo64 = 18446744073709551616.0;

using nlohmann::json;

// ---- values

enum class Kind { Null, Bool, Int, Uint, Double, String, List, Map };

// CEL's name of the type, as messages spell it: null_type, bool, int, uint, double, string,
// list, map.
std::string_view kindName(Kind kind);

// A CEL value. Lists and maps read from the activation stay references into its JSON (a rule on
// a Workload's root would otherwise copy the whole object on every `self`); lists and maps the
// expression builds are shared, immutable vectors.
class Value {
 public:
  Value() = default;  // null
  static Value ofBool(bool v);
  static Value ofInt(std::int64_t v);
  static Value ofUint(std::uint64_t v);
  static Value ofDouble(double v);
  static Value ofString(std::string v);
  static Value ofList(std::vector<Value> items);
  // Keys are bool, int, uint or string and distinct (the evaluator checks before building).
  static Value ofMap(std::vector<std::pair<Value, Value>> entries);
  // Scalars are copied, arrays and objects referenced: `value` must outlive the Value.
  // Integers beyond int64 become doubles, as Go's JSON decoding in kube-apiserver makes them.
  static Value fromJson(const json& value);

  Kind kind() const { return kind_; }
  bool isNumber() const { return kind_ == Kind::Int || kind_ == Kind::Uint || kind_ == Kind::Double; }
  bool boolValue() const { return bool_; }
  std::int64_t intValue() const { return int_; }
  std::uint64_t uintValue() const { return uint_; }
  double doubleValue() const { return double_; }
  const std::string& stringValue() const { return string_; }

  // Elements of a list, entries of a map.
  std::size_t size() const;
  // Element i < size() of a list.
  Value item(std::size_t i) const;
  // The value of a map under `key`; nullopt when the map has no such key. Keys of different
  // numeric types match by value (1 and 1u are the same key).
  std::optional<Value> find(const Value& key) const;
  // A map's keys, in iteration order (JSON objects: sorted).
  std::vector<Value> keys() const;

  // Throws Failure for a map with a key that is not a string.
  json toJson() const;

 private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  std::int64_t int_ = 0;
  std::uint64_t uint_ = 0;
  double double_ = 0;
  std::string string_;
  // A list or a map read from the activation.
  const json* json_ = nullptr;
  // A list, or a map as key, value, key, value, ..., built by the expression.
  std::shared_ptr<const std::vector<Value>> items_;
};

// Numeric order across int, uint and double without rounding: -1, 0 or 1, or nullopt when a
// NaN makes them unordered. Both must be numbers.
std::optional<int> compareNumbers(const Value& a, const Value& b);

// Go's %g of a double (strconv.FormatFloat(d, 'g', -1, 64)), which cel-go's string() writes.
std::string formatDouble(double d);

// ---- errors

// An evaluation error: absorbed by && and ||, all() and exists() when the other operands decide
// the result, else reported as EvalError. `offset` is the byte offset in the expression of the
// innermost node that failed (npos until the evaluator fills it in).
class Failure : public std::runtime_error {
 public:
  explicit Failure(const std::string& message, std::size_t offset = std::string::npos)
      : std::runtime_error(message), offset(offset) {}
  std::size_t offset;
};

// The cost limit was reached: never absorbed.
class CostExceeded : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- syntax

struct Token {
  enum class Type { End, Ident, Int, Uint, Double, String, Bytes, Symbol };
  Type type = Type::End;
  std::size_t offset = 0;
  // Ident: the name; Symbol: the operator ("==", "(", "?"); String: the decoded value.
  std::string text;
  // Int and Uint: the magnitude (a minus sign is a separate token).
  std::uint64_t integer = 0;
  double real = 0;
};

// The tokens of `expression`, ending with an End token. Throws CompileError.
std::vector<Token> tokenize(std::string_view expression);

// Where `offset` is, as a message says it: "column 5", or "line 2, column 3" when the
// expression has several lines. Columns count code points from 1.
struct Position {
  int line = 1;
  int column = 1;
};
Position positionOf(std::string_view expression, std::size_t offset);
std::string describePosition(std::string_view expression, std::size_t offset);
// A CompileError "<what> at column N" followed by ": <fix>" when `fix` is given.
[[noreturn]] void failCompile(std::string_view expression, std::size_t offset, std::string_view what,
                              std::string_view fix = {});

enum class Op { Add, Sub, Mul, Div, Mod, Eq, Ne, Lt, Le, Gt, Ge, In };
enum class Function {
  Size,
  Contains,
  StartsWith,
  EndsWith,
  Matches,
  LowerAscii,
  UpperAscii,
  Int,
  Uint,
  Double,
  String,
  Bool,
  Dyn
};
enum class Macro { All, Exists, ExistsOne, Filter, Map, MapFilter };

struct Node {
  enum class Type {
    Literal,
    Ident,
    Select,       // children: operand; name: the field
    Has,          // children: operand; name: the field
    Index,        // children: operand, index
    Call,         // children: the receiver (for x.f(y)) then the arguments
    List,         // children: the elements
    Map,          // children: key, value, key, value, ...
    Conditional,  // children: condition, then, else
    And,
    Or,
    Not,
    Negate,
    Binary,        // children: left, right
    Comprehension  // children: the range, then the predicate and/or transform; name: the variable
  };

  Type type = Type::Literal;
  std::size_t offset = 0;
  // Levels of nodes in this subtree, bounded by Program::kMaxNesting.
  int height = 1;
  Value literal;
  std::string name;
  Op op = Op::Add;
  Function function = Function::Size;
  Macro macro = Macro::All;
  // Ident, once resolved: a declared variable (index into Parsed::variables) or the variable of
  // the comprehension `slot` levels deep.
  int variable = -1;
  int slot = -1;
  std::vector<std::unique_ptr<Node>> children;
  // matches(): the literal pattern, compiled once.
  std::shared_ptr<const Regex> regex;
};

struct Parsed {
  std::unique_ptr<Node> root;
  // How many comprehensions nest at most (the evaluator's slots).
  int slots = 0;
  // The variables the expression may read, in the order of Node::variable, and whether it does.
  std::vector<std::string> variables;
  std::vector<bool> uses;
};

// Parses, expands macros, checks functions and resolves names against `variables`. Throws
// CompileError.
Parsed parse(std::string_view expression, std::vector<std::string> variables);

// Evaluates `root` with the declared variables' values (`variables[i]` for Parsed::variables[i],
// null when absent and unused). Throws Failure or CostExceeded.
Value evaluate(const Node& root, const std::vector<const json*>& variables, int slots, std::uint64_t costLimit);

}  // namespace mka::cel::internal
