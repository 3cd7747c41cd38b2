#include "mka/yaml/document.h"

#include <yaml.h>

#include <algorithm>
#include <climits>
#include <map>

namespace mka::yaml {
namespace {

constexpr std::string_view kNullTag = "tag:yaml.org,2002:null";

int toInt(std::size_t v) { return v > static_cast<std::size_t>(INT_MAX) ? INT_MAX : static_cast<int>(v); }

Mark markOf(const yaml_mark_t& mark) { return {toInt(mark.line), toInt(mark.column)}; }

std::string sizeText(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// The position of a byte offset, for reader errors (bad encoding), which libyaml reports by
// offset only.
Mark markAtOffset(std::string_view text, std::size_t offset) {
  Mark mark;
  const auto end = std::min(offset, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++mark.line;
      mark.column = 0;
    } else {
      ++mark.column;
    }
  }
  return mark;
}

std::string text(const yaml_char_t* s) { return s ? std::string(reinterpret_cast<const char*>(s)) : std::string(); }

class Parser {
 public:
  explicit Parser(std::string_view input) {
    yaml_parser_initialize(&parser_);
    // libyaml asserts on a null input, which an empty string_view may hold.
    const char* data = input.data() ? input.data() : "";
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(data), input.size());
  }
  ~Parser() { yaml_parser_delete(&parser_); }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  yaml_parser_t* get() { return &parser_; }

 private:
  yaml_parser_t parser_{};
};

class Event {
 public:
  Event() = default;
  ~Event() { yaml_event_delete(&event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  yaml_event_t* get() { return &event_; }
  const yaml_event_t& operator*() const { return event_; }

 private:
  yaml_event_t event_{};
};

[[noreturn]] void throwParserError(yaml_parser_t& parser, std::string_view input) {
  if (parser.error == YAML_MEMORY_ERROR) throw LimitError("yaml: the parser ran out of memory");
  if (parser.error == YAML_READER_ERROR) {
    const auto mark = markAtOffset(input, parser.problem_offset);
    throw SyntaxError(mark, parser.problem ? parser.problem : "the input is not UTF-8 or UTF-16 text");
  }
  std::string problem = parser.problem ? parser.problem : "not valid YAML";
  if (parser.context) {
    problem += std::string(" ") + parser.context;
    if (parser.context_mark.line != parser.problem_mark.line)
      problem += " that started at line " + std::to_string(parser.context_mark.line + 1);
  }
  throw SyntaxError(markOf(parser.problem_mark), std::move(problem));
}

}  // namespace

SyntaxError::SyntaxError(Mark mark, std::string problem)
    : Error("yaml: line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) + ": " +
            problem),
      mark_(mark),
      problem_(std::move(problem)) {}

bool Node::isNull() const {
  if (!isScalar()) return false;
  if (tag_ == kNullTag) return true;
  if (style_ != Style::Plain || !tag_.empty()) return false;
  return scalar_.empty() || scalar_ == "~" || scalar_ == "null" || scalar_ == "Null" || scalar_ == "NULL";
}

const Node* Node::find(std::string_view key) const {
  const Node* found = nullptr;
  for (const auto& entry : entries_)
    if (entry.key->isScalar() && entry.key->scalar_ == key) found = entry.value.get();
  return found;
}

// Builds the tree from libyaml's events, counting against the limits as each node arrives.
class TreeBuilder {
 public:
  TreeBuilder(std::string_view input, const Limits& limits) : input_(input), limits_(limits) {}

  std::vector<NodePtr> run() {
    Parser parser(input_);
    for (;;) {
      Event event;
      if (!yaml_parser_parse(parser.get(), event.get())) throwParserError(*parser.get(), input_);
      if (handle(*event)) break;
    }
    return std::move(documents_);
  }

 private:
  // True at the end of the stream.
  bool handle(const yaml_event_t& e) {
    switch (e.type) {
      case YAML_STREAM_END_EVENT: return true;
      case YAML_DOCUMENT_START_EVENT:
        anchors_.clear();  // an anchor is known only in its own document
        root_.reset();
        break;
      case YAML_DOCUMENT_END_EVENT:
        documents_.push_back(root_ ? root_ : scalarNode("", Node::Style::Plain, "", markOf(e.start_mark)));
        root_.reset();
        break;
      case YAML_SCALAR_EVENT: {
        const auto& s = e.data.scalar;
        const auto style = s.style == YAML_SINGLE_QUOTED_SCALAR_STYLE || s.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE
                               ? Node::Style::Quoted
                           : s.style == YAML_LITERAL_SCALAR_STYLE || s.style == YAML_FOLDED_SCALAR_STYLE
                               ? Node::Style::Block
                               : Node::Style::Plain;
        auto node = scalarNode(std::string(reinterpret_cast<const char*>(s.value), s.length), style, text(s.tag),
                               markOf(e.start_mark));
        count(1, node->scalar_.size());
        remember(s.anchor, node);
        add(std::move(node));
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
        open(Node::Kind::Sequence, text(e.data.sequence_start.tag), text(e.data.sequence_start.anchor), e.start_mark);
        break;
      case YAML_MAPPING_START_EVENT:
        open(Node::Kind::Mapping, text(e.data.mapping_start.tag), text(e.data.mapping_start.anchor), e.start_mark);
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: close(); break;
      case YAML_ALIAS_EVENT: {
        const auto name = text(e.data.alias.anchor);
        auto it = anchors_.find(name);
        if (it == anchors_.end()) throw SyntaxError(markOf(e.start_mark), "unknown anchor '" + name + "' referenced");
        const auto& target = *it->second;
        if (static_cast<int>(open_.size()) + target.height_ > limits_.maxDepth) throw depthError(e.start_mark);
        aliasNodes_ += target.nodes_;
        aliasBytes_ += target.scalarBytes_;
        if (aliasNodes_ > limits_.maxAliasNodes)
          throw LimitError("yaml: aliases repeat more than " + std::to_string(limits_.maxAliasNodes) +
                           " nodes (the alias limit)");
        if (aliasBytes_ > limits_.maxAliasBytes)
          throw LimitError("yaml: aliases repeat more than " + sizeText(limits_.maxAliasBytes) +
                           " of values (the alias limit)");
        count(target.nodes_, target.scalarBytes_);
        add(it->second);
        break;
      }
      default: break;
    }
    return false;
  }

  static std::shared_ptr<Node> scalarNode(std::string value, Node::Style style, std::string tag, Mark mark) {
    auto node = std::make_shared<Node>();
    node->kind_ = Node::Kind::Scalar;
    node->style_ = style;
    node->scalar_ = std::move(value);
    node->tag_ = std::move(tag);
    node->mark_ = mark;
    node->scalarBytes_ = node->scalar_.size();
    return node;
  }

  void count(std::size_t nodes, std::size_t scalarBytes) {
    nodes_ += nodes;
    scalarBytes_ += scalarBytes;
    if (nodes_ > limits_.maxNodes)
      throw LimitError("yaml: more than " + std::to_string(limits_.maxNodes) +
                       " nodes (the node limit; each alias counts as every node it repeats)");
    if (scalarBytes_ > limits_.maxScalarBytes)
      throw LimitError("yaml: more than " + sizeText(limits_.maxScalarBytes) +
                       " of values (the value size limit; each alias counts as every value it repeats)");
  }

  LimitError depthError(const yaml_mark_t& mark) const {
    return LimitError("yaml: line " + std::to_string(mark.line + 1) + ": nested deeper than " +
                      std::to_string(limits_.maxDepth) +
                      " levels (the depth limit; an alias counts as the levels it repeats)");
  }

  void open(Node::Kind kind, std::string tag, std::string anchor, const yaml_mark_t& mark) {
    if (static_cast<int>(open_.size()) >= limits_.maxDepth) throw depthError(mark);
    count(1, 0);
    auto node = std::make_shared<Node>();
    node->kind_ = kind;
    node->tag_ = std::move(tag);
    node->mark_ = markOf(mark);
    open_.push_back({std::move(node), std::move(anchor), nullptr});
  }

  void close() {
    auto frame = std::move(open_.back());
    open_.pop_back();
    auto& node = *frame.node;
    auto include = [&node](const Node& child) {
      node.nodes_ += child.nodes_;
      node.scalarBytes_ += child.scalarBytes_;
      node.height_ = std::max(node.height_, child.height_ + 1);
    };
    node.height_ = 1;
    for (const auto& item : node.items_) include(*item);
    for (const auto& entry : node.entries_) {
      include(*entry.key);
      include(*entry.value);
    }
    // Registered only now, so an alias inside its own anchor is unknown: no cycles.
    if (!frame.anchor.empty()) anchors_[frame.anchor] = frame.node;
    add(std::move(frame.node));
  }

  void remember(const yaml_char_t* anchor, const NodePtr& node) {
    if (anchor) anchors_[text(anchor)] = node;
  }

  void add(NodePtr node) {
    if (open_.empty()) {
      root_ = std::move(node);
      return;
    }
    auto& top = open_.back();
    if (top.node->kind_ == Node::Kind::Sequence) {
      top.node->items_.push_back(std::move(node));
    } else if (!top.pendingKey) {
      top.pendingKey = std::move(node);
    } else {
      top.node->entries_.push_back({std::move(top.pendingKey), std::move(node)});
      top.pendingKey = nullptr;
    }
  }

  struct Frame {
    std::shared_ptr<Node> node;
    std::string anchor;
    NodePtr pendingKey;
  };

  std::string_view input_;
  const Limits& limits_;
  std::vector<NodePtr> documents_;
  std::vector<Frame> open_;
  NodePtr root_;
  std::map<std::string, NodePtr, std::less<>> anchors_;
  std::size_t nodes_ = 0;
  std::size_t scalarBytes_ = 0;
  std::size_t aliasNodes_ = 0;
  std::size_t aliasBytes_ = 0;
};

std::vector<NodePtr> parse(std::string_view input, const Limits& limits) {
  if (input.size() > limits.maxBytes)
    throw LimitError("yaml: the document is " + std::to_string(input.size()) + " bytes, over the " +
                     sizeText(limits.maxBytes) + " size limit");
  return TreeBuilder(input, limits).run();
}

}  // namespace mka::yaml
