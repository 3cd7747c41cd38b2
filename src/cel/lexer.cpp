// CEL's lexical grammar (cel-spec langdef.md, "Syntax"): identifiers, numbers, strings with
// their escapes and raw/triple-quoted forms, operators, and // comments.

#include <algorithm>
#include <charconv>

#include "internal.h"

namespace mka::cel::internal {
namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isHexDigit(char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isIdentPart(char c) { return isIdentStart(c) || isDigit(c); }

void appendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Threads: one per compile() call, on the calling thread.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skipSpaceAndComments();
      if (pos_ >= text_.size()) break;
      out.push_back(next());
    }
    Token end;
    end.offset = text_.size();
    out.push_back(end);
    return out;
  }

 private:
  char peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  [[noreturn]] void fail(std::size_t offset, std::string_view what, std::string_view fix = {}) const {
    failCompile(text_, offset, what, fix);
  }

  void skipSpaceAndComments() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
        ++pos_;
      } else if (c == '/' && peek(1) == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  Token next() {
    const char c = peek();
    if (isDigit(c) || (c == '.' && isDigit(peek(1)))) return number();
    // String prefixes: r (raw) and b (bytes), in either order and case.
    if (isIdentStart(c)) {
      std::size_t p = 0;
      bool raw = false;
      bool bytes = false;
      for (; p < 2; ++p) {
        const char lower = static_cast<char>(peek(p) | 0x20);
        if (lower == 'r' && !raw) {
          raw = true;
        } else if (lower == 'b' && !bytes) {
          bytes = true;
        } else {
          break;
        }
      }
      if (p > 0 && (peek(p) == '\'' || peek(p) == '"')) {
        const std::size_t start = pos_;
        pos_ += p;
        Token t = string(start, raw);
        if (bytes) t.type = Token::Type::Bytes;
        return t;
      }
      return ident();
    }
    if (c == '\'' || c == '"') return string(pos_, false);
    return symbol();
  }

  Token ident() {
    Token t;
    t.type = Token::Type::Ident;
    t.offset = pos_;
    while (pos_ < text_.size() && isIdentPart(text_[pos_])) ++pos_;
    t.text = std::string(text_.substr(t.offset, pos_ - t.offset));
    return t;
  }

  Token number() {
    Token t;
    t.offset = pos_;
    if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X')) {
      pos_ += 2;
      const std::size_t start = pos_;
      while (isHexDigit(peek())) ++pos_;
      if (pos_ == start) fail(t.offset, "hexadecimal literal without digits", "write it as 0x1F");
      integer(t, text_.substr(start, pos_ - start), 16);
      return t;
    }
    const std::size_t start = pos_;
    while (isDigit(peek())) ++pos_;
    bool real = false;
    if (peek() == '.' && isDigit(peek(1))) {
      real = true;
      ++pos_;
      while (isDigit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      std::size_t p = 1;
      if (peek(p) == '+' || peek(p) == '-') ++p;
      if (!isDigit(peek(p))) fail(pos_, "exponent without digits", "write it as 1e3 or 1.5e-3");
      real = true;
      pos_ += p;
      while (isDigit(peek())) ++pos_;
    }
    const std::string_view spelled = text_.substr(start, pos_ - start);
    if (!real) {
      integer(t, spelled, 10);
      return t;
    }
    t.type = Token::Type::Double;
    // from_chars reads the form CEL's grammar allows here (digits, '.', exponent).
    const auto [end, ec] = std::from_chars(spelled.data(), spelled.data() + spelled.size(), t.real);
    if (ec != std::errc{} || end != spelled.data() + spelled.size())
      fail(t.offset, "double literal \"" + std::string(spelled) + "\" is out of range");
    if (isIdentStart(peek())) fail(pos_, "unexpected \"" + std::string(1, peek()) + "\" after a number");
    return t;
  }

  void integer(Token& t, std::string_view digits, int base) {
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), t.integer, base);
    if (ec != std::errc{} || end != digits.data() + digits.size())
      fail(t.offset, "integer literal \"" + std::string(text_.substr(t.offset, pos_ - t.offset)) + "\" is out of range",
           "integers are 64-bit");
    t.type = Token::Type::Int;
    if (peek() == 'u' || peek() == 'U') {
      t.type = Token::Type::Uint;
      ++pos_;
    }
    if (isIdentPart(peek())) fail(pos_, "unexpected \"" + std::string(1, peek()) + "\" after a number");
  }

  // A quoted string whose opening quote is at pos_; `start` is where its prefix begins.
  Token string(std::size_t start, bool raw) {
    Token t;
    t.type = Token::Type::String;
    t.offset = start;
    const char quote = peek();
    const bool triple = peek(1) == quote && peek(2) == quote;
    pos_ += triple ? 3 : 1;
    for (;;) {
      if (pos_ >= text_.size()) fail(start, "unterminated string", "close it with its opening quote");
      const char c = text_[pos_];
      if (c == quote && (!triple || (peek(1) == quote && peek(2) == quote))) {
        pos_ += triple ? 3 : 1;
        return t;
      }
      if (!triple && (c == '\n' || c == '\r'))
        fail(start, "line break in a quoted string", "write \\n, or use a triple-quoted string");
      if (c == '\\' && !raw) {
        escape(t.text);
        continue;
      }
      t.text += c;
      ++pos_;
    }
  }

  // An escape sequence at pos_ (the backslash), decoded onto `out`.
  void escape(std::string& out) {
    const std::size_t at = pos_;
    if (pos_ + 1 >= text_.size()) fail(at, "unterminated string", "close it with its opening quote");
    const char c = peek(1);
    pos_ += 2;
    switch (c) {
      case '\\': out += '\\'; return;
      case '\'': out += '\''; return;
      case '"': out += '"'; return;
      case '`': out += '`'; return;
      case '?': out += '?'; return;
      case 'a': out += '\a'; return;
      case 'b': out += '\b'; return;
      case 'f': out += '\f'; return;
      case 'n': out += '\n'; return;
      case 'r': out += '\r'; return;
      case 't': out += '\t'; return;
      case 'v': out += '\v'; return;
      case 'x':
      case 'X': return codePoint(out, at, 2, 16);
      case 'u': return codePoint(out, at, 4, 16);
      case 'U': return codePoint(out, at, 8, 16);
      default:
        if (c >= '0' && c <= '3') {
          --pos_;
          return codePoint(out, at, 3, 8);
        }
        fail(at, "unknown escape sequence \"\\" + std::string(1, c) + "\"",
             "escape a backslash as \\\\, or use a raw string r'...'");
    }
  }

  // `count` digits in `base` at pos_, written as that code point (cel-go reads \xFF in a
  // string as U+00FF, not as a byte).
  void codePoint(std::string& out, std::size_t at, int count, int base) {
    std::uint32_t cp = 0;
    for (int i = 0; i < count; ++i) {
      const char d = peek();
      const bool ok = base == 8 ? (d >= '0' && d <= '7') : isHexDigit(d);
      if (!ok) fail(at, "escape sequence with too few digits", "\\x takes 2 hex digits, \\u 4, \\U 8, octal 3");
      cp = cp * static_cast<std::uint32_t>(base) +
           static_cast<std::uint32_t>(isDigit(d) ? d - '0' : (d | 0x20) - 'a' + 10);
      ++pos_;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      fail(at, "escape sequence is not a Unicode code point", "surrogates and values above \\U0010FFFF are invalid");
    appendUtf8(out, cp);
  }

  Token symbol() {
    static constexpr std::string_view kTwo[] = {"==", "!=", "<=", ">=", "&&", "||"};
    static constexpr std::string_view kOne = "<>!+-*/%?:.,[](){}";
    Token t;
    t.type = Token::Type::Symbol;
    t.offset = pos_;
    for (auto op : kTwo) {
      if (text_.substr(pos_, 2) == op) {
        t.text = std::string(op);
        pos_ += 2;
        return t;
      }
    }
    const char c = peek();
    if (kOne.find(c) != std::string_view::npos) {
      t.text = std::string(1, c);
      ++pos_;
      return t;
    }
    if (c == '=') fail(pos_, "unexpected \"=\"", "compare with ==; CEL has no assignment");
    if (c == '&' || c == '|') fail(pos_, "unexpected \"" + std::string(1, c) + "\"", "write && or ||");
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) fail(pos_, "unexpected non-ASCII character", "only strings may hold non-ASCII text");
    if (byte < 0x20 || byte == 0x7F) fail(pos_, "unexpected control character");
    fail(pos_, "unexpected \"" + std::string(1, c) + "\"");
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<Token> tokenize(std::string_view expression) { return Lexer(expression).run(); }

Position positionOf(std::string_view expression, std::size_t offset) {
  Position p;
  const auto end = std::min(offset, expression.size());
  for (std::size_t i = 0; i < end; ++i) {
    const auto c = static_cast<unsigned char>(expression[i]);
    if (c == '\n') {
      ++p.line;
      p.column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++p.column;
    }
  }
  return p;
}

std::string describePosition(std::string_view expression, std::size_t offset) {
  const Position p = positionOf(expression, offset);
  if (expression.find('\n') == std::string_view::npos) return "column " + std::to_string(p.column);
  return "line " + std::to_string(p.line) + ", column " + std::to_string(p.column);
}

void failCompile(std::string_view expression, std::size_t offset, std::string_view what, std::string_view fix) {
  const Position p = positionOf(expression, offset);
  std::string message = std::string(what) + " at " + describePosition(expression, offset);
  if (!fix.empty()) message += ": " + std::string(fix);
  throw CompileError(message, p.line, p.column);
}

}  // namespace mka::cel::internal
