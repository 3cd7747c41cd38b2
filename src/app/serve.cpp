// serve(): runs the Service until SIGTERM/SIGINT.

#include "mka/app/service.h"
#include "mka/app/signals.h"
#include "mka/common/errors.h"
#include "mka/common/log.h"

namespace mka::app {

int serve(const ServeOptions& options) {
  blockStopSignals();

  try {
    Service service(options);
    service.start();
    log::info("received signal, stopping", {{"signal", waitForStopSignal()}});
    service.stop();
    return 0;
  } catch (const ValidationError& e) {
    log::error("configuration is invalid, refusing to start",
               {{"file", options.configFile ? options.configFile->string() : ""}, {"errors", e.errors().size()}});
    for (const auto& error : e.errors())
      log::error("configuration error",
                 {{"file", options.configFile ? options.configFile->string() : ""}, {"error", error.toString()}});
    return 1;
  } catch (const std::exception& e) {
    log::error("cannot start", {{"error", e.what()}});
    return 1;
  }
}

}  // namespace mka::app
