#pragma once
// Compact storage for cached API objects (the informers' caches). An object is kept as CBOR,
// deflated against a preset dictionary: the first object the codec encoded. Objects of one kind
// share most of their bytes (keys, labels, owner references, conditions, the pod template), so
// a cached Workload costs a few hundred bytes instead of the ~10 KB of an nlohmann::json tree,
// for some microseconds per encode and per decode.
//
// The dictionary is the first object's last 8 KiB (the deflate window chosen for memory).
// Written here over zlib because no packaged library keeps JSON documents compressed against a
// shared dictionary; zlib's preset dictionaries (RFC 1951 raw deflate) do the real work.
//
// Threads: encode() from one thread at a time (an informer's reflector); decode() from any
// thread, for blobs that encode() returned earlier and that reached the decoding thread through
// a synchronising hand-off (the informer's mutex).

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mka::kube {

class ObjectCodec {
 public:
  ObjectCodec();
  ~ObjectCodec();
  ObjectCodec(const ObjectCodec&) = delete;
  ObjectCodec& operator=(const ObjectCodec&) = delete;

  // Equal objects give equal blobs (CBOR of sorted keys, deterministic deflate), so blobs can be
  // compared instead of objects.
  std::string encode(const nlohmann::json& object);
  nlohmann::json decode(std::string_view blob) const;

  // Bytes of the dictionary (observability and tests).
  std::size_t dictionarySize() const { return dictionary_.size(); }

 private:
  struct Deflater;
  std::unique_ptr<Deflater> deflater_;
  std::string dictionary_;  // set by the first encode(), never changed afterwards
};

}  // namespace mka::kube
