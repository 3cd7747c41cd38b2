#pragma once
// Waits for a condition instead of sleeping a guessed time: polls `condition` every few
// milliseconds until it holds (true) or `timeout` passes (false). Use as
// `ASSERT_TRUE(eventually([&] { return server.openConnections() == 100; }));`.

#include <chrono>
#include <functional>

namespace mka::test {

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = std::chrono::seconds{10});

}  // namespace mka::test
