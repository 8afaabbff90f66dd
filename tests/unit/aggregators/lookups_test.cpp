// The lookup aggregator: unhooked entry points once each with their category, the first lookup,
// and the "libcudart loaded but no lookup reached vramtrace" flag (format 1.1+ only).
#include <catch2/catch.hpp>

#include "aggregators/lookups.h"
#include "meta_records.h"
#include "records.h"
#include "report_render.h"

using namespace vt::analyzer;
using namespace synth_records;

namespace {

Record lookup(Records& rec, uint32_t kind, const std::string& symbol, uint32_t category, uint32_t version = 12000,
              uint64_t flags = 0) {
  std::vector<uint8_t> p(512);
  fmt::PayloadWriter w(p.data(), p.size());
  fmt::LookupRecord l;
  l.kind = kind;
  l.symbol = symbol;
  l.category = category;
  l.version = version;
  l.flags = flags;
  fmt::encode<fmt::LookupSchema>(w, l);
  p.resize(w.size());
  return rec.meta(fmt::kTagLookup, std::move(p));
}

StackStore with_module(const std::string& path) {
  StackStore s;
  ModuleInfo m;
  m.path = path;
  s.modules.push_back(m);
  return s;
}

}  // namespace

TEST_CASE("lookups aggregator: each unhooked entry point once, in the order handed out") {
  Records rec;
  LookupAggregator a;
  a.on_record(lookup(rec, fmt::kLookupReached, "cuGetProcAddress", 0));
  a.on_record(lookup(rec, fmt::kLookupGap, "cuMemAlloc", fmt::kLookupCategoryAllocation, 2000));
  a.on_record(lookup(rec, fmt::kLookupGap, "cuGraphAddMemAllocNode", fmt::kLookupCategoryGraph));
  a.on_record(lookup(rec, fmt::kLookupGap, "cuMemAlloc", fmt::kLookupCategoryAllocation));  // a fork's copy
  TraceReport rep;
  a.finish(StackStore{}, 1, &rep);
  const InterceptionReport& x = rep.interception;
  CHECK(x.lookups_reached);
  CHECK(x.first_lookup == "cuGetProcAddress");
  REQUIRE(x.unhooked.size() == 2);
  CHECK(x.unhooked[0].symbol == "cuMemAlloc");
  CHECK(x.unhooked[0].category == "allocation");
  CHECK(x.unhooked[0].version == 2000);
  CHECK(x.unhooked[1].category == "graph");
  CHECK(x.notable());
  CHECK_FALSE(x.cudart_unreached);
  nlohmann::json j = interception_json(x);
  CHECK(j.at("unhooked").size() == 2);
  CHECK(j.at("unhooked")[1].at("symbol") == "cuGraphAddMemAllocNode");
  // The report's header says it, naming the entry points.
  rep.interception = x;
  std::string text = report_text(rep);
  CHECK(text.find("2 memory entry points were handed out unhooked") != std::string::npos);
  CHECK(text.find("cuMemAlloc (allocation, CUDA 2.0)") != std::string::npos);
}

TEST_CASE("lookups aggregator: libcudart loaded and no lookup reached vramtrace is flagged, in 1.1 traces only") {
  Records rec;
  {
    LookupAggregator a;
    TraceReport rep;
    a.finish(with_module("/usr/local/cuda/lib64/libcudart.so.13.0.48"), 1, &rep);
    CHECK(rep.interception.cudart_loaded);
    CHECK(rep.interception.cudart_unreached);
    CHECK(rep.interception.notable());
    CHECK(report_text(rep).find("libcudart was loaded but no driver lookup reached vramtrace") != std::string::npos);
  }
  {
    LookupAggregator a;  // a 1.0 trace cannot say: its writer recorded no lookups at all
    TraceReport rep;
    a.finish(with_module("/usr/local/cuda/lib64/libcudart.so.13"), 0, &rep);
    CHECK_FALSE(rep.interception.cudart_unreached);
  }
  {
    LookupAggregator a;  // the lookups did reach us
    a.on_record(lookup(rec, fmt::kLookupReached, "cuGetProcAddress", 0));
    TraceReport rep;
    a.finish(with_module("libcudart.so.12"), 1, &rep);
    CHECK_FALSE(rep.interception.cudart_unreached);
    CHECK_FALSE(rep.interception.notable());
  }
  {
    LookupAggregator a;  // no cudart (the driver API only): nothing to say
    TraceReport rep;
    a.finish(with_module("/opt/app/libmycudart_helper.so"), 1, &rep);
    CHECK_FALSE(rep.interception.cudart_loaded);
  }
}

TEST_CASE("lookups aggregator: a damaged record is ignored") {
  Records rec;
  LookupAggregator a;
  a.on_record(rec.meta(fmt::kTagLookup, {2, 40, 'c'}));  // a string cut short
  TraceReport rep;
  a.finish(StackStore{}, 1, &rep);
  CHECK(rep.interception.unhooked.empty());
}

TEST_CASE("lookups aggregator: a library opened out of the hooks' reach is listed once per path and kind of open") {
  Records rec;
  LookupAggregator a;
  // An open: the path, 1 for another namespace, the dlopen mode, 1 when the LD_AUDIT module caught it.
  auto open = [&](const std::string& path, uint32_t other_namespace, uint64_t mode, uint32_t caught = 0) {
    return lookup(rec, fmt::kLookupIsolatedOpen, path, caught, other_namespace, mode);
  };
  a.on_record(open("libplugin.so", 0, 0xA));
  a.on_record(open("libplugin.so", 0, 0xA));  // written at open and again by the noting thread
  a.on_record(open("libplugin.so", 1, 0x2));  // the same path into another namespace
  a.on_record(open("/opt/x/libother.so", 0, 0x9, 1));  // the LD_AUDIT module handed it the hooks
  TraceReport rep;
  a.finish(StackStore{}, 1, &rep);
  const InterceptionReport& x = rep.interception;
  REQUIRE(x.isolated.size() == 3);
  CHECK(x.isolated[0].path == "libplugin.so");
  CHECK_FALSE(x.isolated[0].other_namespace);
  CHECK(x.isolated[1].other_namespace);
  CHECK(x.isolated[2].mode == 0x9);
  CHECK(x.isolated[2].caught);
  CHECK_FALSE(x.isolated[0].caught);
  CHECK(x.notable());
  CHECK_FALSE(x.lookups_reached);  // an open is not a lookup
  nlohmann::json j = interception_json(x);
  REQUIRE(j.at("isolated_libraries").size() == 3);
  CHECK(j["isolated_libraries"][0]["how"] == "RTLD_DEEPBIND");
  CHECK(j["isolated_libraries"][1]["how"] == "dlmopen namespace");
  CHECK(j["isolated_libraries"][2]["mode"] == 9);
  CHECK(j["isolated_libraries"][2]["caught"] == true);
  // A crafted trace naming any number of libraries keeps the first 64.
  LookupAggregator many;
  for (int i = 0; i < 1000; ++i) many.on_record(open("lib" + std::to_string(i) + ".so", 0, 8));
  TraceReport rep2;
  many.finish(StackStore{}, 1, &rep2);
  REQUIRE(rep2.interception.isolated.size() == 64);
  CHECK(rep2.interception.isolated[63].path == "lib63.so");
}
