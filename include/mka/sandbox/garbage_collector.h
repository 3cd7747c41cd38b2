#pragma once
// The garbage collector controller's job: when an owner is deleted, delete its dependents
// (objects whose metadata.ownerReferences name the owner's uid) — background propagation —
// or strip the reference (orphan). Switchable, because a test may want dependents to stay.
//
// Threads: owns one worker thread fed by a queue of deleted owners.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace mka::sandbox {

class ClusterApi;

class GarbageCollector {
 public:
  explicit GarbageCollector(ClusterApi& api);
  ~GarbageCollector();
  void start();
  void stop();
  void setEnabled(bool enabled);
  // Called by ClusterApi once an object is really gone (not while finalizers hold it).
  void ownerDeleted(const std::string& uid, const std::string& propagationPolicy);
  // True when no deletion is queued or in progress (tests await it).
  bool idle() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::sandbox
