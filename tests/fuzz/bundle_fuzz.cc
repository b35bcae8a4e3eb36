// libFuzzer target for Bundle::Parse, the reader of checkpoints and
// exported models. Input byte 0 bit 0 set: the rest's last 4 bytes are
// replaced by the right checksum first, so that the fuzzer gets past it to
// the entries; clear: the rest is parsed as it is. A parsed bundle must give
// each entry back through its getter, and serialize to exactly the bytes it
// was parsed from.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lib/data/crc32c.h"
#include "lib/data/little_endian.h"
#include "lib/runtime/checkpoint/bundle.h"

namespace {

using dtf::runtime::Bundle;
using dtf::runtime::BundleEntry;
using dtf::runtime::bundle_format::EntryType;

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "bundle_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) != 0 && bytes.size() >= 4) {
    const size_t body = bytes.size() - 4;
    dtf::little_endian::Store32(
        bytes.data() + body,
        dtf::crc32c::Mask(dtf::crc32c::Value(bytes.data(), body)));
  }
  auto bundle = Bundle::Parse(bytes, "fuzz.bundle");
  if (!bundle.ok()) {
    Check(dtf::Message(bundle.status()).rfind("fuzz.bundle: ", 0) == 0,
          "error does not name the bundle");
    return 0;
  }
  Check(bundle->Serialize() == bytes, "serializes to other bytes");
  for (const BundleEntry& e : bundle->entries()) {
    // Find gives the first entry of a name; a later one of the same name
    // is not reachable by name.
    if (bundle->Find(e.name) != &e) continue;
    switch (e.type) {
      case EntryType::kFloat32: {
        auto t = bundle->GetTensor(e.name);
        Check(t.ok() && t->shape() == e.shape &&
                  size_t(t->size()) * 4 == e.data.size(),
              "float32 entry does not read back as a tensor");
        auto f = bundle->GetFloats(e.name);
        Check(f.ok() && f->size() * 4 == e.data.size(),
              "float32 entry does not read back as floats");
        Check(!bundle->GetInt64s(e.name).ok(), "float32 read as int64");
        break;
      }
      case EntryType::kInt64: {
        auto v = bundle->GetInt64s(e.name);
        Check(v.ok() && v->size() * 8 == e.data.size(),
              "int64 entry does not read back");
        Check(!bundle->GetString(e.name).ok(), "int64 read as bytes");
        break;
      }
      case EntryType::kBytes: {
        auto s = bundle->GetString(e.name);
        Check(s.ok() && *s == e.data, "bytes entry does not read back");
        Check(!bundle->GetTensor(e.name).ok(), "bytes read as a tensor");
        break;
      }
    }
  }
  return 0;
}
