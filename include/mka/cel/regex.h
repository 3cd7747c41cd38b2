#pragma once
// Regular expressions as Kubernetes API objects carry them (CEL's matches(), a schema's
// `pattern`), which kube-apiserver reads with RE2 (Go's regexp). No RE2 for C++ is in our stack,
// so std::regex (ECMAScript) stands in: syntax the two read differently ((?i), (?P<n>),
// lookarounds, \pL, \A, \z, \Q, backreferences, counts above 1000) is refused, and matching uses
// libstdc++'s automaton matcher, which like RE2 takes time linear in the subject and recurses
// only as deep as the pattern. Repetitions and `.` count bytes, not code points.
//
// Threads: a Regex is immutable; search() may run on any number of threads at once.

#include <memory>
#include <regex>
#include <string>
#include <string_view>

#include "mka/common/errors.h"

namespace mka::cel {

// The pattern is not one the stand-in reads as RE2 would: what() names the problem, fix() what
// to write instead.
class RegexError : public Error {
 public:
  RegexError(const std::string& what, std::string fix) : Error(what), fix_(std::move(fix)) {}
  const std::string& fix() const { return fix_; }

 private:
  std::string fix_;
};

class Regex {
 public:
  // How deep groups may nest.
  static constexpr int kMaxGroupNesting = 100;

  // Throws RegexError.
  static Regex compile(std::string_view pattern);

  // True when the pattern matches somewhere in `subject` (RE2's MatchString, CEL's matches()).
  bool search(const std::string& subject) const;
  const std::string& pattern() const { return pattern_; }

 private:
  Regex(std::string pattern, std::shared_ptr<const std::regex> anywhere)
      : pattern_(std::move(pattern)), anywhere_(std::move(anywhere)) {}
  std::string pattern_;
  std::shared_ptr<const std::regex> anywhere_;
};

}  // namespace mka::cel
