// The reader on damaged input: torn tails, corrupt chunks, other versions, empty and random files.
// It must report, keep what is intact, and never crash or hang.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <random>

#include "trace_fixture.h"
#include "trace_reader.h"

using vt::analyzer::Record;
using vt::analyzer::TraceReader;
namespace fmt = vt::format;

namespace {

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_all(const std::string& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(data.data(), std::streamsize(data.size()));
}

struct Result {
  bool opened = false;
  std::string error;
  int events = 0;
  std::vector<std::string> problems;
  bool lost = false;
  bool closed_cleanly = false;  // after the whole stream
};

Result read(const std::string& p) {
  Result r;
  auto reader = TraceReader::open(p, &r.error);
  if (!reader) return r;
  r.opened = true;
  Record rec;
  while (reader->next(&rec))
    if (rec.is_event()) r.events++;
  r.problems = reader->problems();
  r.lost = reader->data_lost();
  r.closed_cleanly = reader->process().closed_cleanly;
  return r;
}

bool mentions(const std::vector<std::string>& v, const std::string& s) {
  for (const std::string& x : v)
    if (x.find(s) != std::string::npos) return true;
  return false;
}

const int kEvents = 30000;  // several chunks

std::string make_trace(const std::string& dir, bool clean) {
  std::string path = dir + (clean ? "/clean.trace" : "/torn.trace");
  fixture::write_trace(path, [] {
    for (int i = 0; i < kEvents; ++i) vt::record(fixture::make_event(i, 0));
  }, clean);
  return path;
}

}  // namespace

TEST_CASE("GIVEN a process that died without exit WHEN read THEN every event is there and the torn close is reported") {
  std::string dir = fixture::temp_dir();
  Result r = read(make_trace(dir, false));
  REQUIRE(r.opened);
  CHECK(r.events == kEvents);
  CHECK(mentions(r.problems, "without a clean close"));
  CHECK_FALSE(r.lost);
}

TEST_CASE("GIVEN damaged copies of a trace WHEN read THEN damage is reported and the rest is kept") {
  std::string dir = fixture::temp_dir();
  std::string good = read_all(make_trace(dir, true));
  REQUIRE(read(dir + "/clean.trace").events == kEvents);
  std::string p = dir + "/bad.trace";
  size_t chunk0 = fmt::kFileHeaderSize;

  SECTION("the intact trace is complete and closed cleanly") {
    Result r = read(dir + "/clean.trace");
    CHECK(r.closed_cleanly);
    CHECK_FALSE(r.lost);
    CHECK(r.problems.empty());
  }
  SECTION("truncated inside a chunk: the records before the cut are kept") {
    write_all(p, good.substr(0, chunk0 + 2 * fmt::kChunkSize));
    Result boundary = read(p);
    write_all(p, good.substr(0, chunk0 + 2 * fmt::kChunkSize + fmt::kChunkSize / 2));
    Result r = read(p);
    REQUIRE(r.opened);
    CHECK(r.events < kEvents);
    // Half of chunk 2's records (about 1500 events) are before the cut: they must be read.
    CHECK(r.events > boundary.events + 500);
    CHECK(mentions(r.problems, "the file ends inside chunk 2 (it was cut short): the records before the cut were kept"));
    CHECK(r.lost);
    CHECK_FALSE(r.closed_cleanly);
  }
  SECTION("cut at a chunk boundary: not closed cleanly, records lost") {
    write_all(p, good.substr(0, chunk0 + 2 * fmt::kChunkSize));
    Result r = read(p);
    REQUIRE(r.opened);
    CHECK(r.events > 0);
    CHECK(r.events < kEvents);
    CHECK(mentions(r.problems, "the trace was cut short"));
    CHECK(r.lost);
    CHECK_FALSE(r.closed_cleanly);
  }
  SECTION("cut inside the header: not closed cleanly, nothing read, damage reported") {
    write_all(p, good.substr(0, 4096));
    Result r = read(p);
    REQUIRE(r.opened);
    CHECK(r.events == 0);
    CHECK(mentions(r.problems, "cut inside its header"));
    CHECK(r.lost);
    CHECK_FALSE(r.closed_cleanly);
    write_all(p, good.substr(0, 100));  // not even the header's fields
    Result tiny = read(p);
    CHECK_FALSE(tiny.opened);
    CHECK(tiny.error.find("cut inside its header (100 bytes)") != std::string::npos);
  }
  SECTION("the end record lost with the header intact: not closed cleanly") {
    // Zero the whole chunk holding the end record (the last claimed one): the header still
    // says "closed cleanly" and counts the chunk, and the file keeps its length.
    std::string d = good;
    size_t last = 0;
    for (size_t off = chunk0; off + fmt::kChunkSize <= d.size(); off += fmt::kChunkSize) {
      uint32_t magic;
      memcpy(&magic, &d[off], 4);
      if (magic == fmt::kChunkMagic) last = off;
    }
    REQUIRE(last > chunk0);
    std::fill(d.begin() + long(last), d.begin() + long(last + fmt::kChunkSize), '\0');
    write_all(p, d);
    Result r = read(p);
    REQUIRE(r.opened);
    CHECK_FALSE(r.closed_cleanly);
    CHECK(r.lost);
    CHECK(mentions(r.problems, "end record is missing"));
  }
  SECTION("a chunk with a bad magic") {
    std::string d = good;
    d[chunk0 + fmt::kChunkSize] ^= 0x5a;
    write_all(p, d);
    Result r = read(p);
    REQUIRE(r.opened);
    CHECK(r.events < kEvents);
    CHECK(r.events > kEvents / 2);
    CHECK(mentions(r.problems, "chunk 1 is corrupt"));
  }
  SECTION("a record whose length runs past its chunk") {
    // The last record of chunk 1 claims 127 bytes, more than the chunk has left. (The first
    // record would not do: in a full chunk its 127 bytes can end on a record boundary by
    // chance, depending on how the records happen to fall.)
    std::string d = good;
    size_t body = chunk0 + fmt::kChunkSize + sizeof(fmt::ChunkHeader);
    fmt::ChunkHeader ch;
    memcpy(&ch, &d[chunk0 + fmt::kChunkSize], sizeof ch);
    size_t pos = body, last = body;
    while (pos < body + ch.used) {
      uint64_t len = 0;
      const uint8_t* q = reinterpret_cast<const uint8_t*>(&d[pos + 1]);
      const uint8_t* after = fmt::get_varint(q, q + 10, &len);
      if (!after) break;  // then pos falls short, below
      last = pos;
      pos = size_t(reinterpret_cast<const char*>(after) - d.data()) + len;
    }
    REQUIRE(pos == body + ch.used);
    REQUIRE(uint8_t(d[last + 1]) < 0x80);      // a one-byte length
    REQUIRE(body + ch.used - (last + 2) < 0x7f);  // 127 bytes run past the chunk
    d[last + 1] = char(0x7f);
    write_all(p, d);
    Result r = read(p);
    REQUIRE(r.opened);
    CHECK(r.lost);
    CHECK(mentions(r.problems, "damaged"));
  }
  SECTION("a newer major version is refused with a clear message") {
    std::string d = good;
    uint32_t major = 2;
    memcpy(&d[offsetof(fmt::FileHeader, version_major)], &major, 4);
    write_all(p, d);
    Result r = read(p);
    CHECK_FALSE(r.opened);
    CHECK(r.error.find("trace format 2." + std::to_string(fmt::kVersionMinor) + " is not readable") != std::string::npos);
  }
  SECTION("a newer minor version is read with a note") {
    std::string d = good;
    uint32_t minor = 9;
    memcpy(&d[offsetof(fmt::FileHeader, version_minor)], &minor, 4);
    write_all(p, d);
    Result r = read(p);
    REQUIRE(r.opened);
    CHECK(r.events == kEvents);
    CHECK(mentions(r.problems, "newer vramtrace"));
  }
  SECTION("empty, short and foreign files") {
    write_all(p, "");
    CHECK(read(p).error.find("empty file") != std::string::npos);
    write_all(p, "VRAM");
    CHECK(read(p).error.find("too short") != std::string::npos);
    write_all(p, std::string(200000, 'x'));
    CHECK(read(p).error.find("bad magic") != std::string::npos);
    CHECK(read(dir + "/does-not-exist").error.find("cannot open") != std::string::npos);
  }
  SECTION("random byte flips never crash the reader") {
    std::mt19937 rng(1234);
    for (int round = 0; round < 200; ++round) {
      std::string d = good;
      for (int k = 0; k < 20; ++k) {
        size_t at = rng() % (chunk0 + 4 * fmt::kChunkSize);
        if (at < 8) continue;  // keep the magic so the body gets read
        d[at] = char(rng());
      }
      write_all(p, d);
      Result r = read(p);
      CHECK(r.events <= kEvents * 2);
    }
  }
}
