// The recorder's encoding read back by the reader, field for field, across chunks and threads.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "trace_fixture.h"
#include "trace_reader.h"

using vt::analyzer::Record;
using vt::analyzer::TraceReader;
namespace fmt = vt::format;

static void check_same(const Record& r, const vt::Event& e) {
  INFO("t_ns " << e.t_ns);
  CHECK(r.op == &vt::kOps[int(e.op)]);
  CHECK(r.t_ns == e.t_ns);
  CHECK(r.result == e.result);
  CHECK(r.context == e.context);
  CHECK(r.device == e.device);
  CHECK(r.has(fmt::kEvAddr) == bool(e.fields & fmt::kEvAddr));
  if (e.fields & fmt::kEvAddr) CHECK(r.addr == e.addr);
  if (e.fields & fmt::kEvSize) CHECK(r.size == e.size);
  if (e.fields & fmt::kEvAux) CHECK(r.aux == e.aux);
  if (e.fields & fmt::kEvAux2) CHECK(r.aux2 == e.aux2);
  if (vt::kOps[int(e.op)].kind == vt::MemKind::Async) CHECK(r.stream == e.stream);
  if (e.result != 0) {
    CHECK(r.free_bytes == e.free_bytes);
    CHECK(r.total_bytes == e.total_bytes);
  }
}

TEST_CASE("events from two threads come back exactly, merged in time order") {
  std::string dir = fixture::temp_dir();
  std::string path = dir + "/rt.trace";
  const int kPerThread = 20000;  // several 64 KiB chunks per thread
  int st = fixture::write_trace(path, [] {
    auto lane = [](int l) {
      for (int i = 0; i < kPerThread; ++i) vt::record(fixture::make_event(i, l));
    };
    std::thread a(lane, 0), b(lane, 1);
    a.join();
    b.join();
  });
  REQUIRE(WIFEXITED(st));

  std::string err;
  auto reader = TraceReader::open(path, &err);
  REQUIRE(reader);
  CHECK(reader->process().closed_cleanly);
  CHECK(reader->process().pid > 0);
  CHECK_FALSE(reader->process().argv.empty());
  Record r;
  int n = 0;
  uint64_t last_t = 0;
  uint32_t tids[2] = {0, 0};
  while (reader->next(&r)) {
    if (!r.is_event()) continue;
    int i = n / 2, lane = n % 2;
    check_same(r, fixture::make_event(i, lane));
    CHECK(r.t_ns >= last_t);
    last_t = r.t_ns;
    if (!tids[lane]) tids[lane] = r.tid;
    CHECK(r.tid == tids[lane]);
    ++n;
  }
  CHECK(n == 2 * kPerThread);
  CHECK(tids[0] != tids[1]);
  CHECK(reader->problems().empty());
  CHECK_FALSE(reader->data_lost());
}

TEST_CASE("values of every varint length come back exactly in every field, up to a chunk's last byte") {
  // Every length from 1 to 10 bytes in each field (the reader has a one-byte fast path), the
  // record's last field included.
  std::vector<uint64_t> values;
  for (int bits = 0; bits <= 64; ++bits) {
    uint64_t v = bits == 64 ? ~0ull : (1ull << bits);
    values.push_back(v);
    values.push_back(v - 1);
  }
  auto make = [&values](int i) {
    vt::Event e;
    e.t_ns = 1000 + uint64_t(i);
    e.set_op(vt::HookId::cuMemMap);
    uint64_t v = values[size_t(i) % values.size()];
    e.set_addr(v ^ 0x5555);
    e.set_size(v);
    e.set_aux(values[size_t(i * 7 + 3) % values.size()]);
    e.set_aux2(values[size_t(i * 13 + 5) % values.size()]);
    return e;
  };
  const int kEvents = 12000;  // several chunks: some records end exactly at a chunk's end
  std::string path = fixture::temp_dir() + "/varints.trace";
  int st = fixture::write_trace(path, [&] {
    for (int i = 0; i < kEvents; ++i) vt::record(make(i));
  });
  REQUIRE(WIFEXITED(st));
  std::string err;
  auto reader = TraceReader::open(path, &err);
  REQUIRE(reader);
  Record r;
  int n = 0;
  while (reader->next(&r)) {
    if (!r.is_event()) continue;
    vt::Event e = make(n);
    INFO("event " << n);
    REQUIRE(r.addr == e.addr);
    REQUIRE(r.size == e.size);
    REQUIRE(r.aux == e.aux);
    REQUIRE(r.aux2 == e.aux2);
    ++n;
  }
  CHECK(n == kEvents);
  CHECK(reader->problems().empty());
}

// Resident file-backed pages of this process (statm's "shared"), in bytes.
static uint64_t resident_file_bytes() {
  FILE* f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0, shared = 0;
  int n = fscanf(f, "%lu %lu %lu", &size, &resident, &shared);
  fclose(f);
  return n == 3 ? uint64_t(shared) * uint64_t(sysconf(_SC_PAGESIZE)) : 0;
}

TEST_CASE("reading a trace keeps only the chunks in flight resident, not the file") {
  const int kEvents = 3000000;  // ~36 MiB of records
  std::string path = fixture::temp_dir() + "/big.trace";
  int st = fixture::write_trace(path, [] {
    for (int i = 0; i < kEvents; ++i) vt::record(fixture::make_event(i, 0));
  });
  REQUIRE(WIFEXITED(st));
  struct stat sb;
  REQUIRE(stat(path.c_str(), &sb) == 0);
  REQUIRE(sb.st_size > (32 << 20));
  std::string err;
  uint64_t base = resident_file_bytes(), most = 0;  // before open: its chunk scan counts too
  auto reader = TraceReader::open(path, &err);
  REQUIRE(reader);
  most = resident_file_bytes();
  int n = 0;
  while (const Record* r = reader->next()) {
    if (r->is_event() && ++n % 65536 == 0) most = std::max(most, resident_file_bytes());
  }
  CHECK(n == kEvents);
  INFO("file " << sb.st_size << " bytes, resident file pages grew by up to " << (most - std::min(most, base)));
  CHECK(most - std::min(most, base) < (8u << 20));  // a few 64 KiB chunks, not the file
}

TEST_CASE("a trace created 0600 and a symlink at the target is refused") {
  std::string dir = fixture::temp_dir();
  std::string path = dir + "/perm.trace";
  fixture::write_trace(path, [] { vt::record(fixture::make_event(0, 0)); });
  struct stat s;
  REQUIRE(stat(path.c_str(), &s) == 0);
  CHECK((s.st_mode & 0777) == 0600);

  std::string victim = dir + "/victim";
  FILE* f = fopen(victim.c_str(), "w");
  fputs("precious", f);
  fclose(f);
  std::string link = dir + "/link.trace";
  REQUIRE(symlink(victim.c_str(), link.c_str()) == 0);
  fixture::write_trace(link, [] { vt::record(fixture::make_event(0, 0)); });
  char buf[16] = {};
  f = fopen(victim.c_str(), "r");
  fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  CHECK(std::string(buf) == "precious");
}

// Six threads whose records interleave record by record, then at uneven rates: the merge's heap
// (five other cursors, its earliest replaced in place) gives them back in time order, each
// thread's in its own order, none lost.
TEST_CASE("events from six threads interleaving record by record come back in time order") {
  constexpr int kLanes = 6, kPerThread = 6000;
  for (bool uneven : {false, true}) {
    INFO("uneven " << uneven);
    std::string dir = fixture::temp_dir();
    std::string path = dir + "/six.trace";
    auto time_of = [uneven](int i, int lane) {
      return 1000000 + (uneven ? uint64_t(i) * uint64_t(lane + 1) * 3 : uint64_t(i) * kLanes) + uint64_t(lane);
    };
    int st = fixture::write_trace(path, [&time_of] {
      auto lane = [&time_of](int l) {
        for (int i = 0; i < kPerThread; ++i) {
          vt::Event e = fixture::make_event(i, l);
          e.t_ns = time_of(i, l);
          vt::record(e);
        }
      };
      std::vector<std::thread> threads;
      for (int l = 0; l < kLanes; ++l) threads.emplace_back(lane, l);
      for (std::thread& t : threads) t.join();
    });
    REQUIRE(WIFEXITED(st));
    std::string err;
    auto reader = TraceReader::open(path, &err);
    REQUIRE(reader);
    Record r;
    int n = 0;
    uint64_t last_t = 0;
    std::vector<int> next_i(kLanes, 0);
    bool in_order = true;
    while (reader->next(&r)) {
      if (!r.is_event()) continue;
      in_order = in_order && r.t_ns >= last_t;
      last_t = r.t_ns;
      // Its lane: by the time, whose next event it must be (two lanes may tie: either does).
      int lane = -1;
      for (int l = 0; l < kLanes && lane < 0; ++l)
        if (next_i[size_t(l)] < kPerThread && time_of(next_i[size_t(l)], l) == r.t_ns) lane = l;
      REQUIRE(lane >= 0);
      int& i = next_i[size_t(lane)];
      if (!uneven) {
        vt::Event want = fixture::make_event(i, lane);
        want.t_ns = time_of(i, lane);
        check_same(r, want);
      }
      ++i;
      ++n;
    }
    CHECK(in_order);
    CHECK(n == kLanes * kPerThread);
    for (int l = 0; l < kLanes; ++l) CHECK(next_i[size_t(l)] == kPerThread);
    CHECK(reader->problems().empty());
  }
}
