#include "mka/cel/regex.h"

#include <algorithm>

namespace mka::cel {
namespace {

// libstdc++'s default matcher backtracks, which takes exponential time on patterns like (a*)*b;
// its __polynomial option selects the automaton matcher.
#if defined(__GLIBCXX__)
constexpr auto kSyntax = std::regex::ECMAScript | std::regex_constants::__polynomial;
#else
constexpr auto kSyntax = std::regex::ECMAScript;
#endif

constexpr std::string_view kReadDifferently =
    "the sandbox matches with ECMAScript regular expressions, which read it differently from RE2";

// Refuses what RE2 and ECMAScript read differently, and patterns deep or large enough to
// exhaust std::regex's recursive compiler.
void checkSyntax(std::string_view re) {
  int depth = 0;
  for (std::size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    const char next = i + 1 < re.size() ? re[i + 1] : '\0';
    if (c == '\\') {
      if (std::string_view("pPAzQEC").find(next) != std::string_view::npos || (next >= '1' && next <= '9'))
        throw RegexError("unsupported regular expression escape \"\\" + std::string(1, next) + "\"",
                         std::string(kReadDifferently));
      ++i;
    } else if (c == '(') {
      if (next == '?' && (i + 2 >= re.size() || re[i + 2] != ':'))
        throw RegexError("unsupported regular expression group \"(?\"",
                         "flags and named groups are RE2 syntax the sandbox's ECMAScript matcher does not read; use "
                         "(?:...) or character classes");
      if (++depth > Regex::kMaxGroupNesting)
        throw RegexError("regular expression nests deeper than " + std::to_string(Regex::kMaxGroupNesting) + " groups",
                         "simplify the pattern");
    } else if (c == ')') {
      --depth;
    } else if (c == '{') {
      // RE2 refuses repetition counts above 1000; std::regex would expand them into states.
      int count = 0;
      for (std::size_t j = i + 1; j < re.size() && ((re[j] >= '0' && re[j] <= '9') || re[j] == ','); ++j) {
        count = re[j] == ',' ? 0 : std::min(count * 10 + (re[j] - '0'), 100000);
        if (count > 1000) throw RegexError("regular expression repetition count above 1000", "RE2 refuses it too");
      }
    }
  }
}

}  // namespace

Regex Regex::compile(std::string_view pattern) {
  // RE2's case-insensitive flag where it covers the whole pattern (Kueue's AdmissionCheck
  // writes "^(?i)[a-z]..."): read as ECMAScript's icase. Anywhere else checkSyntax refuses it.
  std::string re(pattern);
  auto syntax = kSyntax;
  for (const std::string_view prefix : {"(?i)", "^(?i)"}) {
    if (pattern.starts_with(prefix)) {
      re = std::string(prefix.substr(0, prefix.size() - 4)) + std::string(pattern.substr(prefix.size()));
      syntax |= std::regex::icase;
      break;
    }
  }
  checkSyntax(re);
  try {
    // Checked as written, then matched as a whole: with the automaton matcher one pass over the
    // subject finds a match anywhere (regex_search would restart at every position).
    const std::regex written(re, syntax);
    return Regex(std::string(pattern), std::make_shared<const std::regex>("[\\s\\S]*(?:" + re + ")[\\s\\S]*", syntax));
  } catch (const std::regex_error& e) {
    throw RegexError("invalid regular expression \"" + re + "\" (" + e.what() + ")", "fix the pattern");
  }
}

bool Regex::search(const std::string& subject) const { return std::regex_match(subject, *anywhere_); }

}  // namespace mka::cel
