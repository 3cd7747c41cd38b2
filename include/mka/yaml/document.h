#pragma once
// The one reader of YAML from outside the process: configuration files and ConfigMaps, kubeconfig
// files and Secrets, manifests and request bodies in the sandbox. libyaml's event parser builds a
// small node tree and every limit is checked as the events arrive, so no input can drive the
// reader past its input size, nesting depth or expanded size (aliases count as every node and
// byte they repeat, which stops "billion laughs" before anything is copied).
//
// The tree keeps what a configuration reader reports on and a JSON conversion drops: each node's
// line and column, whether a scalar was quoted, explicit tags, and every mapping entry in order,
// duplicates included.
//
// Threads: parse() is a pure function; a parsed tree is immutable and may be read from any thread.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mka/common/errors.h"

namespace mka::yaml {

// What one parse may take. Each limit, when passed, ends the parse with a LimitError that names it.
struct Limits {
  std::size_t maxBytes = 1 << 20;
  // Sequences and mappings open at once.
  int maxDepth = 100;
  // Nodes of every document, each alias counted as all the nodes it repeats.
  std::size_t maxNodes = 200'000;
  // Bytes of scalars (keys too) of every document, each alias counted as all it repeats.
  std::size_t maxScalarBytes = 8 << 20;
  // Nodes and bytes that aliases repeat, all aliases together. Without aliases a document's
  // size follows its text; these keep what aliases add to the JSON it becomes small, since no
  // configuration, kubeconfig or manifest needs many of them.
  std::size_t maxAliasNodes = 100'000;
  std::size_t maxAliasBytes = 1 << 20;

  // A configuration or a kubeconfig: what a ConfigMap or a Secret can hold (1 MiB).
  static Limits forSmallDocuments() { return {}; }
  // Manifests and request bodies: Kueue's Workload CRD alone is 1.4 MB of YAML.
  static Limits forManifests() {
    return {.maxBytes = 16 << 20,
            .maxDepth = 512,
            .maxNodes = 4'000'000,
            .maxScalarBytes = 64 << 20,
            .maxAliasNodes = 100'000,
            .maxAliasBytes = 1 << 20};
  }
};

// 0-based, as libyaml counts; messages add 1.
struct Mark {
  int line = 0;
  int column = 0;
};

// The input is not YAML: libyaml's problem at a line and column.
class SyntaxError : public Error {
 public:
  SyntaxError(Mark mark, std::string problem);
  Mark mark() const { return mark_; }
  // libyaml's words, without the position.
  const std::string& problem() const { return problem_; }

 private:
  Mark mark_;
  std::string problem_;
};

// The input is YAML but larger than a limit allows.
class LimitError : public Error {
 public:
  using Error::Error;
};

class Node;
using NodePtr = std::shared_ptr<const Node>;

class Node {
 public:
  enum class Kind { Scalar, Sequence, Mapping };
  // Quoted and block scalars are strings whatever they spell; only plain ones resolve to
  // numbers, booleans and null.
  enum class Style { Plain, Quoted, Block };
  struct Entry {
    NodePtr key;
    NodePtr value;
  };

  Kind kind() const { return kind_; }
  bool isScalar() const { return kind_ == Kind::Scalar; }
  bool isSequence() const { return kind_ == Kind::Sequence; }
  bool isMapping() const { return kind_ == Kind::Mapping; }
  // A plain untagged ~, null, Null, NULL or nothing at all, or a !!null tag.
  bool isNull() const;

  // A scalar's text ("" for collections).
  const std::string& scalar() const { return scalar_; }
  Style style() const { return style_; }
  // The explicit tag as libyaml resolves it ("tag:yaml.org,2002:str" for !!str), "" when none.
  const std::string& tag() const { return tag_; }
  // True for a plain scalar without a tag: the only kind that resolves by its spelling.
  bool isPlain() const { return isScalar() && style_ == Style::Plain && tag_.empty(); }
  Mark mark() const { return mark_; }

  const std::vector<NodePtr>& items() const { return items_; }
  const std::vector<Entry>& entries() const { return entries_; }
  std::size_t size() const { return isMapping() ? entries_.size() : items_.size(); }
  // The value of the last entry whose key is the scalar `key` (the last wins, as in Go's
  // decoders), or nullptr.
  const Node* find(std::string_view key) const;

 private:
  friend class TreeBuilder;
  Kind kind_ = Kind::Scalar;
  Style style_ = Style::Plain;
  std::string scalar_;
  std::string tag_;
  Mark mark_;
  std::vector<NodePtr> items_;
  std::vector<Entry> entries_;
  // What this node and everything below it count towards maxNodes and maxScalarBytes.
  std::size_t nodes_ = 1;
  std::size_t scalarBytes_ = 0;
  // Levels of collections below and including this node, so an alias cannot nest deeper than
  // maxDepth either.
  int height_ = 0;
};

// Every document of a stream ("---" separated), empty ones as a null scalar. Throws SyntaxError
// or LimitError.
std::vector<NodePtr> parse(std::string_view text, const Limits& limits);

}  // namespace mka::yaml
