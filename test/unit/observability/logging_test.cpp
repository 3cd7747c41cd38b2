#include "mka/observability/logging.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "mka/common/errors.h"
#include "mka/common/log.h"
#include "support/table_test.h"

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

// Writes one record through a logger named `name` formatted as `format`, returns the line.
std::string logLine(LogFormat format, const std::string& name, spdlog::level::level_enum level, std::string_view msg,
                    log::Fields fields = {}) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_formatter(makeLogFormatter(format));
  spdlog::logger logger(name, sink);
  logger.set_level(spdlog::level::trace);
  log::write(logger, level, msg, fields, log::Where::here());
  return out.str();
}

// The line with its timestamp checked and cut out ("ts=... " in logfmt).
std::string withoutTimestamp(const std::string& line) {
  EXPECT_EQ(line.rfind("ts=", 0), 0u) << line;
  EXPECT_TRUE(isTimestamp(std::string_view(line).substr(3, 24))) << line;
  return line.size() > 28 ? line.substr(28) : "";
}

TEST(LogFormatTest, TextIsLogfmtWithEveryFieldAfterTheMessage) {
  const std::string line = logLine(LogFormat::Text, "net", spdlog::level::info, "listening",
                                   {{"server", "webhook"}, {"address", ":9443"}, {"tls", true}, {"port", 9443}});
  ASSERT_THAT(line, ::testing::EndsWith("\n"));
  EXPECT_THAT(withoutTimestamp(line.substr(0, line.size() - 1)),
              ::testing::MatchesRegex(R"(level=info logger=net caller=observability/logging_test\.cpp:[0-9]+ )"
                                      R"(msg=listening server=webhook address=:9443 tls=true port=9443)"));
}

struct LogfmtCase {
  std::string name;
  std::string value;
  std::string written;
};

std::vector<LogfmtCase> logfmtQuotesWhatWouldSplitAPairCases() {
  const std::vector<LogfmtCase> cases = {
      {"plain", "tekton-ci/build-42", "tekton-ci/build-42"},
      {"empty", "", R"("")"},
      {"space", "no more workers", R"("no more workers")"},
      {"equals", "a=b", R"("a=b")"},
      {"quote and backslash", R"(field "x" at C:\t)", R"("field \"x\" at C:\\t")"},
      {"newline and tab", "one\ntwo\tthree", R"("one\ntwo\tthree")"},
      {"control byte", std::string("bell\x07") + '\0', R"("bell\u0007\u0000")"},
      {"unicode", "équipe-α", "équipe-α"},
  };
  return cases;
}

MKA_TABLE_TEST(LogFormatTest, LogfmtQuotesWhatWouldSplitAPair, LogfmtCase, logfmtQuotesWhatWouldSplitAPairCases()) {
  const LogfmtCase& c = testCase();
  const std::string line = logLine(LogFormat::Text, "x", spdlog::level::info, "m", {{"value", c.value}});
  EXPECT_THAT(line, ::testing::EndsWith(" msg=m value=" + c.written + "\n"));
}

TEST(LogFormatTest, LogfmtQuotesWhatWouldSplitAPair) {
  EXPECT_THAT(logLine(LogFormat::Text, "x", spdlog::level::info, "two words"), ::testing::EndsWith(R"( msg="two words")"
                                                                                                   "\n"));
}

TEST(LogFormatTest, LevelsAreNamedAsZapNamesThem) {
  EXPECT_THAT(logLine(LogFormat::Text, "x", spdlog::level::warn, "m"), ::testing::HasSubstr(" level=warn "));
  EXPECT_THAT(logLine(LogFormat::Text, "x", spdlog::level::err, "m"), ::testing::HasSubstr(" level=error "));
  EXPECT_THAT(logLine(LogFormat::Text, "x", spdlog::level::debug, "m"), ::testing::HasSubstr(" level=debug "));
}

TEST(LogFormatTest, TimestampIsUtcWithMilliseconds) {
  auto formatter = makeLogFormatter(LogFormat::Text);
  spdlog::details::log_msg msg(spdlog::source_loc{}, "x", spdlog::level::info, "m");
  msg.time =
      std::chrono::system_clock::time_point{std::chrono::milliseconds{1795341600123}};  // 2026-11-22T10:00:00.123Z
  spdlog::memory_buf_t buf;
  formatter->format(msg, buf);
  EXPECT_EQ(std::string(buf.data(), buf.size()), "ts=2026-11-22T10:00:00.123Z level=info logger=x msg=m\n");
}

TEST(LogFormatTest, ARecordBelowTheLevelIsNotWritten) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("x", sink);
  logger.set_level(spdlog::level::info);
  log::debug(logger, "hidden", {{"k", "v"}});
  log::info(logger, "shown");
  EXPECT_THAT(out.str(), ::testing::Not(::testing::HasSubstr("hidden")));
  EXPECT_THAT(out.str(), ::testing::HasSubstr("shown"));
}

// A sink that formats later (here a ring buffer, formatted when read) still has every field.
TEST(LogFormatTest, ASinkThatFormatsLaterKeepsTheFields) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(4);
  sink->set_formatter(makeLogFormatter(LogFormat::Json));
  spdlog::logger logger("x", sink);
  log::info(logger, "connected", {{"cluster", "worker1"}, {"attempt", 2}});
  const auto lines = sink->last_formatted();
  ASSERT_EQ(lines.size(), 1u);
  const auto json = nlohmann::json::parse(lines.front());
  EXPECT_EQ(json.at("msg"), "connected");
  EXPECT_EQ(json.at("cluster"), "worker1");
  EXPECT_EQ(json.at("attempt"), 2);
}

TEST(LogFormatTest, FieldsBelongToTheirRecordOnly) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_formatter(makeLogFormatter(LogFormat::Json));
  spdlog::logger logger("x", sink);
  log::info(logger, "first", {{"cluster", "worker1"}});
  logger.info("through spdlog directly");
  std::istringstream lines(out.str());
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(nlohmann::json::parse(first).at("cluster"), "worker1");
  const auto direct = nlohmann::json::parse(second);
  EXPECT_FALSE(direct.contains("cluster")) << second;
  EXPECT_FALSE(direct.contains("caller")) << "spdlog's own calls carry no source location: " << second;
}

struct JsonCase {
  std::string name;
  std::string msg;
  friend void PrintTo(const JsonCase& c, std::ostream* os) { *os << c.name; }
};

class JsonLogTest : public ::testing::TestWithParam<JsonCase> {};

TEST_P(JsonLogTest, OneParsableObjectPerLineWithTheValuesIntact) {
  const std::string line =
      logLine(LogFormat::Json, "webhook", spdlog::level::warn, "admission answered", {{"value", GetParam().msg}});
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "a value must not break the line";
  EXPECT_EQ(line.rfind(R"({"ts":")", 0), 0u) << line;
  const auto json = nlohmann::json::parse(line);
  EXPECT_EQ(json.size(), 6u) << line;
  EXPECT_EQ(json.at("level"), "warn");
  EXPECT_EQ(json.at("logger"), "webhook");
  EXPECT_EQ(json.at("msg"), "admission answered");
  EXPECT_EQ(json.at("value"), GetParam().msg);
  EXPECT_THAT(json.at("caller").get<std::string>(),
              ::testing::MatchesRegex(R"(observability/logging_test\.cpp:[0-9]+)"));
  EXPECT_TRUE(isTimestamp(json.at("ts").get<std::string>())) << line;
}

INSTANTIATE_TEST_SUITE_P(
    Values, JsonLogTest,
    ::testing::Values(JsonCase{"Plain", "tekton-ci/build-42"}, JsonCase{"Quotes", R"(field "x" is immutable)"},
                      JsonCase{"Backslash", R"(C:\temp\x)"}, JsonCase{"Newlines", "line one\nline two\r\n"},
                      JsonCase{"ControlCharacters", std::string("tab\there bell\x07 nul") + '\0' + "end"},
                      JsonCase{"Unicode", "équipe-α 🚀"}),
    [](const auto& info) { return info.param.name; });

TEST(JsonLogTest, ValuesKeepTheirJsonTypes) {
  const auto json = nlohmann::json::parse(logLine(LogFormat::Json, "x", spdlog::level::info, "m",
                                                  {{"count", 3},
                                                   {"negative", -2},
                                                   {"big", std::uint64_t{18446744073709551615u}},
                                                   {"ratio", 0.5},
                                                   {"ok", false},
                                                   {"nan", std::nan("")},
                                                   {"text", "3"}}));
  EXPECT_EQ(json.at("count"), 3);
  EXPECT_EQ(json.at("negative"), -2);
  EXPECT_EQ(json.at("big").get<std::uint64_t>(), 18446744073709551615u);
  EXPECT_EQ(json.at("ratio"), 0.5);
  EXPECT_EQ(json.at("ok"), false);
  EXPECT_EQ(json.at("nan"), "nan") << "JSON has no NaN: written as a string";
  EXPECT_EQ(json.at("text"), "3");
}

TEST(LogFormatTest, AHugeValueIsCutNotWrittenWhole) {
  const std::string huge(1 << 20, 'a');
  for (const auto format : {LogFormat::Text, LogFormat::Json}) {
    const std::string line = logLine(format, "x", spdlog::level::info, "m", {{"name", huge}});
    EXPECT_LT(line.size(), 5000u);
    EXPECT_THAT(line, ::testing::HasSubstr(std::string(4096, 'a') + "...(cut)"));
  }
}

TEST(JsonLogTest, InvalidUtf8IsReplacedNotDropped) {
  const std::string line = logLine(LogFormat::Json, "x", spdlog::level::info, "bad \xff\xfe byte", {{"v", "\xff"}});
  const auto json = nlohmann::json::parse(line);
  EXPECT_EQ(json.at("msg"), "bad \xEF\xBF\xBD\xEF\xBF\xBD byte");
  EXPECT_EQ(json.at("v"), "\xEF\xBF\xBD");
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

// Each case is named by the text it parses.
struct ParseLogLevelCase {
  std::string name;
  spdlog::level::level_enum level;
};

std::vector<ParseLogLevelCase> parseLogLevelCases() {
  const std::vector<ParseLogLevelCase> cases = {
      {"trace", spdlog::level::trace},       {"debug", spdlog::level::debug},  {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},         {"warning", spdlog::level::warn}, {"error", spdlog::level::err},
      {"critical", spdlog::level::critical}, {"off", spdlog::level::off},      {"INFO", spdlog::level::info}};
  return cases;
}

MKA_TABLE_TEST(ParseLogLevelTest, ParseLogLevelTable, ParseLogLevelCase, parseLogLevelCases()) {
  const auto& [text, level] = testCase();
  EXPECT_EQ(parseLogLevel(text), level);
}

TEST(ParseLogLevelTest, Table) {
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
