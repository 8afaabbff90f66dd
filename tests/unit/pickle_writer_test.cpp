// analyzer/export/pickle_writer.h read back by Python's own pickle (python3 on PATH): every value kind, the
// integer ranges each opcode covers, batches past 1000 items, the memo, a fragment embedded.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "pickle_writer.h"

namespace {

// What `python3` prints for the pickle in `bytes`: repr() of the loaded object, or with `script`
// another program of the file's path (sys.argv[1]).
std::string python_repr(const std::string& bytes,
                        const char* script = "import pickle,sys; print(repr(pickle.load(open(sys.argv[1], \"rb\"))))") {
  char path[] = "/tmp/vt-pickle-test.XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  FILE* f = fdopen(fd, "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  std::string cmd = std::string("python3 -c '") + script + "' " + path;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  unlink(path);
  REQUIRE(status == 0);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

TEST_CASE("pickle writer: Python reads every value kind and integer range back") {
  std::ostringstream out;
  vt::analyzer::PickleWriter w(out);
  w.begin_dict();
  w.string("ints");
  w.begin_list();
  for (int64_t v : {int64_t(0), int64_t(255), int64_t(256), int64_t(-1), int64_t(INT32_MIN), int64_t(INT32_MAX),
                    int64_t(INT32_MAX) + 1, int64_t(INT64_MIN), int64_t(INT64_MAX)})
    w.integer(v);
  w.unsigned_integer(UINT64_MAX);
  w.unsigned_integer(140622864318464ull);
  w.end();
  w.string("text");
  w.string("caf\xc3\xa9 <module> \"quoted\"");
  w.string("flags");
  w.begin_list();
  w.none();
  w.boolean(true);
  w.boolean(false);
  w.tuple_begin();
  w.integer(0);
  w.integer(7);
  w.tuple_end(2);
  w.end();
  w.end();
  REQUIRE(w.finish());
  CHECK(python_repr(out.str()) ==
        "{'ints': [0, 255, 256, -1, -2147483648, 2147483647, 2147483648, -9223372036854775808, 9223372036854775807, "
        "18446744073709551615, 140622864318464], 'text': 'caf\xc3\xa9 <module> \"quoted\"', 'flags': [None, True, False, (0, 7)]}");
}

TEST_CASE("pickle writer: lists and dicts past one batch of 1000, and a memo recalled") {
  std::ostringstream out;
  vt::analyzer::PickleWriter w(out);
  w.begin_dict();
  w.string("big");
  w.begin_list();
  for (int i = 0; i < 2500; ++i) w.integer(i);
  w.end();
  w.string("shared");
  w.begin_list();
  w.begin_list();
  w.string("frame");
  w.end(/*memo=*/0);
  for (int i = 0; i < 1500; ++i) w.recall(0);
  w.end();
  w.string("map");
  w.begin_dict();
  for (int i = 0; i < 1200; ++i) {
    w.string("k" + std::to_string(i));
    w.integer(i);
  }
  w.end();
  w.end();
  REQUIRE(w.finish());
  std::string check = python_repr(out.str());
  std::string want_big = "[";
  for (int i = 0; i < 2500; ++i) want_big += (i ? ", " : "") + std::to_string(i);
  want_big += "]";
  CHECK(check.find("'big': " + want_big) != std::string::npos);
  CHECK(check.find("'k1199': 1199}") != std::string::npos);
  size_t frames = 0;
  for (size_t at = 0; (at = check.find("['frame']", at)) != std::string::npos; ++at) ++frames;
  CHECK(frames == 1501);
}

TEST_CASE("pickle writer: a fragment written apart is one value of another pickle") {
  std::ostringstream part;
  {
    vt::analyzer::PickleWriter f(part, /*fragment=*/true);
    f.begin_list();
    for (int i = 0; i < 1001; ++i) f.integer(i % 3);
    f.end();
    f.flush_only();
  }
  std::ostringstream out;
  vt::analyzer::PickleWriter w(out);
  w.begin_list();
  w.string("before");
  REQUIRE(w.raw_value([&](std::ostream& o) {
    o << part.str();
    return true;
  }));
  w.string("after");
  w.end();
  REQUIRE(w.finish());
  std::string check = python_repr(out.str());
  CHECK(check.rfind("['before', [0, 1, 2, 0,", 0) == 0);
  CHECK(check.size() > 3000);
  CHECK(check.find("], 'after']") != std::string::npos);
}

TEST_CASE("pickle writer: bytes that are not UTF-8 (a file name from a trace) become U+FFFD, the pickle stays readable") {
  std::ostringstream out;
  vt::analyzer::PickleWriter w(out);
  w.begin_list();
  w.string(std::string("/src/\xff\xfe.py"));
  w.string(std::string("ok \xc3\xa9 \xed\xa0\x80 end"));  // a surrogate: invalid in UTF-8
  w.end();
  REQUIRE(w.finish());
  CHECK(python_repr(out.str()) == "['/src/\xef\xbf\xbd\xef\xbf\xbd.py', 'ok \xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end']");
}

// pytorch.org/memory_viz reads the pickle with an unpickler of its own (MemoryViz.js), which knows
// protocols 2 to 4 and a fixed set of opcodes (docs/torch-snapshot.md): every opcode the writer
// can emit, each value kind, the memo and batches included, must be one of them.
TEST_CASE("pickle writer: only opcodes memory_viz's own unpickler knows") {
  std::ostringstream out;
  vt::analyzer::PickleWriter w(out);
  w.begin_dict();
  w.string("values");
  w.begin_list();
  for (int64_t v : {int64_t(0), int64_t(300), int64_t(-5), int64_t(INT64_MAX)}) w.integer(v);
  w.unsigned_integer(UINT64_MAX);
  w.none();
  w.boolean(true);
  w.boolean(false);
  for (int n = 1; n <= 3; ++n) {
    w.tuple_begin();
    for (int i = 0; i < n; ++i) w.integer(i);
    w.tuple_end(n);
  }
  w.begin_dict();
  w.end(0);
  w.recall(0);
  for (int i = 0; i < 2500; ++i) w.string("x");
  w.end();
  w.end();
  REQUIRE(w.finish());
  const char* script =
      "import pickletools,sys; d=open(sys.argv[1],\"rb\").read(); "
      "ops=sorted({o.name for o,a,p in pickletools.genops(d)}); "
      "print(d[1], \" \".join(ops))";
  std::string got = python_repr(out.str(), script);
  // MemoryViz.js's unpickle(): the opcodes its switch handles.
  const std::set<std::string> known = {"PROTO", "FRAME", "STOP", "MARK", "MEMOIZE", "BINPUT", "LONG_BINPUT", "BINGET",
                                       "LONG_BINGET", "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS", "EMPTY_LIST", "LIST",
                                       "APPEND", "APPENDS", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE",
                                       "NEWTRUE", "NEWFALSE", "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT",
                                       "SHORT_BINUNICODE", "BINUNICODE"};
  std::istringstream in(got);
  int protocol = 0;
  in >> protocol;
  CHECK((protocol >= 2 && protocol <= 4));
  std::string op;
  int ops = 0;
  while (in >> op) {
    INFO(op);
    CHECK(known.count(op) == 1);
    ++ops;
  }
  CHECK(ops >= 14);  // every kind above was written (the set is not vacuous)
}
