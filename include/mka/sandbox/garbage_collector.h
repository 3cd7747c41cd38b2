#pragma once
// The controllers of kube-controller-manager that finish deletions, for one emulated cluster:
// - the garbage collector: when an owner is gone, its dependents (objects whose
//   metadata.ownerReferences name the owner's uid) are deleted, or only lose the reference
//   when other owners remain (background propagation); an owner deleted with
//   propagationPolicy Foreground keeps its `foregroundDeletion` finalizer until its
//   dependents are gone, one deleted with Orphan keeps its `orphan` finalizer until its
//   dependents no longer reference it. Switchable, because a test may want dependents to stay
//   (then owners deleted with Foreground or Orphan stay too, as in a cluster without GC).
// - the namespace controller: a deleted namespace (Terminating) has its content deleted and
//   goes once it is empty. Always on.
// Everything goes through ClusterApi, so watches, finalizers and admission apply.
//
// Threads: owns one worker thread fed by a queue; ClusterApi enqueues from request threads.

#include <memory>
#include <string>

#include "mka/sandbox/object_store.h"

namespace mka::sandbox {

class ClusterApi;

class GarbageCollector {
 public:
  explicit GarbageCollector(ClusterApi& api);
  ~GarbageCollector();
  GarbageCollector(const GarbageCollector&) = delete;
  GarbageCollector& operator=(const GarbageCollector&) = delete;

  void start();
  void stop();  // drops what is queued
  void setEnabled(bool enabled);
  bool enabled() const;

  // Called by ClusterApi. An object is really gone (no finalizer held it):
  void ownerDeleted(const std::string& uid, const std::string& propagationPolicy);
  // An object got a deletionTimestamp with the foregroundDeletion or orphan finalizer:
  void ownerDeleting(const ObjectKey& owner, const std::string& uid);
  // A namespace became Terminating:
  void namespaceDeleted(const std::string& name);

  // True when nothing is queued or in progress (tests await it).
  bool idle() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mka::sandbox
