// Every PYTORCH_CUDA_ALLOC_CONF a remedy writes is one PyTorch accepts, parsed as PyTorch does
// (c10/cuda/CUDAAllocatorConfig.cpp: options split on ',', each "key:value"; unknown keys and bad
// values are errors, max_split_size_mb must be > 20), and max_split_size_mb is offered only with
// a value that can keep the fragmented segments whole. Over every verdict of both judges.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "oom_verdict.h"
#include "torch_verdict.h"

using namespace vt::analyzer;

namespace {

constexpr uint64_t MiB = 1ull << 20, GiB = 1ull << 30;

std::vector<std::string> split(const std::string& s, char by) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t end; (end = s.find(by, at)) != std::string::npos; at = end + 1) out.push_back(s.substr(at, end - at));
  out.push_back(s.substr(at));
  return out;
}

// "" when PyTorch (2.1 and later) accepts `conf`, else why not.
std::string pytorch_rejects(const std::string& conf) {
  for (const std::string& option : split(conf, ',')) {
    std::vector<std::string> kv = split(option, ':');
    if (kv.size() != 2 || kv[0].empty() || kv[1].empty()) return "not key:value: '" + option + "'";
    const std::string &key = kv[0], &value = kv[1];
    if (value.find_first_not_of("0123456789.") != std::string::npos && value != "True" && value != "False" &&
        value != "native" && value != "cudaMallocAsync")
      return "bad value '" + value + "'";
    if (key == "max_split_size_mb") {
      if (value.find_first_not_of("0123456789") != std::string::npos || std::stoull(value) <= 20)
        return "max_split_size_mb must be an integer > 20: " + value;
    } else if (key == "garbage_collection_threshold") {
      double v = std::stod(value);
      if (!(v > 0 && v < 1)) return "garbage_collection_threshold must be in (0, 1): " + value;
    } else if (key == "expandable_segments") {
      if (value != "True" && value != "False") return "expandable_segments: True or False, not " + value;
    } else if (key == "backend") {
      if (value != "native" && value != "cudaMallocAsync") return "backend: native or cudaMallocAsync, not " + value;
    } else if (key != "roundup_power2_divisions" && key != "max_non_split_rounding_mb" &&
               key != "release_lock_on_cudamalloc") {
      return "Unrecognized CachingAllocator option: " + key;
    }
  }
  return "";
}

// Every setting the remedies write, each between backquotes: `PYTORCH_CUDA_ALLOC_CONF=...`.
std::vector<std::string> settings(const OomReport& o) {
  std::vector<std::string> out;
  const std::string key = "PYTORCH_CUDA_ALLOC_CONF=";
  for (const std::string& m : o.remedies)
    for (size_t at = 0; (at = m.find(key, at)) != std::string::npos; at += key.size()) {
      INFO(m);
      REQUIRE(at > 0);
      CHECK(m[at - 1] == '`');  // quoted, so that no prose runs into the value
      size_t end = m.find('`', at);
      REQUIRE(end != std::string::npos);
      out.push_back(m.substr(at + key.size(), end - at - key.size()));
    }
  return out;
}

// A PyTorch OOM on a 2 GiB device: S requested, U reserved but unallocated, the segments of its view.
OomReport torch_oom(uint64_t S, uint64_t A, uint64_t R, uint64_t L, std::vector<TorchSegment> segments) {
  OomReport o;
  o.torch = true;
  TorchOomInfo& t = o.torch_info;
  t.device_total = o.device_total_bytes = 2 * GiB;
  t.device_free = o.device_free_bytes = 2 * GiB - R - 512 * MiB;
  t.allocated = A;
  t.reserved = R;
  t.block_size = t.tried_to_allocate = S;
  t.view.figures.largest_free_block = L;
  t.view.figures.inactive_split = R - A;
  t.view.segments = std::move(segments);
  o.process_device_bytes = R;
  o.not_attributable_bytes = 512 * MiB;
  o.code_bytes = o.context_bytes = 512 * MiB;
  o.contexts = 1;
  split_unattributed(o);
  return o;
}

TorchSegment segment(uint64_t size, uint64_t allocated, bool expandable = false) {
  TorchSegment g;
  g.size = size;
  g.allocated = allocated;
  g.blocks = allocated ? 1 : 0;
  g.expandable = expandable;
  return g;
}

std::vector<std::string> all_settings(OomReport& o) {
  judge_torch_oom(o);
  INFO(o.verdict);
  std::vector<std::string> s = settings(o);
  for (const std::string& conf : s) {
    INFO(conf);
    CHECK(pytorch_rejects(conf).empty());
  }
  return s;
}

}  // namespace

TEST_CASE("remedy settings: the parser rejects what PyTorch rejects") {
  CHECK(pytorch_rejects("max_split_size_mb:128,garbage_collection_threshold:0.8").empty());
  CHECK(pytorch_rejects("expandable_segments:True").empty());
  CHECK_FALSE(pytorch_rejects("max_split_size_mb:24; garbage_collection_threshold:0.8").empty());  // the old remedy
  CHECK_FALSE(pytorch_rejects("max_split_size_mb:20").empty());
  CHECK_FALSE(pytorch_rejects("expandable_segments:True:").empty());
}

TEST_CASE("remedy settings: PyTorch fragmentation in 20 MiB segments: expandable segments, never max_split_size_mb") {
  // Three 6 MiB tensors per 20 MiB segment, one of them kept: 1 GiB request, 14 MiB free in each.
  std::vector<TorchSegment> segs(8, segment(20 * MiB, 6 * MiB));
  OomReport o = torch_oom(1 * GiB, 400 * MiB, 1200 * MiB, 14 * MiB, segs);
  std::vector<std::string> s = all_settings(o);
  REQUIRE(o.verdict == "fragmentation");
  CHECK(s == std::vector<std::string>{"expandable_segments:True"});
  bool said = false;
  for (const std::string& m : o.remedies) said |= m.find("max_split_size_mb cannot help") != std::string::npos;
  CHECK(said);
}

TEST_CASE("remedy settings: fragmented large segments get a max_split_size_mb that keeps them whole") {
  // 256 MiB segments split by smaller tensors; a 200 MiB request: at most 200 (the request), and
  // the value PyTorch is given is above 20.
  std::vector<TorchSegment> segs(4, segment(256 * MiB, 100 * MiB));
  OomReport o = torch_oom(200 * MiB, 400 * MiB, 1024 * MiB, 156 * MiB, segs);
  std::vector<std::string> s = all_settings(o);
  REQUIRE(o.verdict == "fragmentation");
  CHECK(s == std::vector<std::string>{"expandable_segments:True", "max_split_size_mb:200"});

  // A small request (6 MiB, whose segment is 20 MiB) gets none: no value above 20 helps it.
  o = torch_oom(6 * MiB, 400 * MiB, 1024 * MiB, 4 * MiB, segs);
  s = all_settings(o);
  CHECK(s == std::vector<std::string>{"expandable_segments:True"});

  // Already expandable: not offered again.
  std::vector<TorchSegment> exp = {segment(1024 * MiB, 400 * MiB, true)};
  o = torch_oom(700 * MiB, 400 * MiB, 1024 * MiB, 300 * MiB, exp);
  s = all_settings(o);
  for (const std::string& conf : s) CHECK(conf.find("expandable_segments") == std::string::npos);
}

TEST_CASE("remedy settings: every other verdict, PyTorch's and the driver's, writes only valid settings") {
  for (uint64_t S : {3 * GiB, 600 * MiB, 64 * MiB}) {  // too big; live set; a small one
    OomReport o = torch_oom(S, 1200 * MiB, 1200 * MiB, 0, {segment(1200 * MiB, 1200 * MiB)});
    all_settings(o);
  }
  // The driver-level verdicts: fragmentation (pools) and the graph pool name PyTorch settings.
  OomReport d;
  d.device_total_bytes = 4 * GiB;
  d.device_free_bytes = 256 * MiB;
  d.requested_bytes = 1 * GiB;
  d.process_device_bytes = 2 * GiB;
  d.not_attributable_bytes = 1792 * MiB;
  for (int k = 0; k < 2; ++k) {
    d.pool_cached_bytes = k == 0 ? 1536 * MiB : 0;
    d.graph_pool_reserved_bytes = k == 1 ? 2 * GiB : 0;
    judge_oom(d);
    INFO(d.verdict);
    CHECK(d.verdict == (k == 0 ? "fragmentation" : "graph_pool"));
    std::vector<std::string> s = settings(d);
    CHECK_FALSE(s.empty());
    for (const std::string& conf : s) CHECK(pytorch_rejects(conf).empty());
  }
}
