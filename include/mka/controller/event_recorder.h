#pragma once
// Kubernetes Events (core/v1) about manager objects, as client-go's event recorder writes
// them, for what users read with `kubectl describe`: best effort, a failed write is logged and
// never fails the reconcile that emitted it. As client-go's EventCorrelator does, an event
// identical to one already written (same object, type, reason and message) patches that
// Event's count and lastTimestamp instead of adding another, so a reconcile that repeats a
// warning on every pass does not flood the namespace; the memory of what was written is
// bounded (kMaxRemembered, then it starts over). It remembers a 128-bit digest of each
// identity and the random part of the Event's name, 56 bytes an entry: the identities, with
// their messages, took about 250, a megabyte of the manager's heap once full.
//
// Threads: record() from any thread; each call writes on the caller's thread; the memory of
// written events is guarded by a mutex held only around its lookups.

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "mka/common/clock.h"
#include "mka/kube/client.h"

namespace mka::controller {

class EventRecorder {
 public:
  // `component` is the event source ("kueue-workload-controller", "multikueue-cluster").
  EventRecorder(kube::Client& client, const Clock& clock, std::string component);
  virtual ~EventRecorder() = default;
  // type: "Normal" | "Warning". The event lands in the object's namespace ("default" for
  // cluster-scoped objects, as kube-apiserver does).
  virtual void record(const nlohmann::json& object, std::string_view type, std::string_view reason,
                      std::string_view message);

  static constexpr std::size_t kMaxRemembered = 4096;  // client-go's aggregation cache size

 private:
  // The first 16 bytes of the SHA-256 of the identity (object uid, type, reason, message): two
  // identities that differ share a digest with a chance of 2^-128.
  using Digest = std::array<unsigned char, 16>;
  struct DigestHash {
    std::size_t operator()(const Digest& digest) const noexcept;
  };
  struct Written {
    std::uint64_t suffix = 0;  // the Event is named "<object name>.<suffix, 16 hex digits>"
    long count = 1;
  };
  static Digest digestOf(std::string_view identity);

  kube::Client& client_;
  const Clock& clock_;
  std::string component_;
  std::mutex mutex_;
  std::unordered_map<Digest, Written, DigestHash> written_;
};

}  // namespace mka::controller
