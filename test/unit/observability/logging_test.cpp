#include "mka/observability/logging.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "mka/common/errors.h"

namespace mka::observability {
namespace {

// "2026-11-22T10:00:00.123Z": digits where the pattern has 'd', the rest literally.
bool isTimestamp(std::string_view text) {
  constexpr std::string_view pattern = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (text.size() != pattern.size()) return false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const bool ok = pattern[i] == 'd' ? std::isdigit(static_cast<unsigned char>(text[i])) != 0 : text[i] == pattern[i];
    if (!ok) return false;
  }
  return true;
}

// Logs one message through a logger named `name` formatted as `format`, returns the line.
std::string logLine(LogFormat format, const std::string& name, spdlog::level::level_enum level,
                    const std::string& msg) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_formatter(makeLogFormatter(format));
  spdlog::logger logger(name, sink);
  logger.set_level(spdlog::level::trace);
  logger.log(level, "{}", msg);
  return out.str();
}

TEST(LogFormatTest, TextLine) {
  const std::string line =
      logLine(LogFormat::Text, "net", spdlog::level::info, "listening server=webhook address=:9443");
  ASSERT_GT(line.size(), 24u);
  EXPECT_TRUE(isTimestamp(std::string_view(line).substr(0, 24))) << line;
  EXPECT_EQ(line.substr(24), " info  [net] listening server=webhook address=:9443\n");
}

TEST(LogFormatTest, TextLevelsLineUp) {
  EXPECT_NE(logLine(LogFormat::Text, "x", spdlog::level::warn, "m").find("Z warn  [x] m"), std::string::npos);
  EXPECT_NE(logLine(LogFormat::Text, "x", spdlog::level::err, "m").find("Z error [x] m"), std::string::npos);
  EXPECT_NE(logLine(LogFormat::Text, "x", spdlog::level::debug, "m").find("Z debug [x] m"), std::string::npos);
}

TEST(LogFormatTest, TimestampIsUtcWithMilliseconds) {
  std::ostringstream out;
  auto formatter = makeLogFormatter(LogFormat::Text);
  spdlog::details::log_msg msg(spdlog::source_loc{}, "x", spdlog::level::info, "m");
  msg.time =
      std::chrono::system_clock::time_point{std::chrono::milliseconds{1795341600123}};  // 2026-11-22T10:00:00.123Z
  spdlog::memory_buf_t buf;
  formatter->format(msg, buf);
  EXPECT_EQ(std::string(buf.data(), buf.size()), "2026-11-22T10:00:00.123Z info  [x] m\n");
}

struct JsonCase {
  std::string name;
  std::string msg;
  friend void PrintTo(const JsonCase& c, std::ostream* os) { *os << c.name; }
};

class JsonLogTest : public ::testing::TestWithParam<JsonCase> {};

TEST_P(JsonLogTest, OneParsableObjectPerLineWithTheMessageIntact) {
  const std::string line = logLine(LogFormat::Json, "webhook", spdlog::level::warn, GetParam().msg);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "a message must not break the line";
  EXPECT_EQ(line.rfind(R"({"ts":")", 0), 0u) << line;
  const auto json = nlohmann::json::parse(line);
  EXPECT_EQ(json.size(), 4u);
  EXPECT_EQ(json.at("level"), "warn");
  EXPECT_EQ(json.at("logger"), "webhook");
  EXPECT_EQ(json.at("msg"), GetParam().msg);
  EXPECT_TRUE(isTimestamp(json.at("ts").get<std::string>())) << line;
}

INSTANTIATE_TEST_SUITE_P(
    Messages, JsonLogTest,
    ::testing::Values(JsonCase{"Plain", "denied object=tekton-ci/build-42"},
                      JsonCase{"Quotes", R"(error="field \"x\" is immutable")"},
                      JsonCase{"Backslash", R"(path=C:\temp\x)"}, JsonCase{"Newlines", "line one\nline two\r\n"},
                      JsonCase{"ControlCharacters", std::string("tab\there bell\x07 nul") + '\0' + "end"},
                      JsonCase{"Unicode", "queue=équipe-α 🚀"}),
    [](const auto& info) { return info.param.name; });

TEST(JsonLogTest, InvalidUtf8IsReplacedNotDropped) {
  const std::string line = logLine(LogFormat::Json, "x", spdlog::level::info, "bad \xff\xfe byte");
  const auto json = nlohmann::json::parse(line);
  EXPECT_EQ(json.at("msg"), "bad \xEF\xBF\xBD\xEF\xBF\xBD byte");
}

TEST(ParseLogFormatTest, AcceptsTextAndJson) {
  EXPECT_EQ(parseLogFormat("text"), LogFormat::Text);
  EXPECT_EQ(parseLogFormat("json"), LogFormat::Json);
  EXPECT_EQ(parseLogFormat("JSON"), LogFormat::Json);
  try {
    parseLogFormat("xml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), R"(invalid log format "xml": use "text" or "json")");
  }
}

TEST(ParseLogLevelTest, Table) {
  const std::vector<std::pair<std::string, spdlog::level::level_enum>> cases = {
      {"trace", spdlog::level::trace},       {"debug", spdlog::level::debug},  {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},         {"warning", spdlog::level::warn}, {"error", spdlog::level::err},
      {"critical", spdlog::level::critical}, {"off", spdlog::level::off},      {"INFO", spdlog::level::info}};
  for (const auto& [text, level] : cases) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parseLogLevel(text), level);
  }
  EXPECT_THROW(parseLogLevel("verbose"), Error);
  EXPECT_THROW(parseLogLevel(""), Error);
}

TEST(VerbosityTest, KlogStyle) {
  EXPECT_EQ(verbosityToLevel(-1), spdlog::level::info);
  EXPECT_EQ(verbosityToLevel(0), spdlog::level::info);
  EXPECT_EQ(verbosityToLevel(1), spdlog::level::debug);
  EXPECT_EQ(verbosityToLevel(3), spdlog::level::debug);
  EXPECT_EQ(verbosityToLevel(4), spdlog::level::trace);
  EXPECT_EQ(verbosityToLevel(10), spdlog::level::trace);
}

TEST(SetupLoggingTest, AppliesLevelToDefaultAndExistingNamedLoggers) {
  auto named = spdlog::default_logger()->clone("setup-test");
  spdlog::register_logger(named);
  setupLogging({LogFormat::Json, spdlog::level::warn});
  EXPECT_EQ(spdlog::default_logger()->name(), "main");
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::warn);
  EXPECT_EQ(named->level(), spdlog::level::warn);
  ASSERT_EQ(named->sinks().size(), 1u);
  EXPECT_EQ(named->sinks().front(), spdlog::default_logger()->sinks().front());
  spdlog::drop("setup-test");
  setupLogging({});
}

}  // namespace
}  // namespace mka::observability
