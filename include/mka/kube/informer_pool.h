#pragma once
// One informer per kind for every controller of a client, as controller-runtime's cache shares
// its informers: on a manager that runs both the dispatch loop and the job integration, the
// Workloads and the jobs of a kind that both follow are listed, watched, parsed and cached once,
// not once per controller. Controllers add and remove their own handlers (Informer::addHandlers
// replays the cache to a late one); the pool's owner stops the informers once no controller
// follows them.
//
// Threads: informer() and stop() from any thread; the informers run on their own threads.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "mka/api/gvk.h"
#include "mka/kube/informer.h"

namespace mka::kube {

class InformerPool {
 public:
  explicit InformerPool(Client& client) : client_(client) {}
  ~InformerPool();
  InformerPool(const InformerPool&) = delete;
  InformerPool& operator=(const InformerPool&) = delete;

  // The informer of `gvk` for `options`' namespace and selectors, made on the first call (not
  // started: Informer::start() is idempotent, so each controller starts what it follows). The
  // other options come from that first call; a later one that asks for a different
  // withoutManagedFields, or any call with a `transform` (which cannot be compared), is a
  // programming error (std::logic_error): cached objects must look the same to every reader.
  Informer& informer(const api::GroupVersionKind& gvk, const InformerOptions& options);
  // Stops every informer (joins their threads); they stay in the pool and can start again.
  void stop();

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string, std::string>;
  struct Entry {
    bool withoutManagedFields;  // what the first call asked for, which later calls must match
    std::unique_ptr<Informer> informer;
  };
  Client& client_;
  std::mutex mutex_;
  std::map<Key, Entry> informers_;
};

// The handlers a controller added to informers it may share, removed together: a controller
// that stops must not be called again while the informers go on for others.
class HandlerRegistrations {
 public:
  HandlerRegistrations() = default;
  ~HandlerRegistrations() { clear(); }
  HandlerRegistrations(const HandlerRegistrations&) = delete;
  HandlerRegistrations& operator=(const HandlerRegistrations&) = delete;

  void add(Informer& informer, InformerHandlers handlers) {
    const auto id = informer.addHandlers(std::move(handlers));
    entries_.emplace_back(&informer, id);
  }
  void clear() {
    for (auto& [informer, id] : entries_) informer->removeHandlers(id);
    entries_.clear();
  }

 private:
  std::vector<std::pair<Informer*, Informer::HandlerId>> entries_;
};

}  // namespace mka::kube
