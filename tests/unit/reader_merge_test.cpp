// The reader's merge of chunks into one stream: by time, ties to the earlier chunk, a chunk's
// own records in their order. Hand-made files with many equal times (threads' clocks collide)
// and chunks whose base time equals another chunk's record time: the cases the merge's shortcuts
// (the current cursor kept out of the heap while it is earlier than the rest) must get right.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "../crafted_trace.h"
#include "trace_fixture.h"
#include "trace_reader.h"

using vt::analyzer::Record;
using vt::analyzer::TraceReader;
namespace fmt = vt::format;

namespace {

constexpr uint32_t kChunk = 4096;

struct Rec {
  uint64_t t;
  uint32_t chunk, pos;  // where it was written: the order of ties
  uint32_t tid;
  uint64_t addr;
  bool meta;  // a region mark instead of an event
};

void put(std::string* s, uint64_t v) {
  uint8_t b[fmt::kMaxVarint];
  s->append(reinterpret_cast<char*>(b), size_t(fmt::put_varint(b, v) - b));
}

// One chunk: its header, then each record (an allocation event, or a region mark) as a delta
// from the one before.
std::string chunk_bytes(uint32_t index, uint32_t tid, uint64_t base, const std::vector<Rec>& recs) {
  std::string body;
  uint64_t last_t = base, last_addr = 0;
  for (const Rec& r : recs) {
    std::string p;
    put(&p, r.t - last_t);
    last_t = r.t;
    uint8_t tag;
    if (r.meta) {
      tag = fmt::kTagRegion;
      put(&p, fmt::kRegionBegin);
      put(&p, 1);
      p += 'r';
    } else {
      tag = 1;  // cuMemAlloc_v2
      p += char(fmt::kEvAddr | fmt::kEvSize);
      put(&p, fmt::zigzag(int64_t(r.addr - last_addr)));
      last_addr = r.addr;
      put(&p, 4096);
    }
    body += char(tag);
    put(&body, p.size());
    body += p;
  }
  REQUIRE(sizeof(fmt::ChunkHeader) + body.size() <= kChunk);
  fmt::ChunkHeader ch{};
  ch.magic = fmt::kChunkMagic;
  ch.used = uint32_t(body.size());
  ch.tid = tid;
  ch.index = index;
  ch.base_ns = base;
  std::string c(kChunk, '\0');
  memcpy(&c[0], &ch, sizeof ch);
  memcpy(&c[sizeof ch], body.data(), body.size());
  return c;
}

}  // namespace

TEST_CASE("records of many chunks come back by time, ties to the earlier chunk, each chunk in its own order") {
  std::string dir = fixture::temp_dir();
  std::mt19937_64 rng(43);
  for (int round = 0; round < 300; ++round) {
    INFO("round " << round);
    const uint32_t chunks = 1 + uint32_t(rng() % 6);
    std::vector<std::vector<Rec>> per(chunks);
    std::vector<uint64_t> base(chunks);
    std::vector<Rec> all;
    for (uint32_t c = 0; c < chunks; ++c) {
      // Times from a narrow range, so that chunks collide often; a base at or before the first
      // record, sometimes equal to a time another chunk has.
      uint64_t t = 1000 + rng() % 20;
      base[c] = t - rng() % 3;
      const uint32_t n = 1 + uint32_t(rng() % 40);
      for (uint32_t i = 0; i < n; ++i) {
        Rec r{t, c, i, 7000 + c, 0x10000 + (uint64_t(c) << 32) + uint64_t(i) * 4096, rng() % 11 == 0};
        per[c].push_back(r);
        all.push_back(r);
        t += rng() % 3;  // 0: a tie within the chunk too
      }
    }
    std::stable_sort(all.begin(), all.end(), [](const Rec& a, const Rec& b) {
      return std::tie(a.t, a.chunk, a.pos) < std::tie(b.t, b.chunk, b.pos);
    });

    crafted::CraftedTrace shape(kChunk);
    fmt::FileHeader h = shape.header();
    h.chunks_allocated = chunks;
    std::string file(kChunk, '\0');
    memcpy(&file[0], &h, sizeof h);
    for (uint32_t c = 0; c < chunks; ++c) file += chunk_bytes(c, 7000 + c, base[c], per[c]);
    const std::string path = dir + "/merge.trace";
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(file.data(), std::streamsize(file.size()));

    std::string err;
    auto reader = TraceReader::open(path, &err);
    REQUIRE(reader);
    size_t k = 0;
    while (const Record* r = reader->next()) {
      REQUIRE(k < all.size());
      const Rec& want = all[k++];
      INFO("record " << k - 1 << ": want t " << want.t << " chunk " << want.chunk << " pos " << want.pos);
      REQUIRE(r->t_ns == want.t);
      REQUIRE(r->tid == want.tid);
      REQUIRE(r->is_event() == !want.meta);
      if (!want.meta) REQUIRE(r->addr == want.addr);
      if (want.meta) REQUIRE(r->payload != nullptr);
      else REQUIRE(r->payload == nullptr);
    }
    CHECK(k == all.size());
  }
}
