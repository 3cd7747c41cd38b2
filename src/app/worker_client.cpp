#include "mka/app/worker_client.h"

#include "mka/api/views.h"
#include "mka/common/clock.h"
#include "mka/controller/status_update.h"
#include "mka/kube/api_error.h"
#include "mka/kube/rate_limiter.h"
#include "mka/multikueue/api.h"
#include "mka/multikueue/cluster_source.h"

namespace mka::app {

WorkerClient connectWorker(const nlohmann::json& cluster, const controller::ObjectReader& manager,
                           const config::Configuration& cfg, std::chrono::milliseconds timeout,
                           const std::string& userAgent) {
  WorkerClient out;
  const std::string name(api::ObjectView(cluster).name());
  const auto source =
      multikueue::loadClusterSource(manager, cluster, cfg.namespace_, std::string(multikueue::kKubeconfigPathPrefix),
                                    cfg.multiKueue.clusterProfile ? &*cfg.multiKueue.clusterProfile : nullptr);
  if (!source.ok()) {
    out.error = source.reason + ": " + source.error;
    return out;
  }
  try {
    kube::ClientOptions options;
    options.qps = 0;
    options.maxRetries = 0;
    options.timeout = timeout;
    options.userAgent = userAgent;
    out.client = std::make_unique<kube::Client>(
        std::make_shared<kube::RestClient>(multikueue::restConfigOf(name, source, kube::systemClock()), options));
  } catch (const std::exception& e) {
    out.error = errorText(e);
  }
  return out;
}

std::string errorText(const std::exception& e) {
  if (const auto* api = dynamic_cast<const kube::ApiError*>(&e)) return controller::apiErrorMessage(*api);
  return e.what();
}

}  // namespace mka::app
