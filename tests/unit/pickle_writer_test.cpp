// analyzer/export/pickle_writer.h read back by Python's own pickle (python3 on PATH): every value kind, the
// integer ranges each opcode covers, batches past 1000 items, the memo, a fragment embedded.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "pickle_writer.h"

namespace {

// What `python3` prints for the pickle in `bytes`: repr() of the loaded object.
std::string python_repr(const std::string& bytes) {
  char path[] = "/tmp/vt-pickle-test.XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  FILE* f = fdopen(fd, "wb");
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
  std::string cmd = std::string("python3 -c 'import pickle,sys; print(repr(pickle.load(open(sys.argv[1], \"rb\"))))' ") + path;
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
