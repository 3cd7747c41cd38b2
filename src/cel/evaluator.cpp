// Evaluation of a checked tree, with CEL's semantics: strict operators, errors as exceptions
// that && and ||, all() and exists() absorb when the other operands decide, and a cost counter
// that stops a run past its limit.

#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>

#include "internal.h"

namespace mka::cel::internal {
namespace {

// Equality walks values as deep as they nest; JSON from a request can nest deeper than the stack
// allows.
constexpr int kMaxValueDepth = 1000;

std::string kind(const Value& v) { return std::string(kindName(v.kind())); }

[[noreturn]] void noOverload(std::string_view op, const Value& a) {
  throw Failure("no such overload: " + std::string(op) + "(" + kind(a) + ")");
}
[[noreturn]] void noOverload(std::string_view op, const Value& a, const Value& b) {
  throw Failure("no such overload: " + kind(a) + " " + std::string(op) + " " + kind(b));
}

// How a key reads in "no such key: ...".
std::string keyText(const Value& key) {
  switch (key.kind()) {
    case Kind::String: return key.stringValue();
    case Kind::Int: return std::to_string(key.intValue());
    case Kind::Uint: return std::to_string(key.uintValue());
    case Kind::Bool: return key.boolValue() ? "true" : "false";
    case Kind::Double: return formatDouble(key.doubleValue());
    default: return kind(key);
  }
}

std::size_t codePoints(const std::string& s) {
  std::size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

template <class T>
std::optional<T> parseInteger(std::string_view s) {
  // Go's strconv.ParseInt takes a leading '+', ParseUint does not.
  if (std::is_signed_v<T> && !s.empty() && s[0] == '+') s.remove_prefix(1);
  T out{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 10);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return out;
}

// One evaluation: the values of the macros' variables and the cost spent so far.
//
// Threads: one per Program::evaluate() call, on the calling thread; the tree it walks is shared
// and only read.
class Evaluator {
 public:
  Evaluator(const std::vector<const json*>& variables, int slots, std::uint64_t limit)
      : variables_(variables), locals_(static_cast<std::size_t>(slots)), limit_(limit) {}

  Value eval(const Node& n) {
    charge(1);
    try {
      return evalNode(n);
    } catch (Failure& f) {
      if (f.offset == std::string::npos) f.offset = n.offset;
      throw;
    }
  }

 private:
  void charge(std::uint64_t units) {
    cost_ += units;
    if (cost_ > limit_)
      throw CostExceeded("cost limit exceeded: the expression took more than " + std::to_string(limit_) + " steps");
  }
  void chargeBytes(std::size_t bytes) { charge(bytes / 64); }

  Value evalNode(const Node& n) {
    switch (n.type) {
      case Node::Type::Literal: return n.literal;
      case Node::Type::Ident:
        if (n.slot >= 0) return locals_[static_cast<std::size_t>(n.slot)];
        return Value::fromJson(*variables_[static_cast<std::size_t>(n.variable)]);
      case Node::Type::Select: return select(eval(*n.children[0]), n.name);
      case Node::Type::Has: {
        const Value operand = eval(*n.children[0]);
        if (operand.kind() != Kind::Map) noOverload("has", operand);
        return Value::ofBool(operand.find(Value::ofString(n.name)).has_value());
      }
      case Node::Type::Index: return index(eval(*n.children[0]), eval(*n.children[1]));
      case Node::Type::Call: return call(n);
      case Node::Type::List: {
        std::vector<Value> items;
        items.reserve(n.children.size());
        for (const auto& c : n.children) items.push_back(eval(*c));
        return Value::ofList(std::move(items));
      }
      case Node::Type::Map: return mapLiteral(n);
      case Node::Type::Conditional: {
        const Value condition = eval(*n.children[0]);
        if (condition.kind() != Kind::Bool) noOverload("_?_:_", condition);
        return eval(*n.children[condition.boolValue() ? 1 : 2]);
      }
      case Node::Type::And: return logical(n, false);
      case Node::Type::Or: return logical(n, true);
      case Node::Type::Not: {
        const Value v = eval(*n.children[0]);
        if (v.kind() != Kind::Bool) noOverload("!", v);
        return Value::ofBool(!v.boolValue());
      }
      case Node::Type::Negate: return negate(eval(*n.children[0]));
      case Node::Type::Binary: {
        Value left = eval(*n.children[0]);
        return binary(n.op, left, eval(*n.children[1]));
      }
      case Node::Type::Comprehension: return comprehension(n);
    }
    throw Failure("unknown node");
  }

  // && (decisive false) and || (decisive true): the decisive value on either side wins over an
  // error or a non-bool on the other, in either order.
  Value logical(const Node& n, bool decisive) {
    const std::string_view op = decisive ? "||" : "&&";
    std::optional<Failure> error;
    try {
      const Value left = eval(*n.children[0]);
      if (left.kind() != Kind::Bool) noOverload(op, left);
      if (left.boolValue() == decisive) return left;
    } catch (const Failure& f) {
      error = f;
    }
    Value right;
    try {
      right = eval(*n.children[1]);
      if (right.kind() != Kind::Bool) noOverload(op, right);
    } catch (const Failure&) {
      if (error) throw *error;
      throw;
    }
    if (right.boolValue() == decisive) return right;
    if (error) throw *error;
    return right;
  }

  Value select(const Value& operand, const std::string& field) {
    if (operand.kind() != Kind::Map)
      throw Failure("no such overload: field selection ." + field + " on " + kind(operand));
    auto value = operand.find(Value::ofString(field));
    if (!value) throw Failure("no such key: " + field);
    return std::move(*value);
  }

  Value index(const Value& operand, const Value& key) {
    if (operand.kind() == Kind::List) {
      std::int64_t i = 0;
      if (key.kind() == Kind::Int) {
        i = key.intValue();
      } else if (key.kind() == Kind::Uint) {
        i = key.uintValue() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                ? std::numeric_limits<std::int64_t>::max()
                : static_cast<std::int64_t>(key.uintValue());
      } else {
        noOverload("[]", operand, key);
      }
      if (i < 0 || static_cast<std::uint64_t>(i) >= operand.size())
        throw Failure("index out of range: " + std::to_string(i));
      return operand.item(static_cast<std::size_t>(i));
    }
    if (operand.kind() == Kind::Map) {
      auto value = operand.find(key);
      if (!value) throw Failure("no such key: " + keyText(key));
      return std::move(*value);
    }
    noOverload("[]", operand, key);
  }

  Value mapLiteral(const Node& n) {
    std::vector<std::pair<Value, Value>> entries;
    std::vector<Value> keys;
    for (std::size_t i = 0; i + 1 < n.children.size(); i += 2) {
      Value key = eval(*n.children[i]);
      const Kind k = key.kind();
      if (k != Kind::Bool && k != Kind::Int && k != Kind::Uint && k != Kind::String)
        throw Failure("unsupported key type " + kind(key) + " in a map literal", n.children[i]->offset);
      charge(keys.size());
      for (const auto& seen : keys)
        if (equals(seen, key, 0))
          throw Failure("repeated key in a map literal: " + keyText(key), n.children[i]->offset);
      keys.push_back(key);
      entries.emplace_back(std::move(key), eval(*n.children[i + 1]));
    }
    return Value::ofMap(std::move(entries));
  }

  Value negate(const Value& v) {
    if (v.kind() == Kind::Int) {
      if (v.intValue() == std::numeric_limits<std::int64_t>::min()) throw Failure("integer overflow");
      return Value::ofInt(-v.intValue());
    }
    if (v.kind() == Kind::Double) return Value::ofDouble(-v.doubleValue());
    noOverload("-", v);
  }

  // CEL's heterogeneous equality: values of different types are unequal, except numbers, which
  // compare by value.
  bool equals(const Value& a, const Value& b, int depth) {
    charge(1);
    if (depth > kMaxValueDepth) throw Failure("values nest deeper than " + std::to_string(kMaxValueDepth) + " levels");
    if (a.isNumber() && b.isNumber()) return compareNumbers(a, b) == 0;
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
      case Kind::Null: return true;
      case Kind::Bool: return a.boolValue() == b.boolValue();
      case Kind::String: chargeBytes(a.stringValue().size()); return a.stringValue() == b.stringValue();
      case Kind::List:
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
          if (!equals(a.item(i), b.item(i), depth + 1)) return false;
        return true;
      case Kind::Map:
        if (a.size() != b.size()) return false;
        for (const auto& key : a.keys()) {
          const auto other = b.find(key);
          if (!other || !equals(*a.find(key), *other, depth + 1)) return false;
        }
        return true;
      default: return false;
    }
  }

  // -1, 0, 1, or nullopt for NaN; an error for values without an order.
  std::optional<int> compare(std::string_view op, const Value& a, const Value& b) {
    if (a.isNumber() && b.isNumber()) return compareNumbers(a, b);
    if (a.kind() == Kind::String && b.kind() == Kind::String) {
      chargeBytes(std::min(a.stringValue().size(), b.stringValue().size()));
      const int c = a.stringValue().compare(b.stringValue());
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.kind() == Kind::Bool && b.kind() == Kind::Bool) return static_cast<int>(a.boolValue()) - b.boolValue();
    noOverload(op, a, b);
  }

  Value binary(Op op, const Value& a, const Value& b) {
    switch (op) {
      case Op::Eq: return Value::ofBool(equals(a, b, 0));
      case Op::Ne: return Value::ofBool(!equals(a, b, 0));
      case Op::Lt: {
        const auto c = compare("<", a, b);
        return Value::ofBool(c && *c < 0);
      }
      case Op::Le: {
        const auto c = compare("<=", a, b);
        return Value::ofBool(c && *c <= 0);
      }
      case Op::Gt: {
        const auto c = compare(">", a, b);
        return Value::ofBool(c && *c > 0);
      }
      case Op::Ge: {
        const auto c = compare(">=", a, b);
        return Value::ofBool(c && *c >= 0);
      }
      case Op::In: return in(a, b);
      default: return arithmetic(op, a, b);
    }
  }

  Value in(const Value& element, const Value& container) {
    if (container.kind() == Kind::List) {
      for (std::size_t i = 0; i < container.size(); ++i)
        if (equals(element, container.item(i), 0)) return Value::ofBool(true);
      return Value::ofBool(false);
    }
    if (container.kind() == Kind::Map) return Value::ofBool(container.find(element).has_value());
    noOverload("in", element, container);
  }

  // Integer arithmetic as CEL defines it: overflow and a zero divisor are errors, never a wrap.
  template <class T>
  static T checked(Op op, T x, T y, const char* overflowMessage) {
    T r = 0;
    bool overflow = false;
    switch (op) {
      case Op::Add: overflow = __builtin_add_overflow(x, y, &r); break;
      case Op::Sub: overflow = __builtin_sub_overflow(x, y, &r); break;
      case Op::Mul: overflow = __builtin_mul_overflow(x, y, &r); break;
      case Op::Div:
      case Op::Mod:
        if (y == 0) throw Failure(op == Op::Div ? "division by zero" : "modulus by zero");
        if constexpr (std::is_signed_v<T>) overflow = x == std::numeric_limits<T>::min() && y == -1;
        if (!overflow) r = op == Op::Div ? x / y : x % y;
        break;
      default: break;
    }
    if (overflow) throw Failure(overflowMessage);
    return r;
  }

  Value arithmetic(Op op, const Value& a, const Value& b) {
    static constexpr std::string_view kSpelling[] = {"+", "-", "*", "/", "%"};
    const std::string_view spelled = kSpelling[static_cast<int>(op)];
    if (a.kind() != b.kind()) noOverload(spelled, a, b);
    switch (a.kind()) {
      case Kind::Int: return Value::ofInt(checked(op, a.intValue(), b.intValue(), "integer overflow"));
      case Kind::Uint: return Value::ofUint(checked(op, a.uintValue(), b.uintValue(), "unsigned integer overflow"));
      case Kind::Double: {
        const double x = a.doubleValue();
        const double y = b.doubleValue();
        switch (op) {
          case Op::Add: return Value::ofDouble(x + y);
          case Op::Sub: return Value::ofDouble(x - y);
          case Op::Mul: return Value::ofDouble(x * y);
          case Op::Div: return Value::ofDouble(x / y);
          default: noOverload(spelled, a, b);
        }
      }
      case Kind::String:
        if (op != Op::Add) noOverload(spelled, a, b);
        chargeBytes(a.stringValue().size() + b.stringValue().size());
        return Value::ofString(a.stringValue() + b.stringValue());
      case Kind::List: {
        if (op != Op::Add) noOverload(spelled, a, b);
        charge(a.size() + b.size());
        std::vector<Value> items;
        items.reserve(a.size() + b.size());
        for (std::size_t i = 0; i < a.size(); ++i) items.push_back(a.item(i));
        for (std::size_t i = 0; i < b.size(); ++i) items.push_back(b.item(i));
        return Value::ofList(std::move(items));
      }
      default: noOverload(spelled, a, b);
    }
  }

  Value call(const Node& n) {
    const Value subject = eval(*n.children[0]);
    const std::string& name = n.name;
    switch (n.function) {
      case Function::Size:
        if (subject.kind() == Kind::String) {
          chargeBytes(subject.stringValue().size());
          return Value::ofInt(static_cast<std::int64_t>(codePoints(subject.stringValue())));
        }
        if (subject.kind() == Kind::List || subject.kind() == Kind::Map)
          return Value::ofInt(static_cast<std::int64_t>(subject.size()));
        noOverload(name, subject);
      case Function::Contains:
      case Function::StartsWith:
      case Function::EndsWith: {
        const Value arg = eval(*n.children[1]);
        if (subject.kind() != Kind::String || arg.kind() != Kind::String) noOverload(name, subject, arg);
        const std::string& s = subject.stringValue();
        const std::string& t = arg.stringValue();
        chargeBytes(s.size());
        if (n.function == Function::Contains) return Value::ofBool(s.find(t) != std::string::npos);
        if (n.function == Function::StartsWith) return Value::ofBool(s.compare(0, t.size(), t) == 0);
        return Value::ofBool(endsWith(s, t));
      }
      case Function::Matches: {
        if (subject.kind() != Kind::String) noOverload(name, subject);
        const std::string& s = subject.stringValue();
        // The automaton matcher (mka/cel/regex.h) steps through the pattern's states for every byte.
        charge(s.size() * (1 + n.children.back()->literal.stringValue().size() / 8));
        return Value::ofBool(n.regex->search(s));
      }
      case Function::LowerAscii:
      case Function::UpperAscii: {
        if (subject.kind() != Kind::String) noOverload(name, subject);
        std::string s = subject.stringValue();
        chargeBytes(s.size());
        const bool lower = n.function == Function::LowerAscii;
        for (char& c : s) {
          if (lower && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
          if (!lower && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
        }
        return Value::ofString(std::move(s));
      }
      case Function::Int: return toInt(subject);
      case Function::Uint: return toUint(subject);
      case Function::Double: return toDouble(subject);
      case Function::String: return toString(subject);
      case Function::Bool: return toBool(subject);
      case Function::Dyn: return subject;
    }
    noOverload(name, subject);
  }

  static Value toInt(const Value& v) {
    switch (v.kind()) {
      case Kind::Int: return v;
      case Kind::Uint:
        if (v.uintValue() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
          throw Failure("int() of " + std::to_string(v.uintValue()) + "u: out of the int range");
        return Value::ofInt(static_cast<std::int64_t>(v.uintValue()));
      case Kind::Double:
        if (!(v.doubleValue() >= -kTwo63 && v.doubleValue() < kTwo63))
          throw Failure("int() of " + formatDouble(v.doubleValue()) + ": out of the int range");
        return Value::ofInt(static_cast<std::int64_t>(v.doubleValue()));
      case Kind::String:
        if (auto i = parseInteger<std::int64_t>(v.stringValue())) return Value::ofInt(*i);
        throw Failure("int() of \"" + v.stringValue() + "\": not an integer");
      default: noOverload("int", v);
    }
  }

  static Value toUint(const Value& v) {
    switch (v.kind()) {
      case Kind::Uint: return v;
      case Kind::Int:
        if (v.intValue() < 0) throw Failure("uint() of " + std::to_string(v.intValue()) + ": out of the uint range");
        return Value::ofUint(static_cast<std::uint64_t>(v.intValue()));
      case Kind::Double:
        if (!(v.doubleValue() >= 0 && v.doubleValue() < kTwo64))
          throw Failure("uint() of " + formatDouble(v.doubleValue()) + ": out of the uint range");
        return Value::ofUint(static_cast<std::uint64_t>(v.doubleValue()));
      case Kind::String:
        if (auto u = parseInteger<std::uint64_t>(v.stringValue())) return Value::ofUint(*u);
        throw Failure("uint() of \"" + v.stringValue() + "\": not an unsigned integer");
      default: noOverload("uint", v);
    }
  }

  static Value toDouble(const Value& v) {
    switch (v.kind()) {
      case Kind::Double: return v;
      case Kind::Int: return Value::ofDouble(static_cast<double>(v.intValue()));
      case Kind::Uint: return Value::ofDouble(static_cast<double>(v.uintValue()));
      case Kind::String: {
        std::string_view s = v.stringValue();
        if (!s.empty() && s[0] == '+') s.remove_prefix(1);
        double d = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
        if (s.empty() || ec != std::errc{} || end != s.data() + s.size())
          throw Failure("double() of \"" + v.stringValue() + "\": not a number");
        return Value::ofDouble(d);
      }
      default: noOverload("double", v);
    }
  }

  static Value toString(const Value& v) {
    switch (v.kind()) {
      case Kind::String: return v;
      case Kind::Int: return Value::ofString(std::to_string(v.intValue()));
      case Kind::Uint: return Value::ofString(std::to_string(v.uintValue()));
      case Kind::Double: return Value::ofString(formatDouble(v.doubleValue()));
      case Kind::Bool: return Value::ofString(v.boolValue() ? "true" : "false");
      default: noOverload("string", v);
    }
  }

  // Go's strconv.ParseBool, which cel-go's bool() uses.
  static Value toBool(const Value& v) {
    if (v.kind() == Kind::Bool) return v;
    if (v.kind() != Kind::String) noOverload("bool", v);
    const std::string& s = v.stringValue();
    if (s == "1" || s == "t" || s == "T" || s == "true" || s == "TRUE" || s == "True") return Value::ofBool(true);
    if (s == "0" || s == "f" || s == "F" || s == "false" || s == "FALSE" || s == "False") return Value::ofBool(false);
    throw Failure("bool() of \"" + s + "\": not a boolean");
  }

  static std::string_view macroName(Macro m) {
    switch (m) {
      case Macro::All: return "all";
      case Macro::Exists: return "exists";
      case Macro::ExistsOne: return "exists_one";
      case Macro::Filter: return "filter";
      default: return "map";
    }
  }

  // The predicate of a macro for the current element; a non-bool is an error.
  bool predicate(const Node& n, const Node& p) {
    const Value v = eval(p);
    if (v.kind() != Kind::Bool)
      throw Failure(std::string(macroName(n.macro)) + "() needs a bool predicate, not " + kind(v), p.offset);
    return v.boolValue();
  }

  Value comprehension(const Node& n) {
    const Value range = eval(*n.children[0]);
    std::vector<Value> elements;
    if (range.kind() == Kind::List) {
      charge(range.size());
      elements.reserve(range.size());
      for (std::size_t i = 0; i < range.size(); ++i) elements.push_back(range.item(i));
    } else if (range.kind() == Kind::Map) {
      charge(range.size());
      elements = range.keys();
    } else {
      throw Failure(std::string(macroName(n.macro)) + "() needs a list or a map, not " + kind(range));
    }
    Value& variable = locals_[static_cast<std::size_t>(n.slot)];
    const Node& first = *n.children[1];

    if (n.macro == Macro::All || n.macro == Macro::Exists) {
      // Like && and ||: a decisive element wins over an error on another.
      const bool decisive = n.macro == Macro::Exists;
      std::optional<Failure> error;
      for (auto& e : elements) {
        variable = std::move(e);
        try {
          if (predicate(n, first) == decisive) return Value::ofBool(decisive);
        } catch (const Failure& f) {
          if (!error) error = f;
        }
      }
      if (error) throw *error;
      return Value::ofBool(!decisive);
    }
    if (n.macro == Macro::ExistsOne) {
      std::size_t count = 0;
      for (auto& e : elements) {
        variable = std::move(e);
        if (predicate(n, first)) ++count;
      }
      return Value::ofBool(count == 1);
    }
    std::vector<Value> out;
    for (auto& e : elements) {
      variable = e;
      switch (n.macro) {
        case Macro::Filter:
          if (predicate(n, first)) out.push_back(std::move(e));
          break;
        case Macro::Map: out.push_back(eval(first)); break;
        default:
          if (predicate(n, first)) out.push_back(eval(*n.children[2]));
          break;
      }
    }
    return Value::ofList(std::move(out));
  }

  const std::vector<const json*>& variables_;
  std::vector<Value> locals_;
  std::uint64_t limit_;
  std::uint64_t cost_ = 0;
};

}  // namespace

Value evaluate(const Node& root, const std::vector<const json*>& variables, int slots, std::uint64_t costLimit) {
  return Evaluator(variables, slots, costLimit).eval(root);
}

}  // namespace mka::cel::internal
