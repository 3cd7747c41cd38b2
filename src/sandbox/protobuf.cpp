#include "mka/sandbox/protobuf.h"

#include <cstdint>
#include <ctime>
#include <string>

#include "mka/common/base64.h"
#include "mka/sandbox/api_error.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;

constexpr std::string_view kMagic{"k8s\0", 4};

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

// Protobuf wire-format reader over one message. Every read is bounds-checked: a malformed
// body throws ApiError 400 naming the byte offset within the request body.
class Reader {
 public:
  Reader(std::string_view data, std::size_t base) : data_(data), base_(base) {}

  bool done() const { return pos_ >= data_.size(); }

  // The next field's number and wire type.
  std::pair<std::uint32_t, std::uint32_t> tag() {
    const std::uint64_t key = varint();
    const auto field = static_cast<std::uint32_t>(key >> 3);
    if (field == 0) fail("field number 0");
    return {field, static_cast<std::uint32_t>(key & 7)};
  }

  std::uint64_t varint() {
    std::uint64_t out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) fail("truncated varint");
      const auto byte = static_cast<unsigned char>(data_[pos_++]);
      out |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return out;
    }
    fail("varint longer than 10 bytes");
  }

  // A length-delimited field's bytes, and a reader for them as a nested message.
  std::string_view bytes() {
    const std::uint64_t length = varint();
    if (length > data_.size() - pos_) fail("length " + std::to_string(length) + " runs past the end");
    const std::string_view out = data_.substr(pos_, static_cast<std::size_t>(length));
    pos_ += static_cast<std::size_t>(length);
    return out;
  }
  Reader message() {
    const std::size_t start = pos_;
    const std::string_view inner = bytes();
    return Reader(inner, base_ + start + (pos_ - start - inner.size()));
  }

  void expect(std::uint32_t wire, std::uint32_t wanted, std::uint32_t field) {
    if (wire != wanted) {
      fail("field " + std::to_string(field) + " has wire type " + std::to_string(wire) + ", expected " +
           std::to_string(wanted));
    }
  }

  void skip(std::uint32_t wire) {
    switch (wire) {
      case kVarint: varint(); return;
      case kBytes: bytes(); return;
      case kFixed64: advance(8); return;
      case kFixed32: advance(4); return;
      default: fail("unsupported wire type " + std::to_string(wire));
    }
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw ApiError::badRequest("the protobuf request body is malformed at byte " + std::to_string(base_ + pos_) + ": " +
                               why + ": send the object as JSON (Content-Type: application/json)");
  }

 private:
  void advance(std::size_t n) {
    if (n > data_.size() - pos_) fail("truncated fixed-size field");
    pos_ += n;
  }

  std::string_view data_;
  std::size_t base_;  // offset of data_ within the whole body, for error messages
  std::size_t pos_ = 0;
};

bool validUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (n > s.size() - i - 1) return false;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

// A string field. Go strings may hold any bytes, but JSON (and so the sandbox) needs UTF-8.
std::string text(Reader& r, std::uint32_t wire, std::uint32_t field) {
  r.expect(wire, kBytes, field);
  const std::string_view bytes = r.bytes();
  if (!validUtf8(bytes)) r.fail("string field " + std::to_string(field) + " is not valid UTF-8");
  return std::string(bytes);
}

// A bytes field (ConfigMap.binaryData, Secret.data): any bytes, carried as base64.
std::string raw(Reader& r, std::uint32_t wire, std::uint32_t field) {
  r.expect(wire, kBytes, field);
  return std::string(r.bytes());
}

std::int64_t integer(Reader& r, std::uint32_t wire, std::uint32_t field) {
  r.expect(wire, kVarint, field);
  return static_cast<std::int64_t>(r.varint());
}

bool boolean(Reader& r, std::uint32_t wire, std::uint32_t field) { return integer(r, wire, field) != 0; }

void setString(json& out, const char* key, const std::string& value) {
  if (!value.empty()) out[key] = value;
}

// A map<string, string|bytes> entry: {1: key, 2: value}.
void mapEntry(Reader& r, std::uint32_t wire, std::uint32_t field, json& map, bool valueIsBytes) {
  r.expect(wire, kBytes, field);
  Reader entry = r.message();
  std::string key, value;
  while (!entry.done()) {
    const auto [f, w] = entry.tag();
    if (f == 1) {
      key = text(entry, w, f);
    } else if (f == 2) {
      value = valueIsBytes ? raw(entry, w, f) : text(entry, w, f);
    } else {
      entry.skip(w);
    }
  }
  if (!map.is_object()) map = json::object();
  map[key] = valueIsBytes ? base64Encode(value) : value;
}

// metav1.Time {1: seconds, 2: nanos} as RFC 3339; null for the zero time (Go's omitempty
// does not drop a struct, it renders null).
json timestamp(Reader& r, std::uint32_t wire, std::uint32_t field) {
  r.expect(wire, kBytes, field);
  Reader t = r.message();
  std::int64_t seconds = 0;
  while (!t.done()) {
    const auto [f, w] = t.tag();
    if (f == 1) {
      seconds = integer(t, w, f);
    } else {
      t.skip(w);
    }
  }
  if (seconds == 0) return nullptr;
  const std::time_t tt = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&tt, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

json ownerReference(Reader r) {
  json out = json::object();
  while (!r.done()) {
    const auto [f, w] = r.tag();
    switch (f) {
      case 1: setString(out, "kind", text(r, w, f)); break;
      case 3: setString(out, "name", text(r, w, f)); break;
      case 4: setString(out, "uid", text(r, w, f)); break;
      case 5: setString(out, "apiVersion", text(r, w, f)); break;
      case 6: out["controller"] = boolean(r, w, f); break;
      case 7: out["blockOwnerDeletion"] = boolean(r, w, f); break;
      default: r.skip(w);
    }
  }
  return out;
}

json objectMeta(Reader r) {
  json out = json::object();
  while (!r.done()) {
    const auto [f, w] = r.tag();
    switch (f) {
      case 1: setString(out, "name", text(r, w, f)); break;
      case 2: setString(out, "generateName", text(r, w, f)); break;
      case 3: setString(out, "namespace", text(r, w, f)); break;
      case 5: setString(out, "uid", text(r, w, f)); break;
      case 6: setString(out, "resourceVersion", text(r, w, f)); break;
      case 7: {
        const auto generation = integer(r, w, f);
        if (generation != 0) out["generation"] = generation;
        break;
      }
      case 8: {
        json t = timestamp(r, w, f);
        if (!t.is_null()) out["creationTimestamp"] = std::move(t);
        break;
      }
      case 9: {
        json t = timestamp(r, w, f);
        if (!t.is_null()) out["deletionTimestamp"] = std::move(t);
        break;
      }
      case 10: out["deletionGracePeriodSeconds"] = integer(r, w, f); break;
      case 11: mapEntry(r, w, f, out["labels"], false); break;
      case 12: mapEntry(r, w, f, out["annotations"], false); break;
      case 13:
        r.expect(w, kBytes, f);
        out["ownerReferences"].push_back(ownerReference(r.message()));
        break;
      case 14: out["finalizers"].push_back(text(r, w, f)); break;
      default: r.skip(w);  // selfLink, managedFields: set by the server, not by clients
    }
  }
  return out;
}

json namespaceObject(Reader r) {
  json out = {{"apiVersion", "v1"}, {"kind", "Namespace"}};
  while (!r.done()) {
    const auto [f, w] = r.tag();
    if (f == 1) {
      r.expect(w, kBytes, f);
      out["metadata"] = objectMeta(r.message());
    } else if (f == 2) {
      r.expect(w, kBytes, f);
      Reader spec = r.message();
      json s = json::object();
      while (!spec.done()) {
        const auto [sf, sw] = spec.tag();
        if (sf == 1) {
          s["finalizers"].push_back(text(spec, sw, sf));
        } else {
          spec.skip(sw);
        }
      }
      if (!s.empty()) out["spec"] = std::move(s);
    } else {
      r.skip(w);  // status is the server's
    }
  }
  return out;
}

json configMap(Reader r) {
  json out = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}};
  while (!r.done()) {
    const auto [f, w] = r.tag();
    switch (f) {
      case 1:
        r.expect(w, kBytes, f);
        out["metadata"] = objectMeta(r.message());
        break;
      case 2: mapEntry(r, w, f, out["data"], false); break;
      case 3: mapEntry(r, w, f, out["binaryData"], true); break;
      case 4: out["immutable"] = boolean(r, w, f); break;
      default: r.skip(w);
    }
  }
  return out;
}

json secret(Reader r) {
  json out = {{"apiVersion", "v1"}, {"kind", "Secret"}};
  while (!r.done()) {
    const auto [f, w] = r.tag();
    switch (f) {
      case 1:
        r.expect(w, kBytes, f);
        out["metadata"] = objectMeta(r.message());
        break;
      case 2: mapEntry(r, w, f, out["data"], true); break;
      case 3: setString(out, "type", text(r, w, f)); break;
      case 4: mapEntry(r, w, f, out["stringData"], false); break;
      case 5: out["immutable"] = boolean(r, w, f); break;
      default: r.skip(w);
    }
  }
  return out;
}

json serviceAccount(Reader r) {
  json out = {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}};
  while (!r.done()) {
    const auto [f, w] = r.tag();
    switch (f) {
      case 1:
        r.expect(w, kBytes, f);
        out["metadata"] = objectMeta(r.message());
        break;
      case 3: {  // imagePullSecrets: LocalObjectReference {1: name}
        r.expect(w, kBytes, f);
        Reader ref = r.message();
        json entry = json::object();
        while (!ref.done()) {
          const auto [rf, rw] = ref.tag();
          if (rf == 1) {
            setString(entry, "name", text(ref, rw, rf));
          } else {
            ref.skip(rw);
          }
        }
        out["imagePullSecrets"].push_back(std::move(entry));
        break;
      }
      case 4: out["automountServiceAccountToken"] = boolean(r, w, f); break;
      default: r.skip(w);  // secrets: legacy token references
    }
  }
  return out;
}

json deleteOptionsObject(Reader r, const std::string& apiVersion) {
  json out = {{"apiVersion", apiVersion}, {"kind", "DeleteOptions"}};
  while (!r.done()) {
    const auto [f, w] = r.tag();
    switch (f) {
      case 1: out["gracePeriodSeconds"] = integer(r, w, f); break;
      case 2: {
        r.expect(w, kBytes, f);
        Reader p = r.message();
        json preconditions = json::object();
        while (!p.done()) {
          const auto [pf, pw] = p.tag();
          if (pf == 1) {
            preconditions["uid"] = text(p, pw, pf);
          } else if (pf == 2) {
            preconditions["resourceVersion"] = text(p, pw, pf);
          } else {
            p.skip(pw);
          }
        }
        out["preconditions"] = std::move(preconditions);
        break;
      }
      case 3: out["orphanDependents"] = boolean(r, w, f); break;
      case 4: setString(out, "propagationPolicy", text(r, w, f)); break;
      case 5: out["dryRun"].push_back(text(r, w, f)); break;
      default: r.skip(w);
    }
  }
  return out;
}

}  // namespace

bool isKubernetesProtobuf(std::string_view body) { return body.substr(0, kMagic.size()) == kMagic; }

json decodeKubernetesProtobuf(std::string_view body) {
  if (!isKubernetesProtobuf(body)) {
    throw ApiError::badRequest(
        "the request body says Content-Type: application/vnd.kubernetes.protobuf but does not start with the "
        "protobuf envelope's \"k8s\\x00\" magic: send it as JSON (Content-Type: application/json)");
  }
  Reader envelope(body.substr(kMagic.size()), kMagic.size());
  std::string apiVersion, kind, contentEncoding;
  std::string_view raw;
  std::size_t rawOffset = 0;
  while (!envelope.done()) {
    const auto [f, w] = envelope.tag();
    if (f == 1) {  // TypeMeta {1: apiVersion, 2: kind}
      envelope.expect(w, kBytes, f);
      Reader typeMeta = envelope.message();
      while (!typeMeta.done()) {
        const auto [tf, tw] = typeMeta.tag();
        if (tf == 1) {
          apiVersion = text(typeMeta, tw, tf);
        } else if (tf == 2) {
          kind = text(typeMeta, tw, tf);
        } else {
          typeMeta.skip(tw);
        }
      }
    } else if (f == 2) {
      envelope.expect(w, kBytes, f);
      raw = envelope.bytes();
      rawOffset = static_cast<std::size_t>(raw.data() - body.data());
    } else if (f == 3) {
      contentEncoding = text(envelope, w, f);
    } else {
      envelope.skip(w);
    }
  }
  if (!contentEncoding.empty()) {
    throw ApiError::unsupportedMediaType("application/vnd.kubernetes.protobuf; encoding=" + contentEncoding);
  }
  Reader object(raw, rawOffset);
  if (apiVersion == "v1" && kind == "Namespace") return namespaceObject(object);
  if (apiVersion == "v1" && kind == "ConfigMap") return configMap(object);
  if (apiVersion == "v1" && kind == "Secret") return secret(object);
  if (apiVersion == "v1" && kind == "ServiceAccount") return serviceAccount(object);
  if ((apiVersion == "v1" || apiVersion == "meta.k8s.io/v1") && kind == "DeleteOptions") {
    return deleteOptionsObject(object, apiVersion);
  }
  throw ApiError(415, "UnsupportedMediaType",
                 "the sandbox reads protobuf bodies only for v1 Namespace, ConfigMap, Secret, ServiceAccount and "
                 "DeleteOptions, not " +
                     (apiVersion.empty() ? std::string("?") : apiVersion) + " " +
                     (kind.empty() ? std::string("?") : kind) +
                     ": send it as JSON (kubectl create -f, or a client configured for application/json)");
}

}  // namespace mka::sandbox
