// serve(): runs the Service until SIGTERM/SIGINT.
#include <spdlog/spdlog.h>

#include "mka/app/service.h"
#include "mka/app/signals.h"
#include "mka/common/errors.h"

namespace mka::app {

int serve(const ServeOptions& options) {
  blockStopSignals();

  try {
    Service service(options);
    service.start();
    spdlog::info("received signal={}, stopping", waitForStopSignal());
    service.stop();
    return 0;
  } catch (const ValidationError& e) {
    spdlog::error("configuration is invalid, refusing to start file={} errors={}",
                  options.configFile ? options.configFile->string() : "", e.errors().size());
    for (const auto& error : e.errors()) spdlog::error("{}", error.toString());
    return 1;
  } catch (const std::exception& e) {
    spdlog::error("cannot start: {}", e.what());
    return 1;
  }
}

}  // namespace mka::app
