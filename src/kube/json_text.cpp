#include "mka/kube/json_text.h"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace mka::kube::json_text {
namespace {

// Walks the text along `path`, recording the spans to cut. Any malformed construct it meets
// sets `bad`, and the caller then returns the text unchanged.
class Scanner {
 public:
  Scanner(std::string_view text, std::initializer_list<std::string_view> path, bool firstOnly)
      : text_(text), path_(path.begin()), depth_(path.size()), firstOnly_(firstOnly) {}

  std::string run() {
    std::size_t pos = skipWhitespace(0);
    if (depth_ > 0) pos = follow(pos, 0);
    if (bad_ || cuts_.empty()) return std::string(text_);
    std::string out;
    out.reserve(text_.size());
    std::size_t from = 0;
    for (const auto& [begin, end] : cuts_) {
      out.append(text_.substr(from, begin - from));
      from = end;
    }
    out.append(text_.substr(from));
    return out;
  }

 private:
  bool done() const { return bad_ || (firstOnly_ && !cuts_.empty()); }

  std::size_t skipWhitespace(std::size_t pos) const {
    while (pos < text_.size() && (text_[pos] == ' ' || text_[pos] == '\t' || text_[pos] == '\n' || text_[pos] == '\r'))
      ++pos;
    return pos;
  }

  // `pos` at the opening quote; returns the position after the closing one.
  std::size_t skipString(std::size_t pos) {
    for (++pos; pos < text_.size(); ++pos) {
      if (text_[pos] == '\\') {
        ++pos;
      } else if (text_[pos] == '"') {
        return pos + 1;
      }
    }
    bad_ = true;
    return text_.size();
  }

  // Skips one value of any kind; returns the position after it.
  std::size_t skipValue(std::size_t pos) {
    if (pos >= text_.size()) {
      bad_ = true;
      return pos;
    }
    const char first = text_[pos];
    if (first == '"') return skipString(pos);
    if (first != '{' && first != '[') {  // a number, true, false or null
      const std::size_t begin = pos;
      while (pos < text_.size() && text_[pos] != ',' && text_[pos] != '}' && text_[pos] != ']' && text_[pos] != ' ' &&
             text_[pos] != '\n' && text_[pos] != '\r' && text_[pos] != '\t')
        ++pos;
      if (pos == begin) bad_ = true;  // no value where one must be
      return pos;
    }
    // A container: match brackets, stepping over strings (which may hold brackets).
    std::string open;  // the closers expected, innermost last
    for (; pos < text_.size(); ++pos) {
      switch (text_[pos]) {
        case '"': pos = skipString(pos) - 1; break;
        case '{': open.push_back('}'); break;
        case '[': open.push_back(']'); break;
        case '}':
        case ']':
          if (open.back() != text_[pos]) {
            bad_ = true;
            return pos;
          }
          open.pop_back();
          if (open.empty()) return pos + 1;
          break;
        default: break;
      }
    }
    bad_ = true;
    return pos;
  }

  // The value at `pos` is where path step `step` applies: an object to look up a key in, or an
  // array whose elements all go on ("[]"). Returns the position after the value.
  std::size_t follow(std::size_t pos, std::size_t step) {
    if (pos >= text_.size()) {
      bad_ = true;
      return pos;
    }
    const bool anyElement = path_[step] == "[]";
    if (anyElement ? text_[pos] != '[' : text_[pos] != '{') return skipValue(pos);  // the path is not here
    const char close = anyElement ? ']' : '}';
    pos = skipWhitespace(pos + 1);
    if (pos < text_.size() && text_[pos] == close) return pos + 1;
    std::size_t previousEnd = 0;  // end of the previous member's value; 0 before the first member
    while (!bad_) {
      if (done()) return pos;  // the caller stops too
      if (anyElement) {
        pos = step + 1 < depth_ ? follow(pos, step + 1) : skipValue(pos);
      } else {
        if (pos >= text_.size() || text_[pos] != '"') {
          bad_ = true;
          return pos;
        }
        const std::size_t keyBegin = pos;
        pos = skipString(pos);
        const auto key = text_.substr(keyBegin + 1, pos - keyBegin - 2);
        pos = skipWhitespace(pos);
        if (pos >= text_.size() || text_[pos] != ':') {
          bad_ = true;
          return pos;
        }
        pos = skipWhitespace(pos + 1);
        if (key != path_[step]) {
          pos = skipValue(pos);
        } else if (step + 1 < depth_) {
          pos = follow(pos, step + 1);
        } else {
          const std::size_t valueEnd = skipValue(pos);
          if (bad_) return valueEnd;
          if (previousEnd > 0) {
            cuts_.emplace_back(previousEnd, valueEnd);  // the comma before it goes too
            pos = valueEnd;
          } else {
            // The first member: it goes with the comma after it, if another member follows.
            pos = skipWhitespace(valueEnd);
            if (pos < text_.size() && text_[pos] == ',') {
              pos = skipWhitespace(pos + 1);
              cuts_.emplace_back(keyBegin, pos);
              continue;  // the next member is now the first one
            }
            cuts_.emplace_back(keyBegin, valueEnd);
          }
          if (firstOnly_) return pos;
        }
      }
      if (bad_ || done()) return pos;
      previousEnd = pos;
      pos = skipWhitespace(pos);
      if (pos >= text_.size()) {
        bad_ = true;
        return pos;
      }
      if (text_[pos] == close) return pos + 1;
      if (text_[pos] != ',') {
        bad_ = true;
        return pos;
      }
      pos = skipWhitespace(pos + 1);
    }
    return pos;
  }

  std::string_view text_;
  const std::string_view* path_;
  std::size_t depth_;
  bool firstOnly_;
  bool bad_ = false;
  std::vector<std::pair<std::size_t, std::size_t>> cuts_;  // [begin, end), in text order
};

}  // namespace

std::string withoutMember(std::string_view text, std::initializer_list<std::string_view> path, bool firstOnly) {
  return Scanner(text, path, firstOnly).run();
}

}  // namespace mka::kube::json_text
