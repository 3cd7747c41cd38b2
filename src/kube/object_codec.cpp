#include "mka/kube/object_codec.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "mka/common/errors.h"

namespace mka::kube {
namespace {

// Raw deflate (no zlib header or checksum: the blob never leaves the process) with an 8 KiB
// window: room for a typical object as dictionary, and ~70 KiB of deflate state per stream
// (zlib: 2^(windowBits+2) + 2^(memLevel+9) bytes and its state) instead of the ~270 KiB of the
// default 32 KiB window.
constexpr int kWindowBits = 13;
constexpr int kRawWindowBits = -kWindowBits;
constexpr int kMemLevel = 6;
// A longer first object is used by its last window's worth only.
constexpr std::size_t kMaxDictionary = std::size_t{1} << kWindowBits;
// Level 6 (zlib's default): against their dictionary, blobs come out clearly smaller than at
// level 1, for little more time per encode.
constexpr int kLevel = 6;
// A blob starts with 4 bytes, little-endian: the dictionary generation in the top 2 bits, the
// CBOR length below them.
constexpr std::size_t kHeader = 4;
constexpr int kGenerationShift = 30;
static_assert(ObjectCodec::kGenerations <= 4, "a blob has 2 bits for its dictionary generation");
constexpr std::uint32_t kLengthMask = (std::uint32_t{1} << kGenerationShift) - 1;

std::uint32_t headerOf(std::string_view blob) {
  std::uint32_t header = 0;
  for (std::size_t i = 0; i < kHeader; ++i) header |= std::uint32_t{static_cast<unsigned char>(blob[i])} << (8 * i);
  return header;
}

[[noreturn]] void fail(const char* what, int rc) {
  throw Error(std::string("informer cache: zlib ") + what + " failed (" + std::to_string(rc) +
              "): the process is out of memory or the cache is corrupt; restart the adapter");
}

// UIDs. An object carries a few (metadata.uid, ownerReferences[].uid, Kueue's job-uid label),
// and they are random, so neither the dictionary nor the object itself can shorten them: deflate
// spends about 8 bits per hex digit on them, ~36 bytes a UID, a fifth of a typical blob. So the
// CBOR is rewritten before deflate: each text string that is a UUID in its canonical form (36
// characters, lowercase hex, dashes at 8-4-4-4-12) becomes its 16 bytes under CBOR tag 37
// ("binary UUID", RFC 9562 / IANA), and is written back as the same text after inflate.
// Anything else, an uppercase UUID included, stays as it was, so the round trip is exact.
//
// Written here because no packaged library rewrites CBOR items in a stream: nlohmann's CBOR
// writer cannot be told to tag strings, and its reader would turn the tag into a binary value.
// The walk is flat: nlohmann writes definite lengths only, so every item is a header followed,
// for strings only, by its bytes; containers' members are simply the items that follow.
constexpr std::uint8_t kUuidText = 0x78;  // text string, length in the next byte...
constexpr std::uint8_t kUuidTextLength = 36;
constexpr std::uint8_t kTag1Byte = 0xd8;  // tag, number in the next byte...
constexpr std::uint8_t kUuidTag = 37;
constexpr std::uint8_t kUuidBytes = 0x50;  // byte string of 16

[[noreturn]] void corrupt(const char* what) {
  throw Error(std::string("informer cache: a cached object is corrupt (") + what +
              "); restart the adapter, and report it if it happens again");
}

int hexValue(std::uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool dashAt(std::size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

// The 16 bytes of a canonical UUID text, or false.
bool uuidBytes(const std::uint8_t* text, std::uint8_t* out) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < kUuidTextLength;) {
    if (dashAt(i)) {
      if (text[i] != '-') return false;
      ++i;
      continue;
    }
    const int high = hexValue(text[i]);
    const int low = hexValue(text[i + 1]);
    if (high < 0 || low < 0) return false;
    out[n++] = static_cast<std::uint8_t>(high << 4 | low);
    i += 2;
  }
  return true;
}

void uuidText(const std::uint8_t* bytes, std::vector<std::uint8_t>& out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (std::size_t i = 0, n = 0; i < kUuidTextLength;) {
    if (dashAt(i)) {
      out.push_back('-');
      ++i;
      continue;
    }
    out.push_back(static_cast<std::uint8_t>(kDigits[bytes[n] >> 4]));
    out.push_back(static_cast<std::uint8_t>(kDigits[bytes[n] & 0xf]));
    ++n;
    i += 2;
  }
}

// One CBOR item header at data[at]: its major type, its argument, and where what follows starts.
struct Header {
  std::uint8_t major;
  std::uint64_t argument;
  std::size_t next;
};

Header headerAt(const std::uint8_t* data, std::size_t size, std::size_t at) {
  const std::uint8_t initial = data[at];
  Header header{static_cast<std::uint8_t>(initial >> 5), initial & 0x1fu, at + 1};
  if (header.argument < 24) return header;
  if (header.argument > 27) corrupt("indefinite or reserved CBOR length");
  const std::size_t bytes = std::size_t{1} << (header.argument - 24);
  if (header.next + bytes > size) corrupt("CBOR header past the end");
  header.argument = 0;
  for (std::size_t i = 0; i < bytes; ++i) header.argument = header.argument << 8 | data[header.next + i];
  header.next += bytes;
  return header;
}

// Text strings and byte strings carry their argument's worth of bytes after the header.
std::size_t endOf(const Header& header, std::size_t size) {
  if (header.major != 2 && header.major != 3) return header.next;
  if (header.argument > size - header.next) corrupt("CBOR string past the end");
  return header.next + static_cast<std::size_t>(header.argument);
}

// In place: the packed form is never longer.
void packUuids(std::vector<std::uint8_t>& cbor) {
  const std::size_t size = cbor.size();
  std::uint8_t* data = cbor.data();
  std::size_t read = 0;
  std::size_t write = 0;
  while (read < size) {
    const Header header = headerAt(data, size, read);
    const std::size_t end = endOf(header, size);
    std::uint8_t bytes[16];
    if (header.major == 3 && data[read] == kUuidText && header.argument == kUuidTextLength &&
        uuidBytes(data + header.next, bytes)) {
      data[write++] = kTag1Byte;
      data[write++] = kUuidTag;
      data[write++] = kUuidBytes;
      std::memcpy(data + write, bytes, sizeof bytes);
      write += sizeof bytes;
    } else {
      std::memmove(data + write, data + read, end - read);
      write += end - read;
    }
    read = end;
  }
  cbor.resize(write);
}

std::vector<std::uint8_t> unpackUuids(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> out;
  out.reserve(size + size / 2);
  std::size_t read = 0;
  while (read < size) {
    const Header header = headerAt(data, size, read);
    if (header.major == 6) {
      if (data[read] != kTag1Byte || header.argument != kUuidTag || header.next + 17 > size ||
          data[header.next] != kUuidBytes)
        corrupt("unexpected CBOR tag");
      out.push_back(kUuidText);
      out.push_back(kUuidTextLength);
      uuidText(data + header.next + 1, out);
      read = header.next + 17;
      continue;
    }
    const std::size_t end = endOf(header, size);
    out.insert(out.end(), data + read, data + end);
    read = end;
  }
  return out;
}

// zlib streams for one encode or decode at a time, shared by every codec in the process. A
// process has a codec per informer (about 20 in the adapter) and decodes on some 30 threads,
// but a stream is held only while it works on one blob, so a few serve them all: a deflate
// stream is ~70 KiB, an inflate stream ~15 KiB with its window. Streams are reset before each
// use, so which one a blob gets does not change the result.
struct Deflater {
  z_stream stream{};
  Deflater() {
    if (int rc = deflateInit2(&stream, kLevel, Z_DEFLATED, kRawWindowBits, kMemLevel, Z_DEFAULT_STRATEGY); rc != Z_OK)
      fail("deflateInit2", rc);
  }
  ~Deflater() { deflateEnd(&stream); }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
};

struct Inflater {
  z_stream stream{};
  Inflater() {
    if (int rc = inflateInit2(&stream, kRawWindowBits); rc != Z_OK) fail("inflateInit2", rc);
  }
  ~Inflater() { inflateEnd(&stream); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
};

template <typename Stream>
class StreamPool {
 public:
  // A stream for one blob, back in the pool when the lease ends.
  class Lease {
   public:
    Lease() : stream_(pool().take()) {}
    ~Lease() { pool().give(std::move(stream_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    z_stream& stream() { return stream_->stream; }

   private:
    std::unique_ptr<Stream> stream_;
  };

 private:
  static StreamPool& pool() {
    static StreamPool instance;
    return instance;
  }

  std::unique_ptr<Stream> take() {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        auto stream = std::move(idle_.back());
        idle_.pop_back();
        return stream;
      }
    }
    return std::make_unique<Stream>();
  }
  void give(std::unique_ptr<Stream> stream) {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(stream));
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<Stream>> idle_;
};

}  // namespace

ObjectCodec::ObjectCodec() = default;
ObjectCodec::~ObjectCodec() = default;

void ObjectCodec::retrain(const std::vector<std::uint8_t>& current) {
  std::string samples(reinterpret_cast<const char*>(largest_.data()), largest_.size());
  if (largest_ != current) samples.append(reinterpret_cast<const char*>(current.data()), current.size());
  // The last window's worth: deflate only reaches that far back, and the current object,
  // nearest to the data, gives the shortest distances.
  if (samples.size() > kMaxDictionary) samples.erase(0, samples.size() - kMaxDictionary);
  trainedOn_ = largest_.size();
  dictionaries_[generation_ + 1] = std::move(samples);
  ++generation_;
  if (generation_ + 1 == kGenerations) std::vector<std::uint8_t>().swap(largest_);
}

std::string ObjectCodec::encode(const nlohmann::json& object) {
  std::vector<std::uint8_t> cbor = nlohmann::json::to_cbor(object);
  packUuids(cbor);
  if (cbor.size() > kLengthMask)
    throw Error("informer cache: an object of " + std::to_string(cbor.size()) +
                " bytes is too large to cache (the limit is 1 GiB)");
  ++encodes_;
  if (encodes_ == 1) {
    const std::size_t from = cbor.size() > kMaxDictionary ? cbor.size() - kMaxDictionary : 0;
    dictionaries_[0].assign(reinterpret_cast<const char*>(cbor.data()) + from, cbor.size() - from);
    trainedOn_ = cbor.size();
  }
  if (generation_ + 1 < kGenerations) {
    if (cbor.size() > largest_.size()) largest_ = cbor;
    if (encodes_ == kRetrainAt || (encodes_ > kRetrainAt && 2 * cbor.size() > 3 * trainedOn_)) retrain(cbor);
  }
  const std::string& dictionary = dictionaries_[generation_];
  StreamPool<Deflater>::Lease deflater;
  z_stream& z = deflater.stream();
  if (int rc = deflateReset(&z); rc != Z_OK) fail("deflateReset", rc);
  if (int rc = deflateSetDictionary(&z, reinterpret_cast<const Bytef*>(dictionary.data()),
                                    static_cast<uInt>(dictionary.size()));
      rc != Z_OK)
    fail("deflateSetDictionary", rc);
  std::string blob(kHeader + deflateBound(&z, cbor.size()), '\0');
  const auto header =
      static_cast<std::uint32_t>(cbor.size()) | (static_cast<std::uint32_t>(generation_) << kGenerationShift);
  for (std::size_t i = 0; i < kHeader; ++i) blob[i] = static_cast<char>((header >> (8 * i)) & 0xff);
  z.next_in = cbor.data();
  z.avail_in = static_cast<uInt>(cbor.size());
  z.next_out = reinterpret_cast<Bytef*>(blob.data() + kHeader);
  z.avail_out = static_cast<uInt>(blob.size() - kHeader);
  if (int rc = deflate(&z, Z_FINISH); rc != Z_STREAM_END) fail("deflate", rc);
  blob.resize(kHeader + z.total_out);
  blob.shrink_to_fit();
  return blob;
}

nlohmann::json ObjectCodec::decode(std::string_view blob) const {
  if (blob.size() < kHeader) fail("inflate (short blob)", Z_DATA_ERROR);
  const std::uint32_t header = headerOf(blob);
  const std::uint32_t length = header & kLengthMask;
  const std::uint32_t generation = header >> kGenerationShift;
  if (generation >= dictionaries_.size()) fail("inflate (unknown dictionary)", Z_DATA_ERROR);
  const std::string& dictionary = dictionaries_[generation];
  StreamPool<Inflater>::Lease inflater;
  z_stream& z = inflater.stream();
  if (int rc = inflateReset(&z); rc != Z_OK) fail("inflateReset", rc);
  if (int rc = inflateSetDictionary(&z, reinterpret_cast<const Bytef*>(dictionary.data()),
                                    static_cast<uInt>(dictionary.size()));
      rc != Z_OK)
    fail("inflateSetDictionary", rc);
  std::vector<std::uint8_t> cbor(length);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(blob.data() + kHeader));
  z.avail_in = static_cast<uInt>(blob.size() - kHeader);
  z.next_out = cbor.data();
  z.avail_out = static_cast<uInt>(cbor.size());
  if (int rc = inflate(&z, Z_FINISH); rc != Z_STREAM_END || z.total_out != length) fail("inflate", rc);
  return nlohmann::json::from_cbor(unpackUuids(cbor.data(), cbor.size()));
}

bool ObjectCodec::sameObject(std::string_view a, std::string_view b) const {
  if (a.size() >= kHeader && b.size() >= kHeader &&
      (headerOf(a) >> kGenerationShift) == (headerOf(b) >> kGenerationShift))
    return a == b;
  return decode(a) == decode(b);
}

}  // namespace mka::kube
