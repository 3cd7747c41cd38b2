#include "mka/sandbox/selectors.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

#include "mka/common/validation.h"
#include "mka/sandbox/api_error.h"

// The grammar, the messages and the matching rules are those of k8s.io/apimachinery's labels
// and fields packages: kubectl users read these messages verbatim in "Error from server
// (BadRequest): ...".

namespace mka::sandbox {
namespace {

using nlohmann::json;

// ---- label selector lexer ---------------------------------------------------------------

enum class Token {
  End,
  Identifier,
  In,
  NotIn,
  Equals,
  DoubleEquals,
  NotEquals,
  Not,
  OpenPar,
  ClosedPar,
  Comma,
  Gt,
  Lt
};

struct Scanned {
  Token token;
  std::string literal;
};

bool isWhitespace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool isSpecial(char c) { return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<'; }

std::optional<Token> specialToken(std::string_view s) {
  static const std::pair<std::string_view, Token> kTokens[] = {
      {")", Token::ClosedPar},  {",", Token::Comma},         {"!", Token::Not},
      {"!=", Token::NotEquals}, {"==", Token::DoubleEquals}, {"=", Token::Equals},
      {">", Token::Gt},         {"(", Token::OpenPar},       {"<", Token::Lt},
  };
  for (const auto& [text, token] : kTokens) {
    if (text == s) return token;
  }
  return std::nullopt;
}

std::vector<Scanned> lex(std::string_view text) {
  std::vector<Scanned> out;
  std::size_t i = 0;
  while (true) {
    while (i < text.size() && isWhitespace(text[i])) ++i;
    if (i == text.size()) break;
    if (isSpecial(text[i])) {
      // Longest special-symbol token, as the Go lexer reads it ("==" over "=").
      std::string buffer;
      std::optional<Scanned> last;
      while (i < text.size() && isSpecial(text[i])) {
        buffer += text[i];
        if (auto token = specialToken(buffer)) {
          last = Scanned{*token, buffer};
          ++i;
        } else {
          break;
        }
      }
      out.push_back(*last);  // every single special character is a token
      continue;
    }
    const auto start = i;
    while (i < text.size() && !isWhitespace(text[i]) && !isSpecial(text[i])) ++i;
    std::string word(text.substr(start, i - start));
    const Token token = word == "in" ? Token::In : word == "notin" ? Token::NotIn : Token::Identifier;
    out.push_back({token, std::move(word)});
  }
  out.push_back({Token::End, ""});
  return out;
}

// A string in double quotes with JSON escapes, as Go's %q writes it; bytes that are not UTF-8
// come out as U+FFFD instead of failing the answer.
std::string quoted(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

// field.Invalid(...).Error() for a string value: `<path>: Invalid value: "<value>": <detail>`.
std::string invalidValue(const std::string& path, const std::string& value, const std::string& detail) {
  return path + ": Invalid value: " + quoted(value) + ": " + detail;
}

// Go's %#v of a []string, which field.Invalid prints for a values list.
std::string goStrings(const std::vector<std::string>& values) {
  std::string out = "[]string{";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + quoted(values[i]);
  return out + "}";
}

std::string joinProblems(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) out += (out.empty() ? "" : "; ") + e;
  return out;
}

std::string aggregate(const std::vector<std::string>& errors) {
  if (errors.size() == 1) return errors.front();
  std::string out = "[";
  for (std::size_t i = 0; i < errors.size(); ++i) out += (i ? ", " : "") + errors[i];
  return out + "]";
}

std::optional<std::int64_t> parseInt(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Label and field values as strings (a label value is a string; a field may be a number or bool).
std::string stringValue(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

}  // namespace

// ---- label selector parser ---------------------------------------------------------------

namespace {

// Validates as labels.NewRequirement does; `keyChecked` when the parser already checked the key.
std::vector<std::string> requirementErrors(const std::string& key, const std::string& opName,
                                           const std::vector<std::string>& values, bool keyChecked) {
  std::vector<std::string> errs;
  if (!keyChecked) {
    if (auto e = validation::qualifiedName(key); !e.empty()) errs.push_back(invalidValue("key", key, joinProblems(e)));
  }
  if (opName == "in" || opName == "notin") {
    if (values.empty()) {
      errs.push_back("values: Invalid value: " + goStrings(values) +
                     ": for 'in', 'notin' operators, values set can't be empty");
    }
  } else if (opName == "=" || opName == "!=") {
    if (values.size() != 1) {
      errs.push_back("values: Invalid value: " + goStrings(values) +
                     ": exact-match compatibility requires one single value");
    }
  } else if (opName == "exists" || opName == "!") {
    if (!values.empty()) {
      errs.push_back("values: Invalid value: " + goStrings(values) +
                     ": values set must be empty for exists and does not exist");
    }
  } else if (opName == "gt" || opName == "lt") {
    if (values.size() != 1) {
      errs.push_back("values: Invalid value: " + goStrings(values) +
                     ": for 'Gt', 'Lt' operators, exactly one value is required");
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!parseInt(values[i])) {
        errs.push_back(invalidValue("values[" + std::to_string(i) + "]", values[i],
                                    "for 'Gt', 'Lt' operators, the value must be an integer"));
      }
    }
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (auto e = validation::labelValue(values[i]); !e.empty()) {
      errs.push_back(invalidValue("values[" + std::to_string(i) + "][" + key + "]", values[i], joinProblems(e)));
    }
  }
  return errs;
}

// A parse failure, worded as the Go parser words it.
struct SyntaxError {
  std::string message;
};

class LabelParser {
 public:
  explicit LabelParser(std::string_view text) : items_(lex(text)) {}

  struct Parsed {
    std::string key;
    std::string op;  // "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    std::vector<std::string> values;
  };

  // Throws SyntaxError (the Go error text); the caller wraps it in an ApiError.
  std::vector<Parsed> parse() {
    std::vector<Parsed> out;
    while (true) {
      const auto& [token, literal] = lookahead();
      if (token == Token::Identifier || token == Token::Not) {
        try {
          out.push_back(requirement());
        } catch (const SyntaxError& e) {
          throw SyntaxError{"unable to parse requirement: " + e.message};
        }
        const auto next = consume();
        if (next.token == Token::End) return out;
        if (next.token != Token::Comma)
          throw SyntaxError{"found '" + next.literal + "', expected: ',' or 'end of string'"};
        const auto after = lookahead();
        if (after.token != Token::Identifier && after.token != Token::Not) {
          throw SyntaxError{"found '" + after.literal + "', expected: identifier after ','"};
        }
      } else if (token == Token::End) {
        return out;
      } else {
        throw SyntaxError{"found '" + literal + "', expected: !, identifier, or 'end of string'"};
      }
    }
  }

 private:
  // In "values" context the keywords in/notin are plain identifiers (a label may be named "in").
  Scanned lookahead(bool values = true) const {
    auto item = items_[position_];
    if (values && (item.token == Token::In || item.token == Token::NotIn)) item.token = Token::Identifier;
    return item;
  }
  Scanned consume(bool values = true) {
    auto item = lookahead(values);
    if (position_ + 1 < items_.size()) ++position_;
    return item;
  }

  Parsed requirement() {
    Parsed r;
    auto item = consume();
    bool notExists = false;
    if (item.token == Token::Not) {
      notExists = true;
      item = consume();
    }
    if (item.token != Token::Identifier) throw SyntaxError{"found '" + item.literal + "', expected: identifier"};
    if (auto e = validation::qualifiedName(item.literal); !e.empty()) {
      throw SyntaxError{invalidValue("<nil>", item.literal, joinProblems(e))};
    }
    r.key = item.literal;
    const auto next = lookahead().token;
    if (notExists || next == Token::End || next == Token::Comma) {
      r.op = notExists ? "!" : "exists";
    } else {
      r.op = op();
      if (r.op == "in" || r.op == "notin") {
        r.values = valueSet();
      } else {
        r.values = {exactValue()};
      }
    }
    std::sort(r.values.begin(), r.values.end());
    r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
    if (auto errs = requirementErrors(r.key, r.op == "==" ? "=" : r.op, r.values, true); !errs.empty()) {
      throw SyntaxError{aggregate(errs)};
    }
    if (r.op == "==") r.op = "=";
    return r;
  }

  std::string op() {
    const auto item = consume(false);
    switch (item.token) {
      case Token::In: return "in";
      case Token::NotIn: return "notin";
      case Token::Equals: return "=";
      case Token::DoubleEquals: return "==";
      case Token::NotEquals: return "!=";
      case Token::Gt: return "gt";
      case Token::Lt: return "lt";
      default: throw SyntaxError{"found '" + item.literal + "', expected: in, notin, =, ==, !=, gt, lt"};
    }
  }

  std::vector<std::string> valueSet() {
    auto item = consume();
    if (item.token != Token::OpenPar) throw SyntaxError{"found '" + item.literal + "' expected: '('"};
    const auto first = lookahead();
    if (first.token == Token::ClosedPar) {
      consume();
      return {""};  // "()" is the set holding the empty value
    }
    if (first.token != Token::Identifier && first.token != Token::Comma) {
      throw SyntaxError{"found '" + first.literal + "', expected: ',', ')' or identifier"};
    }
    std::vector<std::string> values = identifiers();
    if (consume().token != Token::ClosedPar) throw SyntaxError{"found '" + first.literal + "', expected: ')'"};
    return values;
  }

  // Empty entries (",", "(,", ",)") stand for the empty value, as in the Go parser.
  std::vector<std::string> identifiers() {
    std::vector<std::string> values;
    while (true) {
      const auto item = consume();
      if (item.token == Token::Identifier) {
        values.push_back(item.literal);
        const auto next = lookahead();
        if (next.token == Token::Comma) continue;
        if (next.token == Token::ClosedPar) return values;
        throw SyntaxError{"found '" + next.literal + "', expected: ',' or ')'"};
      }
      if (item.token == Token::Comma) {
        if (values.empty()) values.emplace_back();
        const auto next = lookahead().token;
        if (next == Token::ClosedPar) {
          values.emplace_back();
          return values;
        }
        if (next == Token::Comma) {
          consume();
          values.emplace_back();
        }
        continue;
      }
      throw SyntaxError{"found '" + item.literal + "', expected: ',', or identifier"};
    }
  }

  std::string exactValue() {
    const auto next = lookahead().token;
    if (next == Token::End || next == Token::Comma) return "";
    const auto item = consume();
    if (item.token == Token::Identifier) return item.literal;
    throw SyntaxError{"found '" + item.literal + "', expected: identifier"};
  }

  std::vector<Scanned> items_;
  std::size_t position_ = 0;
};

}  // namespace

LabelSelector LabelSelector::parse(std::string_view text) {
  std::vector<LabelParser::Parsed> parsed;
  try {
    parsed = LabelParser(text).parse();
  } catch (const SyntaxError& e) {
    throw ApiError::badRequest(e.message);
  }
  LabelSelector out;
  for (auto& p : parsed) {
    Requirement::Op op = p.op == "="        ? Requirement::Op::Equals
                         : p.op == "!="     ? Requirement::Op::NotEquals
                         : p.op == "in"     ? Requirement::Op::In
                         : p.op == "notin"  ? Requirement::Op::NotIn
                         : p.op == "exists" ? Requirement::Op::Exists
                         : p.op == "!"      ? Requirement::Op::DoesNotExist
                         : p.op == "gt"     ? Requirement::Op::GreaterThan
                                            : Requirement::Op::LessThan;
    out.requirements_.push_back({std::move(p.key), op, std::move(p.values)});
  }
  // labels.Parse sorts requirements by key; matching does not depend on it.
  std::stable_sort(out.requirements_.begin(), out.requirements_.end(),
                   [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
  return out;
}

LabelSelector LabelSelector::fromJson(const nlohmann::json& selector) {
  LabelSelector out;
  if (selector.is_null()) return out;
  if (!selector.is_object()) throw ApiError::badRequest("a label selector must be an object");
  auto fail = [](const std::vector<std::string>& errs) { return ApiError::badRequest(aggregate(errs)); };

  if (auto it = selector.find("matchLabels"); it != selector.end() && !it->is_null()) {
    if (!it->is_object()) throw ApiError::badRequest("matchLabels must be an object of strings");
    for (const auto& [key, value] : it->items()) {
      if (!value.is_string()) throw ApiError::badRequest("matchLabels." + key + " must be a string");
      std::vector<std::string> values{value.get<std::string>()};
      if (auto errs = requirementErrors(key, "=", values, false); !errs.empty()) throw fail(errs);
      out.requirements_.push_back({key, Requirement::Op::Equals, std::move(values)});
    }
  }
  if (auto it = selector.find("matchExpressions"); it != selector.end() && !it->is_null()) {
    if (!it->is_array()) throw ApiError::badRequest("matchExpressions must be a list");
    for (const auto& expr : *it) {
      if (!expr.is_object()) throw ApiError::badRequest("matchExpressions items must be objects");
      const std::string key = expr.value("key", "");
      const std::string op = expr.value("operator", "");
      std::vector<std::string> values;
      if (auto v = expr.find("values"); v != expr.end() && !v->is_null()) {
        if (!v->is_array()) throw ApiError::badRequest("matchExpressions values must be a list of strings");
        for (const auto& s : *v) {
          if (!s.is_string()) throw ApiError::badRequest("matchExpressions values must be a list of strings");
          values.push_back(s.get<std::string>());
        }
      }
      static const std::pair<std::string_view, std::pair<Requirement::Op, std::string_view>> kOps[] = {
          {"In", {Requirement::Op::In, "in"}},
          {"NotIn", {Requirement::Op::NotIn, "notin"}},
          {"Exists", {Requirement::Op::Exists, "exists"}},
          {"DoesNotExist", {Requirement::Op::DoesNotExist, "!"}},
      };
      const auto found = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) { return o.first == op; });
      if (found == std::end(kOps)) {
        throw ApiError::badRequest(quoted(op) + " is not a valid label selector operator");
      }
      const auto [kind, opName] = found->second;
      if (auto errs = requirementErrors(key, std::string(opName), values, false); !errs.empty()) throw fail(errs);
      out.requirements_.push_back({key, kind, std::move(values)});
    }
  }
  return out;
}

bool LabelSelector::matches(const nlohmann::json& labels) const {
  for (const auto& r : requirements_) {
    std::optional<std::string> value;
    if (labels.is_object()) {
      if (auto it = labels.find(r.key); it != labels.end()) value = stringValue(*it);
    }
    const bool in = value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
    bool ok = false;
    switch (r.op) {
      case Requirement::Op::Equals:
      case Requirement::Op::In: ok = in; break;
      case Requirement::Op::NotEquals:
      case Requirement::Op::NotIn: ok = !in; break;
      case Requirement::Op::Exists: ok = value.has_value(); break;
      case Requirement::Op::DoesNotExist: ok = !value.has_value(); break;
      case Requirement::Op::GreaterThan:
      case Requirement::Op::LessThan: {
        const auto have = parseInt(value.value_or(""));
        const auto want = parseInt(r.values.empty() ? "" : r.values.front());
        if (have && want)
          ok = r.op == Requirement::Op::GreaterThan ? have.value() > want.value() : have.value() < want.value();
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

// ---- field selector ---------------------------------------------------------------------

namespace {

// Commas escaped with a backslash are data, not separators.
std::vector<std::string> splitTerms(std::string_view text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  std::size_t start = 0;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (escaped) {
      escaped = false;
    } else if (text[i] == '\\') {
      escaped = true;
    } else if (text[i] == ',') {
      out.emplace_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  out.emplace_back(text.substr(start));
  return out;
}

std::string unescapeValue(const std::string& s) {
  std::string out;
  bool escaped = false;
  for (char c : s) {
    if (escaped) {
      if (c != '\\' && c != ',' && c != '=') {
        throw ApiError::badRequest(std::string("invalid field selector: invalid escape sequence: \\") + c);
      }
      out += c;
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == ',' || c == '=') {
      throw ApiError::badRequest(std::string("invalid field selector: unescaped character in value: ") + c);
    } else {
      out += c;
    }
  }
  if (escaped) throw ApiError::badRequest("invalid field selector: invalid escape sequence: \\");
  return out;
}

std::vector<std::string> splitFieldPath(const std::string& dotted) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    auto dot = dotted.find('.', start);
    out.push_back(dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

}  // namespace

FieldSelector FieldSelector::parse(std::string_view text) {
  FieldSelector out;
  auto terms = splitTerms(text);
  std::sort(terms.begin(), terms.end());  // fields.ParseSelector sorts its terms
  for (const auto& term : terms) {
    if (term.empty()) continue;
    // The first operator wins; "!=" and "==" are tried before "=" at each position.
    std::optional<std::pair<std::size_t, std::string_view>> split;
    for (std::size_t i = 0; i < term.size() && !split; ++i) {
      for (std::string_view op : {"!=", "==", "="}) {
        if (term.compare(i, op.size(), op) == 0) {
          split = std::pair{i, op};
          break;
        }
      }
    }
    if (!split) {
      throw ApiError::badRequest("invalid selector: '" + std::string(text) + "'; can't understand '" + term + "'");
    }
    const auto [at, op] = *split;
    out.terms_.push_back({splitFieldPath(term.substr(0, at)), op != "!=", unescapeValue(term.substr(at + op.size()))});
  }
  return out;
}

bool FieldSelector::matches(const nlohmann::json& object) const {
  for (const auto& t : terms_) {
    const json* node = &object;
    for (const auto& part : t.path) {
      if (!node->is_object()) {
        node = nullptr;
        break;
      }
      auto it = node->find(part);
      if (it == node->end()) {
        node = nullptr;
        break;
      }
      node = &*it;
    }
    // An absent field reads as "", as in a fields.Set.
    const std::string value = node ? stringValue(*node) : "";
    if ((value == t.value) != t.equals) return false;
  }
  return true;
}

std::vector<std::string> FieldSelector::fields() const {
  std::vector<std::string> out;
  for (const auto& t : terms_) {
    std::string dotted;
    for (const auto& p : t.path) dotted += (dotted.empty() ? "" : ".") + p;
    out.push_back(std::move(dotted));
  }
  return out;
}

}  // namespace mka::sandbox
