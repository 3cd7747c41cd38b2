// CEL's grammar (cel-spec langdef.md) by recursive descent, lowest precedence first:
//   Expr     = Or ["?" Or ":" Expr]
//   Or       = And {"||" And}
//   And      = Relation {"&&" Relation}
//   Relation = Addition {("==" | "!=" | "<" | "<=" | ">" | ">=" | "in") Addition}
//   Addition = Product {("+" | "-") Product}
//   Product  = Unary {("*" | "/" | "%") Unary}
//   Unary    = Member | "!" Unary | "-" Unary
//   Member   = Primary {"." IDENT ["(" [Args] ")"] | "[" Expr "]"}
//   Primary  = IDENT ["(" [Args] ")"] | "(" Expr ")" | "[" [Args] [","] "]"
//            | "{" [Expr ":" Expr {"," Expr ":" Expr}] [","] "}" | literal
// Macros become Comprehension and Has nodes as they are parsed; functions are checked against
// what the evaluator implements; names are resolved once the tree is complete.

#include <algorithm>
#include <limits>

#include "internal.h"

namespace mka::cel::internal {
namespace {

using NodePtr = std::unique_ptr<Node>;

constexpr int kMaxNesting = Program::kMaxNesting;

// CEL's reserved words: none may name a variable or a field.
constexpr std::string_view kReserved[] = {"in",       "true",    "false",     "null",     "as",  "break",  "const",
                                          "continue", "else",    "for",       "function", "if",  "import", "let",
                                          "loop",     "package", "namespace", "return",   "var", "void",   "while"};

struct Builtin {
  std::string_view name;
  Function function;
  // Arguments when called as name(...) and as x.name(...); -1 when that form does not exist.
  int globalArgs;
  int receiverArgs;
  std::string_view usage;
};

constexpr Builtin kBuiltins[] = {
    {"size", Function::Size, 1, 0, "size(x) or x.size()"},
    {"contains", Function::Contains, -1, 1, "s.contains(t)"},
    {"startsWith", Function::StartsWith, -1, 1, "s.startsWith(t)"},
    {"endsWith", Function::EndsWith, -1, 1, "s.endsWith(t)"},
    {"matches", Function::Matches, 2, 1, "s.matches('regex') or matches(s, 'regex')"},
    {"lowerAscii", Function::LowerAscii, -1, 0, "s.lowerAscii()"},
    {"upperAscii", Function::UpperAscii, -1, 0, "s.upperAscii()"},
    {"int", Function::Int, 1, -1, "int(x)"},
    {"uint", Function::Uint, 1, -1, "uint(x)"},
    {"double", Function::Double, 1, -1, "double(x)"},
    {"string", Function::String, 1, -1, "string(x)"},
    {"bool", Function::Bool, 1, -1, "bool(x)"},
    {"dyn", Function::Dyn, 1, -1, "dyn(x)"},
};

constexpr std::string_view kSupported =
    "the sandbox's CEL (src/cel) implements has, all, exists, exists_one, filter, map, size, contains, startsWith, "
    "endsWith, matches, lowerAscii, upperAscii, int, uint, double, string, bool and dyn";

std::string inQuotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string describe(const Token& t) {
  switch (t.type) {
    case Token::Type::End: return "the end of the expression";
    case Token::Type::Ident:
    case Token::Type::Symbol: return inQuotes(t.text);
    case Token::Type::String: return "a string";
    case Token::Type::Bytes: return "a bytes literal";
    default: return "a number";
  }
}

// Threads: one per compile() call, on the calling thread.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text), tokens_(tokenize(text)) {}

  NodePtr run() {
    auto e = expr();
    if (cur().type != Token::Type::End)
      fail(cur().offset, "expected an operator or the end of the expression, found " + describe(cur()));
    return e;
  }

 private:
  // Counts the recursion of expr() and unary(), the parser's only unbounded descent.
  class Nest {
   public:
    Nest(Parser& p, std::size_t offset) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.tooDeep(offset);
    }
    ~Nest() { --p_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser& p_;
  };

  [[noreturn]] void fail(std::size_t offset, std::string_view what, std::string_view fix = {}) const {
    failCompile(text_, offset, what, fix);
  }
  [[noreturn]] void tooDeep(std::size_t offset) const {
    fail(offset, "expression nests deeper than " + std::to_string(kMaxNesting) + " levels",
         "split it into several rules");
  }

  const Token& cur() const { return tokens_[pos_]; }
  bool isSymbol(std::string_view s) const { return cur().type == Token::Type::Symbol && cur().text == s; }
  bool isKeyword(std::string_view s) const { return cur().type == Token::Type::Ident && cur().text == s; }
  Token take() {
    Token t = tokens_[pos_];
    if (t.type != Token::Type::End) ++pos_;
    return t;
  }
  void expect(std::string_view symbol, std::string_view context) {
    if (!isSymbol(symbol))
      fail(cur().offset, "expected " + inQuotes(symbol) + " " + std::string(context) + ", found " + describe(cur()));
    ++pos_;
  }

  NodePtr make(Node::Type type, std::size_t offset) {
    auto n = std::make_unique<Node>();
    n->type = type;
    n->offset = offset;
    return n;
  }
  void attach(Node& parent, NodePtr child) {
    parent.height = std::max(parent.height, child->height + 1);
    if (parent.height > kMaxNesting) tooDeep(parent.offset);
    parent.children.push_back(std::move(child));
  }
  NodePtr binary(Node::Type type, const Token& op, NodePtr left, NodePtr right) {
    auto n = make(type, op.offset);
    attach(*n, std::move(left));
    attach(*n, std::move(right));
    return n;
  }

  NodePtr expr() {
    Nest nest(*this, cur().offset);
    auto condition = orExpr();
    if (!isSymbol("?")) return condition;
    const Token q = take();
    auto then = orExpr();
    expect(":", "in a conditional (c ? a : b)");
    auto otherwise = expr();
    auto n = make(Node::Type::Conditional, q.offset);
    attach(*n, std::move(condition));
    attach(*n, std::move(then));
    attach(*n, std::move(otherwise));
    return n;
  }

  NodePtr orExpr() {
    auto left = andExpr();
    while (isSymbol("||")) {
      const Token op = take();
      left = binary(Node::Type::Or, op, std::move(left), andExpr());
    }
    return left;
  }

  NodePtr andExpr() {
    auto left = relation();
    while (isSymbol("&&")) {
      const Token op = take();
      left = binary(Node::Type::And, op, std::move(left), relation());
    }
    return left;
  }

  NodePtr relation() {
    static const std::pair<std::string_view, Op> kOps[] = {{"==", Op::Eq}, {"!=", Op::Ne}, {"<", Op::Lt},
                                                           {"<=", Op::Le}, {">", Op::Gt},  {">=", Op::Ge}};
    auto left = addition();
    for (;;) {
      std::optional<Op> op;
      if (isKeyword("in")) op = Op::In;
      for (const auto& [spelling, o] : kOps)
        if (isSymbol(spelling)) op = o;
      if (!op) return left;
      const Token t = take();
      left = binary(Node::Type::Binary, t, std::move(left), addition());
      left->op = *op;
    }
  }

  NodePtr addition() {
    auto left = product();
    while (isSymbol("+") || isSymbol("-")) {
      const Token t = take();
      left = binary(Node::Type::Binary, t, std::move(left), product());
      left->op = t.text == "+" ? Op::Add : Op::Sub;
    }
    return left;
  }

  NodePtr product() {
    auto left = unary();
    while (isSymbol("*") || isSymbol("/") || isSymbol("%")) {
      const Token t = take();
      left = binary(Node::Type::Binary, t, std::move(left), unary());
      left->op = t.text == "*" ? Op::Mul : (t.text == "/" ? Op::Div : Op::Mod);
    }
    return left;
  }

  NodePtr unary() {
    Nest nest(*this, cur().offset);
    if (isSymbol("!")) {
      const Token t = take();
      auto n = make(Node::Type::Not, t.offset);
      attach(*n, unary());
      return n;
    }
    if (isSymbol("-")) {
      const Token t = take();
      // -9223372036854775808 is an int literal, not the negation of one out of range.
      if (cur().type == Token::Type::Int || cur().type == Token::Type::Double) {
        const Token number = take();
        auto n = make(Node::Type::Literal, t.offset);
        if (number.type == Token::Type::Double) {
          n->literal = Value::ofDouble(-number.real);
        } else {
          constexpr auto kMinMagnitude = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1;
          if (number.integer > kMinMagnitude)
            fail(t.offset, "integer literal out of range", "ints are 64-bit: -9223372036854775808 is the smallest");
          n->literal = Value::ofInt(number.integer == kMinMagnitude ? std::numeric_limits<std::int64_t>::min()
                                                                    : -static_cast<std::int64_t>(number.integer));
        }
        return members(std::move(n));
      }
      auto n = make(Node::Type::Negate, t.offset);
      attach(*n, unary());
      return n;
    }
    return members(primary());
  }

  NodePtr members(NodePtr operand) {
    for (;;) {
      if (isSymbol(".")) {
        ++pos_;
        if (isSymbol("?"))
          fail(cur().offset, "unsupported optional field selection \".?\"", "write has(x.f) ? x.f : default instead");
        if (cur().type != Token::Type::Ident)
          fail(cur().offset, "expected a field name after \".\", found " + describe(cur()));
        const Token name = take();
        checkName(name, true);
        if (isSymbol("(")) {
          operand = call(name, std::move(operand), arguments());
          continue;
        }
        auto n = make(Node::Type::Select, name.offset);
        n->name = name.text;
        attach(*n, std::move(operand));
        operand = std::move(n);
      } else if (isSymbol("[")) {
        const Token open = take();
        if (isSymbol("?")) fail(cur().offset, "unsupported optional index \"[?\"", "test with `in` or has() first");
        auto index = expr();
        expect("]", "after an index");
        operand = binary(Node::Type::Index, open, std::move(operand), std::move(index));
      } else if (isSymbol("{") && (operand->type == Node::Type::Ident || operand->type == Node::Type::Select)) {
        fail(cur().offset, "unsupported message construction", "only maps {key: value} and lists [a, b] can be built");
      } else {
        return operand;
      }
    }
  }

  NodePtr primary() {
    const Token t = cur();
    switch (t.type) {
      case Token::Type::Int:
        ++pos_;
        if (t.integer > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
          fail(t.offset, "integer literal out of range", "ints are 64-bit; write a uint as 18446744073709551615u");
        return literal(t, Value::ofInt(static_cast<std::int64_t>(t.integer)));
      case Token::Type::Uint: ++pos_; return literal(t, Value::ofUint(t.integer));
      case Token::Type::Double: ++pos_; return literal(t, Value::ofDouble(t.real));
      case Token::Type::String: ++pos_; return literal(t, Value::ofString(t.text));
      case Token::Type::Bytes: fail(t.offset, "unsupported bytes literal", "use a string literal");
      case Token::Type::Ident: {
        if (t.text == "true" || t.text == "false") {
          ++pos_;
          return literal(t, Value::ofBool(t.text == "true"));
        }
        if (t.text == "null") {
          ++pos_;
          return literal(t, Value());
        }
        checkName(t, false);
        ++pos_;
        if (isSymbol("(")) return call(t, nullptr, arguments());
        auto n = make(Node::Type::Ident, t.offset);
        n->name = t.text;
        return n;
      }
      case Token::Type::Symbol:
        if (t.text == "(") {
          ++pos_;
          auto e = expr();
          expect(")", "to close the \"(\" at " + describePosition(text_, t.offset));
          return e;
        }
        if (t.text == "[") return list();
        if (t.text == "{") return map();
        if (t.text == ".")
          fail(t.offset, "unsupported leading \".\" (a fully qualified name)", "write the name without the dot");
        break;
      case Token::Type::End: fail(t.offset, "unexpected end of the expression", "expected an operand");
    }
    fail(t.offset, "expected an operand, found " + describe(t));
  }

  NodePtr literal(const Token& t, Value v) {
    auto n = make(Node::Type::Literal, t.offset);
    n->literal = std::move(v);
    return n;
  }

  NodePtr list() {
    const Token open = take();
    auto n = make(Node::Type::List, open.offset);
    while (!isSymbol("]")) {
      if (isSymbol("?")) fail(cur().offset, "unsupported optional element \"?\"", "list only the elements");
      attach(*n, expr());
      if (!isSymbol(",")) break;
      ++pos_;
    }
    expect("]", "to close the list at " + describePosition(text_, open.offset));
    return n;
  }

  NodePtr map() {
    const Token open = take();
    auto n = make(Node::Type::Map, open.offset);
    while (!isSymbol("}")) {
      if (isSymbol("?")) fail(cur().offset, "unsupported optional entry \"?\"", "list only the entries");
      attach(*n, expr());
      expect(":", "between a map key and its value");
      attach(*n, expr());
      if (!isSymbol(",")) break;
      ++pos_;
    }
    expect("}", "to close the map at " + describePosition(text_, open.offset));
    return n;
  }

  // The arguments of a call, "(" included.
  std::vector<NodePtr> arguments() {
    const Token open = take();
    std::vector<NodePtr> args;
    if (isSymbol(")")) {
      ++pos_;
      return args;
    }
    for (;;) {
      args.push_back(expr());
      if (!isSymbol(",")) break;
      ++pos_;
    }
    expect(")", "to close the arguments at " + describePosition(text_, open.offset));
    return args;
  }

  void checkName(const Token& name, bool field) const {
    for (auto word : kReserved)
      if (name.text == word)
        fail(name.offset, inQuotes(name.text) + " is a reserved word",
             field ? "Kubernetes writes such a field as __" + name.text + "__, which the sandbox's CEL does not read"
                   : "it cannot name a variable");
    if (field && name.text.find("__") != std::string::npos)
      fail(name.offset, "unsupported escaped field name " + inQuotes(name.text),
           "the sandbox's CEL does not read Kubernetes' escapes (__dash__, __dot__, __slash__, __underscores__)");
  }

  NodePtr call(const Token& name, NodePtr receiver, std::vector<NodePtr> args) {
    const std::string& fn = name.text;
    if (!receiver && fn == "has") {
      if (args.size() != 1 || args[0]->type != Node::Type::Select)
        fail(name.offset, "has() takes one field selection", "write has(self.field)");
      NodePtr n = std::move(args[0]);
      n->type = Node::Type::Has;
      return n;
    }
    if (receiver && (fn == "all" || fn == "exists" || fn == "exists_one" || fn == "filter" || fn == "map"))
      return comprehension(name, std::move(receiver), std::move(args));

    const Builtin* builtin = nullptr;
    for (const auto& b : kBuiltins)
      if (b.name == fn) builtin = &b;
    if (!builtin) fail(name.offset, "unsupported function " + inQuotes(fn), kSupported);
    const int expected = receiver ? builtin->receiverArgs : builtin->globalArgs;
    if (expected != static_cast<int>(args.size()))
      fail(name.offset, "wrong arguments to " + inQuotes(fn), "call it as " + std::string(builtin->usage));

    auto n = make(Node::Type::Call, name.offset);
    n->name = fn;
    n->function = builtin->function;
    if (receiver) attach(*n, std::move(receiver));
    for (auto& a : args) attach(*n, std::move(a));
    if (n->function == Function::Matches) n->regex = pattern(*n->children.back());
    return n;
  }

  NodePtr comprehension(const Token& name, NodePtr range, std::vector<NodePtr> args) {
    const std::string& fn = name.text;
    const bool isMap = fn == "map";
    const std::string usage = isMap ? "write list.map(x, f) or list.map(x, p, f)" : "write list." + fn + "(x, p)";
    if (args.size() != 2 && !(isMap && args.size() == 3))
      fail(name.offset, fn + "() takes a variable and " + (isMap ? "a transform" : "a predicate"), usage);
    if (args[0]->type != Node::Type::Ident)
      fail(args[0]->offset, "the first argument of " + fn + "() must be a variable name", usage);
    auto n = make(Node::Type::Comprehension, name.offset);
    n->name = args[0]->name;
    n->macro = fn == "all"          ? Macro::All
               : fn == "exists"     ? Macro::Exists
               : fn == "exists_one" ? Macro::ExistsOne
               : fn == "filter"     ? Macro::Filter
               : args.size() == 3   ? Macro::MapFilter
                                    : Macro::Map;
    attach(*n, std::move(range));
    for (std::size_t i = 1; i < args.size(); ++i) attach(*n, std::move(args[i]));
    return n;
  }

  // matches()'s pattern, compiled now so a bad one fails the rule's compilation.
  std::shared_ptr<const Regex> pattern(const Node& arg) const {
    if (arg.type != Node::Type::Literal || arg.literal.kind() != Kind::String)
      fail(arg.offset, "matches() with a pattern that is not a string literal", "write the pattern as a literal");
    try {
      return std::make_shared<const Regex>(Regex::compile(arg.literal.stringValue()));
    } catch (const RegexError& e) {
      fail(arg.offset, e.what(), e.fix());
    }
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

// Binds each name to a declared variable or to the macro that declares it, innermost first.
//
// Threads: one per compile() call, on the calling thread.
class Resolver {
 public:
  Resolver(std::string_view text, Parsed& out) : text_(text), out_(out) {}

  void run(Node& n) {
    if (n.type == Node::Type::Ident) return ident(n);
    if (n.type == Node::Type::Comprehension) {
      run(*n.children[0]);
      scope_.push_back(n.name);
      n.slot = static_cast<int>(scope_.size()) - 1;
      out_.slots = std::max(out_.slots, static_cast<int>(scope_.size()));
      for (std::size_t i = 1; i < n.children.size(); ++i) run(*n.children[i]);
      scope_.pop_back();
      return;
    }
    for (auto& c : n.children) run(*c);
  }

 private:
  void ident(Node& n) {
    for (auto i = scope_.size(); i-- > 0;) {
      if (scope_[i] == n.name) {
        n.slot = static_cast<int>(i);
        return;
      }
    }
    for (std::size_t v = 0; v < out_.variables.size(); ++v) {
      if (out_.variables[v] == n.name) {
        n.variable = static_cast<int>(v);
        out_.uses[v] = true;
        return;
      }
    }
    std::string declared;
    for (const auto& v : out_.variables) declared += v + ", ";
    failCompile(text_, n.offset, "undeclared reference to " + inQuotes(n.name),
                "the expression reads " + declared + "and the variables its macros declare");
  }

  std::string_view text_;
  Parsed& out_;
  std::vector<std::string> scope_;
};

}  // namespace

Parsed parse(std::string_view expression, std::vector<std::string> variables) {
  Parsed out;
  out.uses.assign(variables.size(), false);
  out.variables = std::move(variables);
  out.root = Parser(expression).run();
  Resolver(expression, out).run(*out.root);
  return out;
}

}  // namespace mka::cel::internal
