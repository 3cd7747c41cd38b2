// Kubernetes protobuf request bodies, encoded here field by field the way client-go's
// generated marshallers write them (every string field, even empty; Time as a message).
#include "mka/sandbox/protobuf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mka/sandbox/api_error.h"
#include "mka/sandbox/sandbox.h"
#include "sandbox_http.h"

namespace mka::sandbox {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A minimal protobuf writer.
struct Message {
  std::string bytes;
  Message& varint(std::uint64_t v) {
    do {
      unsigned char b = v & 0x7f;
      v >>= 7;
      if (v != 0) b |= 0x80;
      bytes += static_cast<char>(b);
    } while (v != 0);
    return *this;
  }
  Message& tag(std::uint32_t field, std::uint32_t wire) { return varint((field << 3) | wire); }
  Message& str(std::uint32_t field, const std::string& s) {
    tag(field, 2).varint(s.size());
    bytes += s;
    return *this;
  }
  Message& msg(std::uint32_t field, const Message& m) { return str(field, m.bytes); }
  Message& num(std::uint32_t field, std::uint64_t v) { return tag(field, 0).varint(v); }
  Message& entry(std::uint32_t field, const std::string& key, const std::string& value) {
    return msg(field, Message{}.str(1, key).str(2, value));
  }
};

std::string envelope(const std::string& apiVersion, const std::string& kind, const Message& object) {
  Message unknown;
  unknown.msg(1, Message{}.str(1, apiVersion).str(2, kind)).msg(2, object).str(3, "").str(4, "");
  return std::string("k8s\0", 4) + unknown.bytes;
}

Message meta(const std::string& name, const std::string& ns = "") {
  Message m;
  m.str(1, name).str(2, "").str(3, ns).str(4, "").str(5, "").str(6, "").num(7, 0);
  m.msg(8, Message{});  // the zero creationTimestamp
  return m;
}

int codeOf(const std::string& body) {
  try {
    decodeKubernetesProtobuf(body);
  } catch (const ApiError& e) {
    return e.code();
  }
  return 0;
}

TEST(ProtobufTest, Namespace) {
  Message m = meta("team-a");
  m.entry(11, "env", "dev").entry(11, "team", "a").entry(12, "note", "hi");
  const json ns = decodeKubernetesProtobuf(
      envelope("v1", "Namespace", Message{}.msg(1, m).msg(2, Message{}).msg(3, Message{}.str(1, ""))));
  EXPECT_EQ(ns, json::parse(R"({"apiVersion":"v1","kind":"Namespace",
    "metadata":{"name":"team-a","labels":{"env":"dev","team":"a"},"annotations":{"note":"hi"}}})"));
}

TEST(ProtobufTest, ConfigMapWithBinaryData) {
  Message cm;
  cm.msg(1, meta("c1", "demo")).entry(2, "a", "b").entry(3, "blob", std::string("\x00\x01\xff", 3)).num(4, 1);
  const json out = decodeKubernetesProtobuf(envelope("v1", "ConfigMap", cm));
  EXPECT_EQ(out["metadata"], json::parse(R"({"name":"c1","namespace":"demo"})"));
  EXPECT_EQ(out["data"], json::parse(R"({"a":"b"})"));
  EXPECT_EQ(out["binaryData"]["blob"], "AAH/");
  EXPECT_EQ(out["immutable"], true);
}

TEST(ProtobufTest, SecretDataIsBase64) {
  Message s;
  s.msg(1, meta("s1", "demo")).entry(2, "pw", "hunter2").str(3, "Opaque");
  const json out = decodeKubernetesProtobuf(envelope("v1", "Secret", s));
  EXPECT_EQ(out["data"]["pw"], "aHVudGVyMg==");
  EXPECT_EQ(out["type"], "Opaque");
}

TEST(ProtobufTest, ObjectMetaDetails) {
  Message m;
  m.str(1, "").str(2, "gen-").str(3, "ns");
  m.msg(8, Message{}.num(1, 1767225600).num(2, 0));
  m.msg(13, Message{}.str(1, "Workload").str(3, "w").str(4, "uid-1").str(5, "kueue.x-k8s.io/v1beta1").num(6, 1));
  m.str(14, "example.com/hold");
  const json out = decodeKubernetesProtobuf(envelope("v1", "ConfigMap", Message{}.msg(1, m)));
  EXPECT_EQ(out["metadata"], json::parse(R"({"generateName":"gen-","namespace":"ns",
    "creationTimestamp":"2026-01-01T00:00:00Z",
    "ownerReferences":[{"kind":"Workload","name":"w","uid":"uid-1","apiVersion":"kueue.x-k8s.io/v1beta1","controller":true}],
    "finalizers":["example.com/hold"]})"));
}

TEST(ProtobufTest, DeleteOptions) {
  Message d;
  d.num(1, 0).msg(2, Message{}.str(1, "u1")).str(4, "Foreground").str(5, "All");
  const json out = decodeKubernetesProtobuf(envelope("meta.k8s.io/v1", "DeleteOptions", d));
  EXPECT_EQ(out["propagationPolicy"], "Foreground");
  EXPECT_EQ(out["preconditions"]["uid"], "u1");
  EXPECT_EQ(out["dryRun"], json::array({"All"}));
}

TEST(ProtobufTest, UnknownFieldsAreSkipped) {
  Message cm;
  cm.msg(1, meta("c1")).num(99, 5).str(98, "x").tag(97, 5);
  cm.bytes += std::string(4, '\0');
  cm.tag(96, 1);
  cm.bytes += std::string(8, '\0');
  EXPECT_EQ(decodeKubernetesProtobuf(envelope("v1", "ConfigMap", cm))["metadata"]["name"], "c1");
}

TEST(ProtobufTest, OtherKindsAreUnsupportedMediaType) {
  try {
    decodeKubernetesProtobuf(envelope("apps/v1", "Deployment", Message{}.msg(1, meta("d"))));
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 415);
    EXPECT_THAT(e.what(), HasSubstr("apps/v1 Deployment"));
    EXPECT_THAT(e.what(), HasSubstr("JSON"));
  }
}

TEST(ProtobufTest, MalformedBodiesAreBadRequestsNotCrashes) {
  const std::string good = envelope("v1", "ConfigMap", Message{}.msg(1, meta("c1")).entry(2, "a", "b"));
  EXPECT_EQ(codeOf("{\"json\":true}"), 400);
  EXPECT_EQ(codeOf(std::string("k8s\0", 4)), 415) << "an empty envelope names no known kind";
  for (std::size_t cut = 5; cut < good.size(); ++cut) {
    const int code = codeOf(good.substr(0, cut));
    EXPECT_TRUE(code == 400 || code == 415 || code == 0) << "cut at " << cut << ": " << code;
  }
  EXPECT_EQ(codeOf(std::string("k8s\0", 4) + "\x0a\xff\xff\xff\xff\x0f"), 400) << "length past the end";
  EXPECT_EQ(codeOf(std::string("k8s\0", 4) + "\x0f"), 400) << "wire type 7";
  EXPECT_EQ(codeOf(std::string("k8s\0", 4) + std::string(11, '\xff')), 400) << "endless varint";
}

TEST(ProtobufTest, StringsMustBeUtf8ButBytesNeedNot) {
  const std::string latin1 = "caf\xe9";
  EXPECT_EQ(codeOf(envelope("v1", "ConfigMap", Message{}.msg(1, meta(latin1)))), 400);
  EXPECT_EQ(codeOf(envelope("v1", "ConfigMap", Message{}.msg(1, meta("c")).entry(2, "k", latin1))), 400);
  EXPECT_EQ(codeOf(envelope("v1", "ConfigMap", Message{}.msg(1, meta("c")).entry(2, "k", "\xed\xa0\x80"))), 400)
      << "a surrogate";
  EXPECT_EQ(codeOf(envelope("v1", "ConfigMap", Message{}.msg(1, meta("c")).entry(2, "k", "\xc0\xaf"))), 400)
      << "an overlong form";
  EXPECT_EQ(codeOf(envelope("v1", "ConfigMap", Message{}.msg(1, meta("c")).entry(2, "k", "caf\xc3"))), 400)
      << "a truncated sequence";
  const json ok = decodeKubernetesProtobuf(
      envelope("v1", "ConfigMap", Message{}.msg(1, meta("c")).entry(2, "k", "caf\xc3\xa9 \xf0\x9f\x99\x82")));
  EXPECT_EQ(ok["data"]["k"], "caf\u00e9 \U0001F642");
  EXPECT_EQ(decodeKubernetesProtobuf(
                envelope("v1", "Secret", Message{}.msg(1, meta("s")).entry(2, "k", latin1)))["data"]["k"],
            "Y2Fm6Q==");
}

TEST(ProtobufTest, TheFuzzSeedsDecode) {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(MKA_FIXTURES_DIR) + "/protobuf")) {
    if (entry.path().extension() != ".pb") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const json object = decodeKubernetesProtobuf(body);
    EXPECT_TRUE(object.contains("kind")) << entry.path();
  }
}

TEST(ProtobufTest, KubectlCreateNamespaceOverHttp) {
  Sandbox sandbox;
  ClusterOptions options;
  options.name = "manager";
  Cluster& cluster = sandbox.addCluster(options);
  auto client = test::clientFor(cluster);
  const std::string body = envelope("v1", "Namespace", Message{}.msg(1, meta("demo")).msg(2, Message{}));
  auto res = client->Post("/api/v1/namespaces?fieldManager=kubectl-create&fieldValidation=Strict", body,
                          "application/vnd.kubernetes.protobuf");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201) << res->body;
  EXPECT_EQ(test::bodyOf(res)["metadata"]["name"], "demo");
  EXPECT_EQ(test::statusOf(client->Get("/api/v1/namespaces/demo")), 200);

  const std::string options2 = envelope("v1", "DeleteOptions", Message{}.str(4, "Background"));
  res = client->Delete("/api/v1/namespaces/demo", options2, "application/vnd.kubernetes.protobuf");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

}  // namespace
}  // namespace mka::sandbox
