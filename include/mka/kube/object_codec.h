#pragma once
// Compact storage for cached API objects (the informers' caches). An object is kept as CBOR,
// deflated against a preset dictionary made of objects of the same kind. Objects of one kind
// share most of their bytes (keys, labels, owner references, conditions, the pod template), so
// a cached Workload costs a few hundred bytes instead of the ~10 KB of an nlohmann::json tree,
// for some microseconds per encode and per decode. UIDs, which are random and so shrink against
// nothing, are kept as their 16 bytes rather than their 36 characters of text (CBOR tag 37).
//
// Dictionaries: generation 0 is the first object encoded. It is often a poor sample of the
// kind (a Workload just created, before Kueue wrote its status), so at the kRetrainAt-th encode
// generation 1 replaces it for later blobs: the largest object seen until then (the most
// fields) followed by the current one, the last 8 KiB of them (the deflate window, chosen for
// memory). Objects may still gain fields later (the jobs of a backlog listed at startup get
// their status afterwards): an object half as large again as the largest in the current
// dictionary makes the next generation the same way, up to kGenerations. Each blob names its
// generation and every dictionary is kept, so older blobs decode.
//
// Written here over zlib because no packaged library keeps JSON documents compressed against a
// shared dictionary; zlib's preset dictionaries (RFC 1951 raw deflate) do the real work.
//
// Threads: encode() from one thread at a time (an informer's reflector); decode() and
// sameObject() from any thread, for blobs that encode() returned earlier and that reached the
// calling thread through a synchronising hand-off (the informer's mutex).

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mka::kube {

class ObjectCodec {
 public:
  // The encode that makes dictionary generation 1, and how many generations there can be.
  static constexpr std::uint64_t kRetrainAt = 256;
  static constexpr int kGenerations = 4;

  ObjectCodec();
  ~ObjectCodec();
  ObjectCodec(const ObjectCodec&) = delete;
  ObjectCodec& operator=(const ObjectCodec&) = delete;

  // Equal objects encoded under one dictionary generation give equal blobs (CBOR of sorted
  // keys, deterministic deflate); sameObject() also compares blobs of different generations.
  std::string encode(const nlohmann::json& object);
  nlohmann::json decode(std::string_view blob) const;
  bool sameObject(std::string_view a, std::string_view b) const;

  // Observability and tests: the dictionary later blobs are encoded with, and its generation.
  // From the encoding thread only.
  std::size_t dictionarySize() const { return dictionaries_[generation_].size(); }
  int generation() const { return generation_; }

 private:
  void retrain(const std::vector<std::uint8_t>& current);

  // Each set once by encode() before the first blob that uses it, never changed afterwards.
  std::array<std::string, kGenerations> dictionaries_;
  int generation_ = 0;  // encoding thread only
  std::uint64_t encodes_ = 0;
  std::vector<std::uint8_t> largest_;  // the largest CBOR so far, freed at the last generation
  std::size_t trainedOn_ = 0;          // the size of the largest object in the current dictionary
};

}  // namespace mka::kube
