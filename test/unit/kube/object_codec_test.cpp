#include "mka/kube/object_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace mka::kube {
namespace {

using nlohmann::json;

json workload(int i) {
  const auto n = std::to_string(i);
  return {
      {"apiVersion", "kueue.x-k8s.io/v1beta2"},
      {"kind", "Workload"},
      {"metadata",
       {{"name", "pipelinerun-build-" + n},
        {"namespace", "default"},
        {"uid", "cf272561-67d4-48f1-989a-" + std::string(12 - n.size(), '0') + n},
        {"resourceVersion", std::to_string(1000 + i)},
        {"generation", 1},
        {"labels", {{"kueue.x-k8s.io/job-uid", "ffd745a0-17c1-44eb-8b42-06136972a7f5"}}},
        {"ownerReferences", json::array({{{"apiVersion", "tekton.dev/v1"},
                                          {"kind", "PipelineRun"},
                                          {"name", "build-" + n},
                                          {"controller", true},
                                          {"uid", "ffd745a0-17c1-44eb-8b42-06136972a7f5"}}})}}},
      {"spec",
       {{"queueName", "user-queue"},
        {"active", true},
        {"podSets",
         json::array(
             {{{"name", "main"},
               {"count", 1},
               {"template",
                {{"spec",
                  {{"containers", json::array({{{"name", "main"}, {"image", "registry.k8s.io/pause:3.10"}}})}}}}}}})}}},
      {"status",
       {{"conditions", json::array({{{"type", "QuotaReserved"},
                                     {"status", "True"},
                                     {"reason", "QuotaReserved"},
                                     {"message", "Quota reserved in ClusterQueue cluster-queue"},
                                     {"lastTransitionTime", "2026-11-22T20:04:18Z"},
                                     {"observedGeneration", 1}}})},
        {"priority", -5},
        {"ratio", 0.25}}}};
}

TEST(ObjectCodecTest, RoundTripsEveryJsonType) {
  ObjectCodec codec;
  const json object = {{"s", "text"},
                       {"i", -7},
                       {"u", 18446744073709551615ull},
                       {"d", 1.5},
                       {"b", false},
                       {"n", nullptr},
                       {"a", json::array({1, "two", json::object()})},
                       {"o", {{"nested", {{"deep", true}}}}}};
  EXPECT_EQ(codec.decode(codec.encode(object)), object);
  const auto second = workload(2);
  EXPECT_EQ(codec.decode(codec.encode(second)), second);
  EXPECT_EQ(codec.decode(codec.encode(json::object())), json::object());
}

TEST(ObjectCodecTest, EqualObjectsGiveEqualBlobsAndDifferentOnesDiffer) {
  ObjectCodec codec;
  const auto first = codec.encode(workload(1));
  EXPECT_EQ(codec.encode(workload(1)), first);
  auto changed = workload(1);
  changed["status"]["conditions"][0]["status"] = "False";
  EXPECT_NE(codec.encode(changed), first);
}

// The point of the codec: a sibling of the first object costs a fraction of its JSON text.
TEST(ObjectCodecTest, SimilarObjectsShrinkAgainstTheDictionary) {
  ObjectCodec codec;
  codec.encode(workload(0));
  const auto sibling = workload(4242);
  const auto blob = codec.encode(sibling);
  EXPECT_LT(blob.size() * 4, sibling.dump().size()) << "blob " << blob.size() << " B, JSON " << sibling.dump().size();
  EXPECT_EQ(codec.decode(blob), sibling);
}

// The first object is often a poor dictionary (a Workload before Kueue wrote its status); the
// kRetrainAt-th encode makes a better one from the largest object seen and the current one.
TEST(ObjectCodecTest, ALaterDictionaryLearnsFromLargerObjectsAndOldBlobsStillDecode) {
  ObjectCodec codec;
  auto bare = workload(0);
  bare.erase("status");
  codec.encode(bare);
  EXPECT_EQ(codec.generation(), 0);
  const auto sample = workload(7777);
  const auto before = codec.encode(sample);
  for (std::uint64_t i = 2; i < ObjectCodec::kRetrainAt; ++i) codec.encode(workload(static_cast<int>(i)));
  EXPECT_EQ(codec.generation(), 1);
  EXPECT_GT(codec.dictionarySize(), bare.dump().size() / 2);
  const auto after = codec.encode(sample);
  EXPECT_LT(after.size(), before.size()) << "generation 1 should know the status fields";
  EXPECT_EQ(codec.decode(before), sample);
  EXPECT_EQ(codec.decode(after), sample);
  // One object in two generations: different bytes, the same object.
  EXPECT_NE(before, after);
  EXPECT_TRUE(codec.sameObject(before, after));
  EXPECT_TRUE(codec.sameObject(after, codec.encode(sample)));
  EXPECT_FALSE(codec.sameObject(before, codec.encode(workload(7778))));
}

// Objects that gain fields after the first training (jobs listed at startup, their status
// written later) make further generations, up to the last; every older blob still decodes.
TEST(ObjectCodecTest, AnObjectHalfAsLargeAgainMakesTheNextGeneration) {
  ObjectCodec codec;
  std::vector<std::pair<json, std::string>> kept;
  auto keep = [&](const json& object) { kept.emplace_back(object, codec.encode(object)); };
  for (std::uint64_t i = 0; i < ObjectCodec::kRetrainAt; ++i) keep(workload(static_cast<int>(i)));
  ASSERT_EQ(codec.generation(), 1);
  keep(workload(1));
  EXPECT_EQ(codec.generation(), 1) << "an object no larger than the sample changes nothing";
  auto grown = [](int i, std::size_t note) {
    auto object = workload(i);
    object["metadata"]["annotations"]["note"] = std::string(note, 'n');
    return object;
  };
  const std::size_t base = json::to_cbor(workload(0)).size();
  keep(grown(900, base));  // about twice the sample
  EXPECT_EQ(codec.generation(), 2);
  keep(grown(901, base + base / 4));  // larger, but not half as large again
  EXPECT_EQ(codec.generation(), 2);
  keep(grown(902, 3 * base));
  EXPECT_EQ(codec.generation(), 3);
  keep(grown(903, 9 * base));
  EXPECT_EQ(codec.generation(), ObjectCodec::kGenerations - 1) << "the last generation stays";
  for (const auto& [object, blob] : kept) EXPECT_EQ(codec.decode(blob), object);
}

TEST(ObjectCodecTest, AFirstObjectLargerThanTheWindowStillWorks) {
  ObjectCodec codec;
  json big = workload(0);
  big["metadata"]["annotations"]["huge"] = std::string(100 * 1024, 'x');
  const auto bigBlob = codec.encode(big);
  EXPECT_EQ(codec.dictionarySize(), 8u * 1024);  // the window
  EXPECT_EQ(codec.decode(bigBlob), big);
  EXPECT_EQ(codec.decode(codec.encode(workload(9))), workload(9));
}

TEST(ObjectCodecTest, ACorruptBlobIsAnErrorNotAnObject) {
  ObjectCodec codec;
  auto blob = codec.encode(workload(1));
  blob.resize(blob.size() / 2);
  EXPECT_THROW(codec.decode(blob), std::exception);
  EXPECT_THROW(codec.decode("ab"), std::exception);
}

std::string randomUuid(std::mt19937_64& random) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (int i = 0; i < 36; ++i) text += (i == 8 || i == 13 || i == 18 || i == 23) ? '-' : kDigits[random() % 16];
  return text;
}

// UIDs are random, so deflate cannot shorten their text; the codec stores a canonical one
// (lowercase) as its 16 bytes. The same UID in uppercase is not canonical and stays text, so
// the two blobs differ by about the 20 bytes saved.
TEST(ObjectCodecTest, ACanonicalUidCostsItsSixteenBytesNotItsText) {
  std::mt19937_64 random(7);
  std::size_t canonicalTotal = 0, textTotal = 0;
  for (int i = 0; i < 20; ++i) {
    const auto uid = randomUuid(random);
    std::string upper = uid;
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    auto canonical = workload(i);
    canonical["metadata"]["uid"] = uid;
    auto text = canonical;
    text["metadata"]["uid"] = upper;
    ObjectCodec first, second;  // the same dictionary for both
    first.encode(workload(0));
    second.encode(workload(0));
    const auto canonicalBlob = first.encode(canonical);
    const auto textBlob = second.encode(text);
    EXPECT_EQ(first.decode(canonicalBlob), canonical);
    EXPECT_EQ(second.decode(textBlob), text);
    canonicalTotal += canonicalBlob.size();
    textTotal += textBlob.size();
  }
  EXPECT_LE(canonicalTotal + 20 * 12, textTotal)
      << "canonical " << canonicalTotal << " B, uppercase " << textTotal << " B";
}

// Only a string that is a canonical UUID is packed; anything close to one comes back as it was,
// wherever it is (a value, a key, in an array, the whole document).
TEST(ObjectCodecTest, TextThatOnlyLooksLikeAUidComesBackUnchanged) {
  const std::string uid = "cf272561-67d4-48f1-989a-0123456789ab";
  const json object = {{"uid", uid},
                       {uid, uid},
                       {"upper", "CF272561-67D4-48F1-989A-0123456789AB"},
                       {"dashMoved", "cf27256-167d4-48f1-989a-0123456789ab"},
                       {"notHex", "cf272561-67d4-48f1-989a-0123456789ag"},
                       {"short", uid.substr(1)},
                       {"long", uid + "0"},
                       {"noDashes", "cf27256167d448f1989a0123456789abcdef"},
                       {"list", json::array({uid, 36, "x", json::array({uid})})},
                       {"nested", {{"uid", uid}, {"number", 1.5}, {"big", 18446744073709551615ull}}}};
  ObjectCodec codec;
  EXPECT_EQ(codec.decode(codec.encode(object)), object);
  EXPECT_EQ(codec.decode(codec.encode(json(uid))), json(uid));
  EXPECT_EQ(codec.decode(codec.encode(json::array({uid, uid}))), json::array({uid, uid}));
}

// Random documents of UIDs, near-UIDs and other values all round-trip, also after the
// dictionary is retrained on them.
TEST(ObjectCodecTest, RandomDocumentsWithUidsRoundTrip) {
  std::mt19937_64 random(11);
  ObjectCodec codec;
  for (int i = 0; i < 600; ++i) {
    json object = json::object();
    const int members = 1 + static_cast<int>(random() % 12);
    for (int m = 0; m < members; ++m) {
      auto uid = randomUuid(random);
      switch (random() % 6) {
        case 0: object["k" + std::to_string(m)] = uid; break;
        case 1:
          uid[random() % 36] = "-gA9"[random() % 4];
          object["k" + std::to_string(m)] = uid;
          break;
        case 2: object[uid] = json::array({uid, static_cast<std::int64_t>(random() % 100000) - 50000}); break;
        case 3: object["k" + std::to_string(m)] = {{"uid", uid}, {"n", nullptr}, {"f", 0.5}}; break;
        case 4: object["k" + std::to_string(m)] = uid.substr(0, random() % 36); break;
        default: object["k" + std::to_string(m)] = std::string(random() % 300, 'x'); break;
      }
    }
    ASSERT_EQ(codec.decode(codec.encode(object)), object) << object.dump();
  }
  EXPECT_GE(codec.generation(), 1);
}

// Decoding runs on reconciler threads while the reflector encodes (TSan runs this).
TEST(ObjectCodecTest, ManyThreadsDecodeWhileOneEncodes) {
  ObjectCodec codec;
  std::vector<std::string> blobs;
  for (int i = 0; i < 50; ++i) blobs.push_back(codec.encode(workload(i)));
  std::vector<std::thread> readers;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round)
        for (int i = t; i < 50; i += 4)
          if (codec.decode(blobs[i]) != workload(i)) ++mismatches;
    });
  // Past kRetrainAt: the encoder switches dictionaries while the readers decode older blobs.
  for (int i = 50; i < static_cast<int>(ObjectCodec::kRetrainAt) + 50; ++i)
    EXPECT_EQ(codec.decode(codec.encode(workload(i))), workload(i));
  EXPECT_EQ(codec.generation(), 1);
  for (auto& r : readers) r.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// Codecs share their deflate streams: codecs encoding at once on their own threads still get
// the blobs each would get alone.
TEST(ObjectCodecTest, CodecsEncodingAtOnceGetTheBlobsTheyGetAlone) {
  constexpr int kCodecs = 4, kObjects = 300;
  std::vector<std::vector<std::string>> alone(kCodecs), together(kCodecs);
  for (int c = 0; c < kCodecs; ++c) {
    ObjectCodec codec;
    for (int i = 0; i < kObjects; ++i) alone[c].push_back(codec.encode(workload(c * 1000 + i)));
  }
  std::vector<std::thread> threads;
  for (int c = 0; c < kCodecs; ++c)
    threads.emplace_back([&, c] {
      ObjectCodec codec;
      for (int i = 0; i < kObjects; ++i) together[c].push_back(codec.encode(workload(c * 1000 + i)));
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(together, alone);
}

}  // namespace
}  // namespace mka::kube
