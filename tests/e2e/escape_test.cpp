// Strings from a trace on a terminal: a crafted trace puts terminal escapes, C1 controls, a bidi
// override, invalid UTF-8 and a forged line into every string a trace carries (argv, exe, host,
// device name, thread name, Python file and function, module path, NVML process names, region
// name, the trace's own file name). Every text output must show them escaped, never raw; JSON
// keeps them JSON-escaped.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "../crafted_trace.h"
#include "harness.h"
#include "trace_format.h"

namespace {

e2e::Result cli(std::vector<std::string> args) {
  args.insert(args.begin(), e2e::cli());
  e2e::Spec s{args, {}};
  s.preload = false;
  s.timeout_s = 30;
  return e2e::run(s);
}

// OSC (retitle), CSI (clear), a C1 CSI (U+009B), a raw 0x9b byte, a right-to-left override,
// DEL, a BEL and a forged report line.
const std::string kEvil = "\x1b]0;pwned\x07\x1b[2J\xc2\x9b" "31m\x9b\xe2\x80\xae" "gnp.exe\x7f\nVERDICT: all fine";

// The bytes a terminal would act on: C0 controls but the newline, DEL, C1 as UTF-8, raw 0x80-0x9f
// outside UTF-8 sequences we keep, and the bidi overrides.
std::string raw_controls(const std::string& out) {
  std::string found;
  for (size_t i = 0; i < out.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(out[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) found += "C0/DEL@" + std::to_string(i) + " ";
    if (c == 0xc2 && i + 1 < out.size() && static_cast<unsigned char>(out[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(out[i + 1]) <= 0x9f)
      found += "C1@" + std::to_string(i) + " ";
    if (c == 0xe2 && out.compare(i, 3, "\xe2\x80\xae") == 0) found += "RLO@" + std::to_string(i) + " ";
    if (c == 0x9b) found += "0x9b@" + std::to_string(i) + " ";
  }
  return found;
}

std::string evil_trace(const std::string& dir) {
  crafted::CraftedTrace t;
  t.hostname = "host" + kEvil.substr(0, 20);
  t.process({"python" + kEvil, "train.py", kEvil}, "/usr/bin/" + kEvil);
  t.device(0, 16ull << 30, "GPU" + kEvil);
  t.thread(100, "worker" + kEvil, true);
  const uint64_t kLib = 0x7f0000000000;
  t.module(kLib, kLib, kLib + 0x100000, "/opt/" + kEvil + "/libevil.so");
  t.pycode(1, 11, 42, "/src/" + kEvil + ".py", "step" + kEvil);
  t.stack(1, {kLib + 0x1234, vt::format::python_frame(1, 0, true)});
  t.region(true, "region" + kEvil);
  t.alloc(0x10000000, 1ull << 30, 1);
  t.alloc(0x50000000, 1ull << 30, 1);
  t.alloc(0, 64ull << 30, 1, 0, 2 /* CUDA_ERROR_OUT_OF_MEMORY */, 1ull << 30, 16ull << 30);
  t.gpu_processes(0, {{77, 8ull << 30, "other" + kEvil}});
  t.free(0x10000000);
  t.region(false, "region" + kEvil);
  std::string path = dir + "/evil" + kEvil.substr(0, 12) + ".trace";
  t.write(path);
  return path;
}

}  // namespace

TEST_CASE("terminal escapes from a trace are shown escaped by every text output") {
  std::string dir = e2e::temp_dir();
  std::string trace = evil_trace(dir);
  std::string other = dir + "/other.trace";
  {
    crafted::CraftedTrace t;
    t.process({"other"}, "/bin/other");
    t.alloc(0x10000000, 1 << 20);
    t.write(other);
  }
  const std::vector<std::vector<std::string>> commands = {
      {"report", trace},
      {"report", trace, "--native"},
      {"report", dir},
      {"peak", trace},
      {"leaks", trace},
      {"oom", trace},
      {"frag", trace},
      {"diff", other, trace},
      {"diff", trace, other},
      {"check", trace, "--max-peak", "1MiB", "--max-leak", "1MiB", "--no-oom"},
      {"check", trace, "--baseline", other, "--max-site-growth", "1", "--max-peak-growth", "1"},
      {"export", trace, "--folded", "-"},
      {"export", trace, "--folded", "-", "--leaks"},
      {"export", trace, "--folded", "-", "--native"},
      {"dump", trace},
      {"info", trace},
      {"report", trace, "--format", "json"},
      {"export", "--perfetto", "-", trace},                // (its strings were raw C1 and bidi)
      {"report", trace, "--format", "html", "-o", "-"},    // (its <title> was raw argv)
  };
  for (const auto& c : commands) {
    e2e::Result r = cli(c);
    std::string what = c[0] + (c.size() > 2 ? " " + c[2] : "");
    INFO(what << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code <= 1);
    CHECK(raw_controls(r.out).empty());
    CHECK(raw_controls(r.err).empty());
    // A forged line never starts a line of its own.
    CHECK(r.out.find("\nVERDICT: all fine") == std::string::npos);
  }

  // The text says what was there, visibly.
  e2e::Result r = cli({"report", trace});
  CHECK(r.out.find("python\\x1b]0;pwned\\x07\\x1b[2J\\u009b31m\\x9b\\u202egnp.exe\\x7f\\nVERDICT: all fine") !=
        std::string::npos);
  CHECK(r.out.find("[py] step\\x1b]0;pwned") != std::string::npos);      // Python function
  CHECK(r.out.find("/src/\\x1b]0;pwned") != std::string::npos);          // Python file
  CHECK(cli({"report", trace, "--native"}).out.find("libevil.so+0x1234") != std::string::npos);  // module (base name)
  CHECK(r.out.find("pid 77 other\\x1b]0;pwned") != std::string::npos);   // NVML process name
  CHECK(r.out.find("GPU\\x1b]0;pwned") != std::string::npos);            // device name
  CHECK(r.out.find("region\\x1b]0;pwned") != std::string::npos);         // region name
  CHECK(r.out.find("on host\\x1b]0;pwned") != std::string::npos);        // host name

  // JSON keeps the exact strings (escaped as JSON).
  r = cli({"report", trace, "--format", "json"});
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["trace"]["argv"][0].get<std::string>().substr(0, 16) == ("python" + kEvil).substr(0, 16));
}

TEST_CASE("the escaping rule: controls, C1, bidi controls and invalid UTF-8 become visible escapes") {
  // Through `vramtrace info`'s error line: a missing file whose name carries the cases.
  std::string name = "/nonexistent/a\x1b[31mb\tc\xc2\x85" "d\xe2\x81\xa6" "e\xff" "f\xe2\x82" "g\xc3\xa9h\xf0\x9f\x98\x80";
  e2e::Result r = cli({"info", name});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "vramtrace: /nonexistent/a\\x1b[31mb\\tc\\u0085d\\u2066e\\xfff\\xe2\\x82g\xc3\xa9h\xf0\x9f\x98\x80: "
                 "cannot open: No such file or directory\n");
}
