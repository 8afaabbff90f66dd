// The HTML report and folded stacks on hand-built reports: hostile trace strings (markup,
// quotes, comment openers, unicode, invalid UTF-8, huge names) never reach the page as markup,
// the embedded data is the report JSON (docs/report-schema.md) and parses back to the same
// strings, the page's data stays bounded with what was cut in `omitted`, and folded output
// keeps its format. Rendering in a browser: tests/html/browser_test.sh.
#include <algorithm>
#include <catch2/catch.hpp>
#include <regex>
#include <sstream>

#include "folded.h"
#include "report_html.h"
#include "report_render.h"

using namespace vt::analyzer;
using nlohmann::json;

namespace {

const std::string kScript = "</script><img src=x onerror=alert(1)>";
const std::string kQuotes = "\"'&<>";
const std::string kComment = "<!-- x --> <script>";
const std::string kUnicode = "Gr\xc3\xb6\xc3\x9f" "e_\xe6\xbc\xa2\xe5\xad\x97_\xf0\x9f\x94\xa5_\xe2\x80\xa8" "end";  // U+2028 inside
const std::string kInvalid = "bad\xff\xfe" "utf8";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}
size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

Frame frame(std::string fn, std::string file, int line, bool python = false) {
  Frame f;
  f.function = std::move(fn);
  f.file = std::move(file);
  f.line = line;
  f.module = python ? "python" : "/opt/" + kScript + "/libx.so";
  f.offset = 0x1a2b;
  f.python = python;
  return f;
}

SiteGroup group(uint64_t bytes, std::vector<Frame> stack, std::string kind = "device", int device = 0) {
  SiteGroup g;
  g.bytes = bytes;
  g.count = 3;
  g.share = 0.25;
  g.kind = std::move(kind);
  g.device = device;
  g.stack = std::move(stack);
  return g;
}

// A report whose every string field holds hostile text.
TraceReport hostile_report() {
  TraceReport r;
  r.path = "/tmp/" + kScript + ".trace";
  r.process.pid = 42;
  r.process.hostname = kQuotes + "host" + kComment;
  r.process.argv = {"python", kScript, kQuotes, kComment, kUnicode, kInvalid, std::string(20000, 'A')};
  r.process.exe = "/usr/bin/" + kScript;
  r.process.session = kComment;
  r.process.closed_cleanly = true;
  r.process.devices = {{0, 16ull << 30, "GPU " + kScript, kQuotes}};
  r.problems = {"torn tail " + kScript};
  r.events = 10;
  r.first_t_ns = 1000;
  r.last_t_ns = 9000;
  std::vector<Frame> stack = {frame("void kernel<" + kScript + ">(float*)", "/src/" + kQuotes + ".cu", 7),
                              frame(kUnicode, "train.py", 12, true), frame(kComment, "", 0),
                              frame(std::string(10000, 'x') + kScript, "/src/long.cpp", 1), frame(kInvalid, kInvalid, 3)};
  DevicePeak p;
  p.device = 0;
  p.bytes = 1000;
  p.t_ns = 5000;
  p.by_kind = {{"device", 1000}};
  p.live_set = {group(600, stack), group(300, {frame("other_site", "a.cpp", 1)})};
  r.peaks = {p};
  r.timeline = {{0, "device", {{1000, 100}, {5000, 1000}, {9000, 400}}}};
  r.end = "clean_exit";
  r.leak_bytes = 400;
  r.leak_count = 2;
  r.leaks = {group(400, stack)};
  GrowthSite gs;
  gs.site = group(400, stack);
  gs.growth_bytes = 300;
  gs.new_highs = 5;
  r.growth = {gs};
  OomReport o;
  o.t_ns = 8000;
  o.op = "cuMemAlloc_v2" + kScript;
  o.device = 0;
  o.requested_bytes = 1 << 20;
  o.device_total_bytes = 16ull << 30;
  o.stack = stack;
  o.top_holders = {group(600, stack)};
  o.verdict = "live_set_too_large" + kComment;
  o.causes = {{"live_set_too_large", 0.8, "summary " + kScript, {{"requested_bytes", 1 << 20}}}};
  o.remedies = {"remedy " + kQuotes + kScript};
  o.nvml = true;
  o.other_processes = {{7, "proc " + kScript, 100}};
  r.ooms = {o};
  r.fragmentation.pools = {{"pool" + kScript, 0, 10, 5, 5, 0}};
  RegionReport region;
  region.name = "test_" + kScript + kComment;
  region.t_begin = 2000;
  region.t_end = 6000;
  region.closed = true;
  region.peak_bytes = 1000;
  r.regions = {region};
  return r;
}

std::string embedded_json(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"vt-data\">";
  size_t a = html.find(open);
  REQUIRE(a != std::string::npos);
  a += open.size();
  size_t b = html.find("</script>", a);
  REQUIRE(b != std::string::npos);
  return html.substr(a, b - a);
}

std::string page_script(const std::string& html) {
  size_t a = html.find("<script nonce=");
  REQUIRE(a != std::string::npos);
  a = html.find('>', a) + 1;
  return html.substr(a, html.find("</script>", a) - a);
}

// Markup can come only from the page's template: exactly its two scripts, no comment, no
// <img>, no event handler attribute, and every hostile string absent in raw form.
void check_page(const std::string& html) {
  std::string l = lower(html);
  CHECK(count(l, "<script") == 2);
  CHECK(count(l, "</script") == 2);
  CHECK(count(l, "<!--") == 0);
  CHECK(count(l, "<img") == 0);
  CHECK(count(l, "</style") == 1);
  CHECK(html.find(kScript) == std::string::npos);
  CHECK(html.find(kQuotes) == std::string::npos);
  CHECK(html.find(kComment) == std::string::npos);
  // The data holds no markup characters at all: they are \u escapes.
  std::string data = embedded_json(html);
  CHECK(data.find('<') == std::string::npos);
  CHECK(data.find('>') == std::string::npos);
  CHECK(data.find('&') == std::string::npos);
  CHECK(data.find("\xe2\x80\xa8") == std::string::npos);  // U+2028 ends a line in older JS
  // The CSP nonce is the one the page's script carries; nothing else may run or load.
  std::smatch m;
  REQUIRE(std::regex_search(html, m, std::regex("script-src 'nonce-([A-Za-z0-9]+)'")));
  CHECK(html.find("<script nonce=\"" + m[1].str() + "\">") != std::string::npos);
  CHECK(html.find("default-src 'none'") != std::string::npos);
}

}  // namespace

TEST_CASE("html: hostile trace strings never reach the page as markup") {
  std::string html = report_html(hostile_report());
  check_page(html);
  // The title is escaped text.
  CHECK(html.find("<title>vramtrace: 42@&quot;&#39;&amp;&lt;&gt;host&lt;!-- x --&gt; &lt;script&gt; python "
                  "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
  // The page's script builds the DOM from text only.
  std::string js = page_script(html);
  for (const char* bad : {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"})
    CHECK(js.find(bad) == std::string::npos);
}

TEST_CASE("html: the embedded JSON is the report JSON, and parses back to the same strings") {
  TraceReport r = hostile_report();
  json d = json::parse(embedded_json(report_html(r)));
  // The documented schema (docs/report-schema.md), not one of the page's own. (.at() throws on a
  // missing key, so every path read here must exist.)
  CHECK(d.at("schema") == kReportSchema);
  const json& t = d.at("trace");
  CHECK(t.at("path") == r.path);
  const json& argv = t.at("argv");
  REQUIRE(argv.size() == r.process.argv.size());
  CHECK(argv.at(1) == kScript);
  CHECK(argv.at(2) == kQuotes);
  CHECK(argv.at(3) == kComment);
  CHECK(argv.at(4) == kUnicode);
  CHECK(argv.at(5) == "bad\xef\xbf\xbd\xef\xbf\xbdutf8");  // invalid bytes -> U+FFFD
  std::string huge = argv.at(6);
  CHECK(huge.size() <= kHtmlMaxString + 3);
  CHECK(huge.substr(huge.size() - 3) == "\xe2\x80\xa6");
  CHECK(t.at("hostname") == r.process.hostname);
  CHECK(d.at("ooms").at(0).at("op") == r.ooms[0].op);
  CHECK(d.at("ooms").at(0).at("other_processes").at(0).at("name") == "proc " + kScript);
  CHECK(d.at("regions").at(0).at("name") == r.regions[0].name);
  // Frames are the report's Frame objects, innermost first.
  const json& stack = d.at("peak").at("by_device").at(0).at("live_set").at(0).at("stack");
  REQUIRE(stack.size() == 5);
  CHECK(stack.at(0).at("function") == "void kernel<" + kScript + ">(float*)");
  CHECK(stack.at(0).at("file") == "/src/" + kQuotes + ".cu");
  CHECK(stack.at(1).at("function") == kUnicode);
  CHECK(stack.at(1).at("python") == true);
  CHECK(stack.at(2).at("function") == kComment);
  std::string long_fn = stack.at(3).at("function");
  CHECK(long_fn.size() <= kHtmlMaxString + 3);
  // Times are the report's (CLOCK_MONOTONIC ns, not shifted).
  CHECK(d.at("peak").at("by_device").at(0).at("t_ns") == 5000);
  CHECK(d.at("timeline").at(0).at("points").at(0).at(0) == 1000);
  CHECK(d.at("omitted").empty());  // nothing here reached a limit
  // The sections without strings to clean are the report JSON's as they are (the next test
  // compares a whole report).
  json want = report_json(r);
  for (const char* key : {"schema", "problems", "timeline", "regions", "phases", "kernels", "fragmentation"})
    CHECK(d.at(key) == want.at(key));
}

TEST_CASE("html: the data of a report with no limit reached is exactly the report JSON") {
  TraceReport r = hostile_report();
  // Plain strings only: nothing to clean, nothing to cut.
  r.path = "/tmp/t.trace";
  r.process.hostname = "host";
  r.process.argv = {"python", "train.py"};
  r.process.exe = "/usr/bin/python3";
  r.process.session = "s";
  r.process.devices = {{0, 16ull << 30, "GPU", "uuid"}};
  r.problems = {"torn tail"};
  std::vector<Frame> plain = {frame("alloc", "a.cpp", 1), frame("main", "train.py", 2, true)};
  for (Frame& f : plain) f.module = "/opt/libx.so";
  plain[1].module = "python";
  r.peaks[0].live_set = {group(600, plain)};
  r.leaks = {group(400, plain)};
  r.growth[0].site = group(400, plain);
  r.ooms[0].op = "cuMemAlloc_v2";
  r.ooms[0].stack = plain;
  r.ooms[0].top_holders = {group(600, plain)};
  r.ooms[0].verdict = "live_set_too_large";
  r.ooms[0].causes[0].summary = "summary";
  r.ooms[0].remedies = {"remedy"};
  r.ooms[0].other_processes = {{7, "proc", 100}};
  r.fragmentation.pools[0].pool = "0x1";
  r.regions[0].name = "test_a";
  json d = json::parse(embedded_json(report_html(r)));
  REQUIRE(d.contains("omitted"));
  CHECK(d.at("omitted").empty());
  d.erase("omitted");
  CHECK(d == report_json(r));
}

TEST_CASE("html: escaping helpers") {
  CHECK(html_escape(kQuotes) == "&quot;&#39;&amp;&lt;&gt;");
  CHECK(html_escape("a\xff") == "a\xef\xbf\xbd");
  json j = {{"s", kScript + kComment + kUnicode}};
  std::string safe = script_safe_json(j);
  CHECK(safe.find('<') == std::string::npos);
  CHECK(safe.find("\xe2\x80\xa8") == std::string::npos);
  CHECK(json::parse(safe) == j);
}

TEST_CASE("html: the page's data is bounded however large the report") {
  TraceReport r = hostile_report();
  DevicePeak& p = r.peaks[0];
  p.live_set.clear();
  p.bytes = 0;
  for (int i = 0; i < 1000; ++i) {
    std::vector<Frame> st;
    for (int k = 0; k < 64; ++k) st.push_back(frame("fn_" + std::to_string(i) + "_" + std::to_string(k), "f.cpp", k));
    p.live_set.push_back(group(1000 - i, st));
    p.bytes += 1000 - i;
  }
  r.ooms.assign(500, r.ooms[0]);
  for (size_t i = 0; i < r.ooms.size(); ++i) r.ooms[i].t_ns = 1000 + i;
  std::string html = report_html(r);
  CHECK(html.size() < 8u << 20);
  json d = json::parse(embedded_json(html));
  const json& omitted = d.at("omitted");
  const std::string at = "/peak/by_device/0/live_set";
  const json& list = d.at("peak").at("by_device").at(0).at("live_set");
  CHECK(list.size() == kHtmlMaxGroups);
  REQUIRE(omitted.contains(at));
  CHECK(omitted.at(at).at("entries") == 1000 - kHtmlMaxGroups);
  uint64_t sum = omitted.at(at).at("bytes"), count = omitted.at(at).at("count");
  for (const json& x : list) sum += x.at("bytes").get<uint64_t>(), count += x.at("count").get<uint64_t>();
  CHECK(sum == p.bytes);
  CHECK(count == 3 * 1000);
  CHECK(d.at("ooms").size() == kHtmlMaxOoms);
  // The first ones and the last: the failure the program ended with stays in the page.
  CHECK(d.at("ooms").at(kHtmlMaxOoms - 2).at("t_ns") == 1000 + kHtmlMaxOoms - 2);
  CHECK(d.at("ooms").back().at("t_ns") == 1000 + 499);
  CHECK(omitted.at("/ooms").at("entries") == 500 - kHtmlMaxOoms);
  CHECK(omitted.at("/ooms").at("verdicts").at(r.ooms[0].verdict) == 500 - kHtmlMaxOoms);
  CHECK(omitted.size() == 3);  // the live set twice (peak and by_device), the OOMs

  // A very deep stack keeps its innermost frames; omitted says how many outer ones were cut.
  TraceReport deep = hostile_report();
  std::vector<Frame> st;
  for (int k = 0; k < 300; ++k) st.push_back(frame("deep_" + std::to_string(k), "d.cpp", k));
  deep.leaks = {group(1, st)};
  json dd = json::parse(embedded_json(report_html(deep)));
  const json& s = dd.at("leaks").at("groups").at(0).at("stack");
  REQUIRE(s.size() == kHtmlMaxFrames);
  CHECK(s.at(0).at("function") == "deep_0");
  CHECK(s.at(kHtmlMaxFrames - 1).at("function") == "deep_" + std::to_string(kHtmlMaxFrames - 1));
  CHECK(dd.at("omitted").at("/leaks/groups/0/stack").at("entries") == 300 - kHtmlMaxFrames);
}

TEST_CASE("html: a job page has every rank and the details of the most important ones") {
  JobReport j;
  for (int i = 0; i < 70; ++i) {
    TraceReport t = hostile_report();
    t.process.rank = i;
    if (i != 3) t.ooms.clear();
    t.peaks[0].bytes = 1000 + i;
    RankRow row;
    row.rank = i;
    row.pid = 100 + i;
    row.host = kScript;
    row.path = t.path;
    row.peak_bytes = t.peaks[0].bytes;
    row.ooms = t.ooms.size();
    j.ranks.push_back(row);
    j.traces.push_back(t);
  }
  j.max_peak = 1069;
  std::string html = job_html(j);
  check_page(html);
  json d = json::parse(embedded_json(html));
  CHECK(d.at("schema") == kReportSchema);
  CHECK(d.at("job").at("traces") == 70);
  CHECK(d.at("ranks").size() == 70);
  const json& reports = d.at("reports");
  REQUIRE(reports.size() == 70);  // one per rank row, null where not embedded
  size_t embedded = 0;
  for (const json& rep : reports) embedded += !rep.is_null();
  CHECK(embedded == kHtmlMaxRankDetails);
  CHECK(reports.at(3).at("ooms").size() == 1);  // the OOM
  CHECK(reports.at(69).at("trace").at("rank") == 69);  // the highest peak
  CHECK(reports.at(0).is_null());                 // among the lowest peaks
  CHECK(d.at("ranks").at(5).at("host") == kScript);
  // Pointers in `omitted` name the report they belong to.
  for (const auto& [ptr, what] : d.at("omitted").items()) CHECK(ptr.rfind("/reports/", 0) == 0);
}

// The paths the page's script reads on an empty report must exist (.at() throws on a missing
// key; operator[] would make a null, and null is empty).
TEST_CASE("html: an empty report renders") {
  TraceReport r;
  json d = json::parse(embedded_json(report_html(r)));
  CHECK(d.at("peak").at("by_device").empty());
  CHECK(d.at("ooms").empty());
  CHECK(d.at("leaks").at("groups").empty());
  CHECK(d.at("timeline").empty());
  CHECK(d.at("omitted").empty());
  JobReport j;
  json jd = json::parse(embedded_json(job_html(j)));
  CHECK(jd.at("ranks").empty());
  CHECK(jd.at("reports").empty());
  CHECK(jd.at("problems").empty());
}

namespace {

// Every line: frames joined by ';', a space, a positive byte count. Returns the sum.
uint64_t check_folded(const std::string& text, std::vector<std::string>* stacks = nullptr) {
  std::istringstream in(text);
  std::string line;
  uint64_t sum = 0;
  while (std::getline(in, line)) {
    size_t sp = line.rfind(' ');
    REQUIRE(sp != std::string::npos);
    std::string bytes = line.substr(sp + 1), stack = line.substr(0, sp);
    REQUIRE(!bytes.empty());
    CHECK(bytes.find_first_not_of("0123456789") == std::string::npos);
    CHECK(std::stoull(bytes) > 0);
    CHECK(!stack.empty());
    CHECK(stack.find(";;") == std::string::npos);
    CHECK(stack.front() != ';');
    CHECK(stack.back() != ';');
    for (char c : stack) CHECK((static_cast<unsigned char>(c) >= 0x20 && c != 0x7f));
    sum += std::stoull(bytes);
    if (stacks) stacks->push_back(stack);
  }
  CHECK((text.empty() || text.back() == '\n'));
  return sum;
}

}  // namespace

TEST_CASE("folded: one line per stack, outermost first, bytes add up to the peak") {
  TraceReport r;
  DevicePeak p;
  p.device = 0;
  p.bytes = 1000;
  Frame inl = frame("inlined_helper", "h.h", 5);
  inl.inlined = true;
  Frame unknown;
  unknown.function = "??";
  unknown.module = "/usr/lib/libtorch_cuda.so";
  unknown.offset = 0xbeef;
  p.live_set = {group(600, {frame("alloc;weird\nname\tx", "/a;b.cpp", 3), inl, frame("step", "train.py", 9, true),
                            unknown, frame("main", "main.cpp", 1)}),
                group(300, {})};
  r.peaks = {p};
  std::vector<std::string> stacks;
  CHECK(check_folded(folded_peak(r, true), &stacks) == 1000);  // --native: every frame
  REQUIRE(stacks.size() == 3);
  CHECK(stacks[0] ==
        "main (main.cpp:1);?? (libtorch_cuda.so+0xbeef);py:step (train.py:9);inlined_helper (h.h:5)_[i];"
        "alloc:weird\\nname\\tx (/a:b.cpp:3)");  // the terminal rule: visible escapes, ';' -> ':'
  CHECK(stacks[1] == "[no stack recorded]");
  CHECK(stacks[2] == "[other sites]");
  // By default the user's frames: a stack with Python frames shows those.
  stacks.clear();
  CHECK(check_folded(folded_peak(r), &stacks) == 1000);
  CHECK(stacks[0] == "py:step (train.py:9)");

  // Two devices: each stack starts with its device.
  DevicePeak q = p;
  q.device = 1;
  r.peaks.push_back(q);
  stacks.clear();
  CHECK(check_folded(folded_peak(r, true), &stacks) == 2000);
  CHECK(stacks[0].rfind("[device 0];main (", 0) == 0);
  CHECK(stacks[3].rfind("[device 1];main (", 0) == 0);
}

TEST_CASE("folded: leaks add up to the leaked bytes, rooted by bucket when mixed") {
  TraceReport r;
  r.leaks = {group(500, {frame("a", "a.cpp", 1)}), group(200, {frame("b", "b.cpp", 2)}, "pinned_host", 0)};
  r.leak_bytes = 800;  // 100 beyond --top
  std::vector<std::string> stacks;
  CHECK(check_folded(folded_leaks(r), &stacks) == 800);
  REQUIRE(stacks.size() == 3);
  CHECK(stacks[0] == "[device 0];a (a.cpp:1)");
  CHECK(stacks[1] == "[pinned_host];b (b.cpp:2)");
  CHECK(stacks[2] == "[other sites]");
  r.leaks.pop_back();
  r.leak_bytes = 500;
  CHECK(folded_leaks(r) == "a (a.cpp:1) 500\n");
  CHECK(folded_leaks(TraceReport{}).empty());
}

TEST_CASE("folded: sites that differ only in folded frames are one line") {
  TraceReport r;
  Frame libc = frame("__libc_start_main", "", 0);
  libc.module = "/lib/x86_64-linux-gnu/libc.so.6";
  Frame ffi = frame("ffi_call", "", 0);
  ffi.module = "/lib/x86_64-linux-gnu/libffi.so.8";
  r.leaks = {group(500, {frame("fill", "a.cpp", 1), ffi, libc}), group(200, {frame("fill", "a.cpp", 1), libc})};
  r.leak_bytes = 700;
  CHECK(folded_leaks(r) == "fill (a.cpp:1) 700\n");
  std::vector<std::string> stacks;
  CHECK(check_folded(folded_leaks(r, true), &stacks) == 700);
  CHECK(stacks.size() == 2);
}
