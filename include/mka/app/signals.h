#pragma once
// How every long-running subcommand (serve, sandbox, demo --keep) stops: SIGTERM and SIGINT are
// blocked before any thread starts (threads inherit the mask) and awaited synchronously with
// sigwait on the main thread, so no code runs in a signal handler; SIGPIPE is ignored so a
// client that disconnects mid-response cannot kill the process.
//
// Threads: call blockStopSignals() on the main thread before starting any other thread.

namespace mka::app {

void blockStopSignals();
// Blocks until SIGTERM or SIGINT arrives; returns its name ("SIGTERM" or "SIGINT").
const char* waitForStopSignal();

}  // namespace mka::app
