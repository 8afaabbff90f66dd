// The record schemas (format/schema.h, meta_records.h, activity_records.h): every record survives
// encode + decode with every field distinct; a payload cut anywhere before its last field is
// refused; fields a newer writer appends are ignored; and the bytes are the ones
// docs/trace-format.md describes, checked against payloads written here field by field with the
// bare varint codec (so a reordered schema fails even though it would still round-trip).
#include <catch2/catch.hpp>

#include <deque>
#include <string>
#include <vector>

#include "activity_records.h"
#include "meta_records.h"
#include "op_table.h"
#include "record_json.h"

namespace fmt = vt::format;

namespace {

constexpr uint64_t kBase = 1'000'000'000'000ull;

// Gives field i a value of its own (strings: "field<i>"; times increase; durations > 0).
class Filler {
 public:
  template <fmt::Wire K, class T>
  void field(T& m, const char*, const char*) {
    uint64_t v = 100 + 37 * ++i_;
    if constexpr (K == fmt::Wire::Time) {
      m = last_ = kBase + v * 1000;
    } else if constexpr (K == fmt::Wire::Duration) {
      m = last_ + v;
    } else if constexpr (K == fmt::Wire::Triple) {
      for (int k = 0; k < 3; ++k) m[k] = uint32_t(v + k);
    } else if constexpr (K == fmt::Wire::Zigzag) {
      m = -T(v);
    } else if constexpr (fmt::kIsText<T>) {
      strings_.push_back("field" + std::to_string(i_) + (K == fmt::Wire::TextList ? std::string("\0b", 2) : ""));
      m = T(strings_.back());
    } else {
      m = T(v % 200);  // fits every member type (uint8_t kinds included)
    }
  }
  int fields() const { return i_; }

 private:
  int i_ = 0;
  uint64_t last_ = 0;
  std::deque<std::string> strings_;
};

// Checks every field against what Filler gave it.
class Checker {
 public:
  template <fmt::Wire K, class T>
  void field(const T& m, const char* key, const char*) {
    INFO("field " << key);
    T want{};
    filler_.field<K>(want, key, "");
    if constexpr (K == fmt::Wire::Triple) {
      for (int k = 0; k < 3; ++k) CHECK(m[k] == want[k]);
    } else {
      CHECK(m == want);
    }
  }

 private:
  Filler filler_;
};

// Whether a schema ends with the rest of the payload (no length to be cut short of).
struct HasRest {
  bool rest = false;
  template <fmt::Wire K, class T>
  void field(const T&, const char*, const char*) {
    rest = rest || K == fmt::Wire::Rest;
  }
};

template <class Schema, class R>
void round_trip() {
  INFO("record " << Schema::kName);
  R in{};
  Filler f;
  Schema::visit(in, f);
  uint8_t buf[4096];
  fmt::PayloadWriter w(buf, sizeof buf);
  fmt::encode<Schema>(w, in, kBase);
  REQUIRE(w.ok());

  R out{};
  REQUIRE(fmt::decode<Schema>(w.data(), w.size(), &out, kBase));
  Checker c;
  Schema::visit(out, c);

  HasRest rest;
  Schema::visit(in, rest);
  if (rest.rest) return;  // appended bytes would be part of the rest; nothing can be cut short
  // Appended fields (a newer minor version) are ignored.
  uint8_t longer[4200];
  memcpy(longer, w.data(), w.size());
  size_t n = w.size();
  n = size_t(fmt::put_varint(longer + n, 12345) - longer);
  R out2{};
  REQUIRE(fmt::decode<Schema>(longer, n, &out2, kBase));
  Checker c2;
  Schema::visit(out2, c2);

  // Cut anywhere before the end: refused.
  if (f.fields() > 0)
    for (size_t cut = 0; cut < w.size(); ++cut) {
      R partial{};
      INFO("cut at " << cut << " of " << w.size());
      CHECK_FALSE(fmt::decode<Schema>(w.data(), cut, &partial, kBase));
    }
}

}  // namespace

TEST_CASE("record schemas: every record survives encode and decode, field by field") {
  round_trip<fmt::ProcessSchema, fmt::ProcessRecord>();
  round_trip<fmt::DeviceSchema, fmt::DeviceRecord>();
  round_trip<fmt::EndSchema, fmt::EndRecord>();
  round_trip<fmt::NoteSchema, fmt::NoteRecord>();
  round_trip<fmt::StackSchema, fmt::StackRecord>();
  round_trip<fmt::StackFrameSchema, fmt::StackFrameRow>();
  round_trip<fmt::StackDeltaSchema, fmt::StackDeltaRecord>();
  round_trip<fmt::StackDeltaFrameSchema, fmt::StackDeltaFrameRow>();
  round_trip<fmt::ModuleSchema, fmt::ModuleRecord>();
  round_trip<fmt::PyCodeSchema, fmt::PyCodeRecord>();
  round_trip<fmt::ThreadSchema, fmt::ThreadRecord>();
  round_trip<fmt::ConfigSchema, fmt::ConfigRecord>();
  round_trip<fmt::GpuProcessesSchema, fmt::GpuProcessesRecord>();
  round_trip<fmt::GpuProcessSchema, fmt::GpuProcessRow>();
  round_trip<fmt::RegionSchema, fmt::RegionRecord>();
  round_trip<fmt::KernelSchema, fmt::KernelRecord>();
  round_trip<fmt::MemcpySchema, fmt::CopyRecord>();
  round_trip<fmt::MemsetSchema, fmt::CopyRecord>();
  round_trip<fmt::CuptiMemorySchema, fmt::CuptiMemoryRecord>();
  round_trip<fmt::PoolSchema, fmt::PoolRecord>();
  round_trip<fmt::NvtxSchema, fmt::NvtxRecord>();
  round_trip<fmt::NvtxSchema, fmt::NvtxRecordOf<std::string>>();
  round_trip<fmt::CuptiStatusSchema, fmt::CuptiStatusRecord>();
  round_trip<fmt::KernelNameSchema, fmt::KernelNameRecord>();
}

namespace {

// A payload written by hand, the way docs/trace-format.md describes it.
struct Bytes {
  std::vector<uint8_t> b;
  Bytes& v(uint64_t x) {
    uint8_t t[10];
    b.insert(b.end(), t, fmt::put_varint(t, x));
    return *this;
  }
  Bytes& z(int64_t x) { return v(fmt::zigzag(x)); }
  Bytes& s(const std::string& x) {
    v(x.size());
    b.insert(b.end(), x.begin(), x.end());
    return *this;
  }
};

template <class Schema, class R>
std::vector<uint8_t> encoded(const R& r, uint64_t base = 0) {
  uint8_t buf[1024];
  fmt::PayloadWriter w(buf, sizeof buf);
  fmt::encode<Schema>(w, r, base);
  return std::vector<uint8_t>(w.data(), w.data() + w.size());
}

}  // namespace

TEST_CASE("record schemas: the bytes are the documented ones") {
  std::string uuid(16, '\x5a');
  fmt::DeviceRecord d{3, 80ull << 30, "NVIDIA H200", uuid};
  CHECK(encoded<fmt::DeviceSchema>(d) == Bytes().v(3).v(80ull << 30).s("NVIDIA H200").s(uuid).b);

  std::string argv("python\0train.py", 15);
  fmt::ProcessRecord p{13000, argv, "/usr/bin/python3.12"};
  CHECK(encoded<fmt::ProcessSchema>(p) == Bytes().v(13000).s(argv).s("/usr/bin/python3.12").b);

  fmt::ModuleRecord m{0x7f00, 0x7f10, 0x7f90, "/lib/libc.so.6", "\x01\x02"};
  CHECK(encoded<fmt::ModuleSchema>(m) == Bytes().v(0x7f00).v(0x7f10).v(0x7f90).s("/lib/libc.so.6").s("\x01\x02").b);

  fmt::PyCodeRecord c{9, 12, 40, "train.py", "Model.forward", "\x80\x81"};
  CHECK(encoded<fmt::PyCodeSchema>(c) == Bytes().v(9).v(12).v(40).s("train.py").s("Model.forward").s("\x80\x81").b);

  fmt::NoteRecord n{"Python frames on: ok"};
  std::vector<uint8_t> raw(n.text.begin(), n.text.end());
  CHECK(encoded<fmt::NoteSchema>(n) == raw);  // no length: the payload is the text

  // Kernel: times relative to the trace start (zigzag), the duration after the start.
  fmt::KernelRecord k;
  k.name_id = 4, k.device = 1, k.context = 2, k.stream = 7, k.correlation = 99;
  k.start_ns = kBase - 500, k.end_ns = kBase + 1500;  // a kernel that started before the trace did
  k.grid[0] = 128, k.grid[1] = 2, k.grid[2] = 1, k.block[0] = 256, k.block[1] = 1, k.block[2] = 1;
  k.static_shared = 1024, k.dynamic_shared = 0, k.registers = 32, k.graph_id = 5;
  CHECK(encoded<fmt::KernelSchema>(k, kBase) ==
        Bytes().v(4).v(1).v(2).v(7).v(99).z(-500).v(2000).v(128).v(2).v(1).v(256).v(1).v(1).v(1024).v(0).v(32).v(5).b);

  fmt::CopyRecord set;
  set.value = 0xff, set.bytes = 4096, set.device = 0, set.context = 1, set.stream = 3, set.correlation = 8;
  set.start_ns = kBase + 10, set.end_ns = kBase + 30, set.flags = 1, set.memory_kind = 3, set.graph_id = 0;
  CHECK(encoded<fmt::MemsetSchema>(set, kBase) ==
        Bytes().v(0xff).v(4096).v(0).v(1).v(3).v(8).z(10).v(20).v(1).v(3).v(0).b);

  fmt::CuptiStatusRecord st{fmt::kCuptiDropped, fmt::kCuptiLostDropped, -3, "x"};
  CHECK(encoded<fmt::CuptiStatusSchema>(st) == Bytes().v(5).v(1).z(-3).s("x").b);
}

TEST_CASE("record schemas: a string longer than the room left is cut, a varint that does not fit is dropped") {
  uint8_t buf[8];
  fmt::PayloadWriter w(buf, sizeof buf);
  fmt::encode<fmt::RegionSchema>(w, fmt::RegionRecord{fmt::kRegionBegin, "a region name longer than eight bytes"});
  CHECK(w.ok());  // strings are cut, not failed
  fmt::RegionRecord r;
  REQUIRE(fmt::decode<fmt::RegionSchema>(w.data(), w.size(), &r));
  CHECK(r.kind == fmt::kRegionBegin);
  CHECK(r.name == "a regi");  // 8 bytes: the kind, the length, six bytes

  fmt::PayloadWriter tiny(buf, 2);
  fmt::encode<fmt::DeviceSchema>(tiny, fmt::DeviceRecord{1, 1ull << 40, "x", "y"});
  CHECK_FALSE(tiny.ok());
  fmt::DeviceRecord d;
  CHECK_FALSE(fmt::decode<fmt::DeviceSchema>(tiny.data(), tiny.size(), &d));
}

// A free's record carries no context of its own (the recorder asks for none): `dump` shows the
// context and device of the allocation it gives back.
TEST_CASE("dump gives a free its allocation's context and device, and unknown for one it never saw") {
  using vt::analyzer::Record;
  auto event = [](vt::HookId op, uint64_t addr, uint64_t context, int32_t device) {
    Record r;
    r.tag = vt::kOps[int(op)].code;
    r.op = &vt::kOps[int(op)];
    r.fields = vt::format::kEvAddr;
    r.addr = addr;
    r.context = context;
    r.device = device;
    return r;
  };
  vt::analyzer::FreedMemoryPlaces places;
  Record a = event(vt::HookId::cuMemAlloc_v2, 0x1000, 0xc1, 1);
  places.place(&a);
  CHECK(a.device == 1);  // an allocation keeps its own
  Record f = event(vt::HookId::cuMemFree_v2, 0x1000, 0xc0, 0);  // the thread's previous context
  places.place(&f);
  CHECK(f.context == 0xc1);
  CHECK(f.device == 1);
  Record again = event(vt::HookId::cuMemFree_v2, 0x1000, 0xc0, 0);  // freed already: unknown
  places.place(&again);
  CHECK(again.context == 0);
  CHECK(again.device == -1);
  Record failed = event(vt::HookId::cuMemAlloc_v2, 0x2000, 0xc1, 1);
  failed.result = 2;  // rule 1: a failed allocation places nothing
  places.place(&failed);
  Record f2 = event(vt::HookId::cuMemFree_v2, 0x2000, 0xc0, 0);
  places.place(&f2);
  CHECK(f2.device == -1);
}
