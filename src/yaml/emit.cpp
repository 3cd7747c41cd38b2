#include <yaml.h>

#include <string>

#include "mka/yaml/json.h"

namespace mka::yaml {
namespace {

using nlohmann::json;

class Emitter {
 public:
  Emitter() {
    yaml_emitter_initialize(&emitter_);
    yaml_emitter_set_unicode(&emitter_, 1);
    yaml_emitter_set_width(&emitter_, -1);  // no folding: a base64 value stays on one line
    yaml_emitter_set_output(&emitter_, &Emitter::write, &out_);
  }
  ~Emitter() { yaml_emitter_delete(&emitter_); }
  Emitter(const Emitter&) = delete;
  Emitter& operator=(const Emitter&) = delete;

  // Emits and frees the event; libyaml frees it on failure too.
  void emit(yaml_event_t& event) {
    if (!yaml_emitter_emit(&emitter_, &event))
      throw Error(std::string("yaml: cannot write: ") + (emitter_.problem ? emitter_.problem : "emitter error"));
  }

  template <typename Json>
  void value(const Json& v) {
    yaml_event_t event;
    switch (v.type()) {
      case json::value_t::object:
        yaml_mapping_start_event_initialize(&event, nullptr, nullptr, 1,
                                            v.empty() ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
        emit(event);
        for (const auto& [k, item] : v.items()) {
          string(k);
          value(item);
        }
        yaml_mapping_end_event_initialize(&event);
        emit(event);
        return;
      case json::value_t::array:
        yaml_sequence_start_event_initialize(&event, nullptr, nullptr, 1,
                                             v.empty() ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
        emit(event);
        for (const auto& item : v) value(item);
        yaml_sequence_end_event_initialize(&event);
        emit(event);
        return;
      case json::value_t::string: string(v.template get_ref<const std::string&>()); return;
      default: plain(v.dump()); return;
    }
  }

  std::string take() { return std::move(out_); }

 private:
  static int write(void* data, unsigned char* buffer, size_t size) {
    static_cast<std::string*>(data)->append(reinterpret_cast<const char*>(buffer), size);
    return 1;
  }

  void scalar(const std::string& text, yaml_scalar_style_t style) {
    yaml_event_t event;
    yaml_scalar_event_initialize(&event, nullptr, nullptr,
                                 reinterpret_cast<yaml_char_t*>(const_cast<char*>(text.data())),
                                 static_cast<int>(text.size()), 1, 1, style);
    emit(event);
  }

  void plain(const std::string& text) { scalar(text, YAML_PLAIN_SCALAR_STYLE); }

  // Plain where it reads back as the same string, double-quoted where it would not (a plain
  // "<<" key is a merge key).
  void string(const std::string& text) {
    bool readsBack = false;
    try {
      const json resolved = resolvePlain(text);
      readsBack = text != "<<" && resolved.is_string() && resolved.get_ref<const std::string&>() == text;
    } catch (const ConversionError&) {
    }
    scalar(text, readsBack ? YAML_ANY_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
  }

  yaml_emitter_t emitter_{};
  std::string out_;
};

template <typename Json>
std::string emitDocument(const Json& value) {
  Emitter emitter;
  yaml_event_t event;
  yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING);
  emitter.emit(event);
  yaml_document_start_event_initialize(&event, nullptr, nullptr, nullptr, 1);
  emitter.emit(event);
  emitter.value(value);
  yaml_document_end_event_initialize(&event, 1);
  emitter.emit(event);
  yaml_stream_end_event_initialize(&event);
  emitter.emit(event);
  return emitter.take();
}

}  // namespace

std::string toYaml(const json& value) { return emitDocument(value); }
std::string toYaml(const nlohmann::ordered_json& value) { return emitDocument(value); }

}  // namespace mka::yaml
