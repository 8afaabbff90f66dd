// See whatif.h.
#include "whatif.h"

#include <algorithm>
#include <map>
#include <memory>

#include <absl/container/flat_hash_map.h>

#include "live_state.h"
#include "segment_watch.h"
#include "torch_records.h"
#include "user_frames.h"

namespace vt::analyzer {

namespace {

namespace fmt = format;

uint64_t process_device_bytes(const LiveState& live, int device) {
  return live.bytes(device, Bucket::Device) + live.code_bytes(device, CodeCategory::Context) +
         live.code_bytes(device, CodeCategory::Module);
}

// Pass 1: the device, the recorded figures, the settings, and the fixed memory of others.
struct Survey {
  std::map<int, uint64_t> peak_reserved, peak_allocated, blocks;
  std::map<int, uint64_t> totals;
  int oom_device = -1;
  TorchConfig config;
  bool config_seen = false;
  bool streams_known = false;  // the hook looked each block's stream up (its status record says so)
  struct Oom {
    TorchOom o;
    uint64_t t_ns = 0, process_bytes = 0;
  };
  std::vector<Oom> ooms;
  uint64_t context_bytes = 0;  // of the chosen device at the end (contexts and modules)
};

void survey(TraceReader& r, Survey* s, std::map<int, uint64_t>* context_by_device) {
  LiveState live;
  for (const DeviceInfo& d : r.process().devices) {
    live.set_device_total(d.ordinal, d.total_bytes);
    s->totals[d.ordinal] = d.total_bytes;
  }
  while (const Record* next = r.next()) {
    const Record& rec = *next;
    if (rec.tag == fmt::kTagDevice) {
      DeviceInfo d;
      if (decode_device_payload(rec.payload, rec.payload_len, &d)) {
        live.set_device_total(d.ordinal, d.total_bytes);
        if (!s->totals[d.ordinal]) s->totals[d.ordinal] = d.total_bytes;
      }
    }
    if (rec.is_event()) {
      live.apply(rec);
    } else if (is_torch_block(rec.tag)) {
      TorchBlock b;
      if (!decode_torch_block(rec, &b)) continue;
      s->peak_reserved[b.device] = std::max(s->peak_reserved[b.device], b.total_reserved);
      s->peak_allocated[b.device] = std::max(s->peak_allocated[b.device], b.total_allocated);
      if (b.size > 0) s->blocks[b.device]++;
    } else if (rec.tag == fmt::kTagTorchOom) {
      TorchOom o;
      if (!decode_torch_oom(rec, &o)) continue;
      if (s->oom_device < 0) s->oom_device = o.device;
      if (o.device_total && !s->totals[o.device]) s->totals[o.device] = o.device_total;
      s->ooms.push_back({o, rec.t_ns, process_device_bytes(live, o.device)});
    } else if (rec.tag == fmt::kTagTorchConfig && !s->config_seen) {
      s->config_seen = decode_torch_config(rec, &s->config);
    } else if (TorchStatus st; rec.tag == fmt::kTagTorchStatus && decode_torch_status(rec, &st) && st.on) {
      s->streams_known = st.message.find("; streams seen") != std::string::npos;
    }
  }
  for (const DeviceTotals& d : live.devices())
    (*context_by_device)[d.device] =
        live.code_bytes(d.device, CodeCategory::Context) + live.code_bytes(d.device, CodeCategory::Module);
}

// One setting's replay.
struct Run {
  WhatifResult result;
  std::unique_ptr<AllocatorModel> model;
  absl::flat_hash_map<uint64_t, uint64_t> handles;  // recorded block address -> model handle
  bool ended = false;
};

}  // namespace

std::vector<std::string> whatif_sweep_settings() {
  return {"expandable_segments:True",
          "max_split_size_mb:128",
          "max_split_size_mb:512",
          "roundup_power2_divisions:4",
          "expandable_segments:True,roundup_power2_divisions:4",
          "garbage_collection_threshold:0.8"};
}

bool run_whatif(const std::string& trace, const WhatifOptions& opt, WhatifReport* out, std::string* error) {
  out->trace = trace;
  std::unique_ptr<TraceReader> first = TraceReader::open(trace, error);
  if (!first) return false;
  Survey s;
  std::map<int, uint64_t> context_by_device;
  survey(*first, &s, &context_by_device);
  out->problems = first->problems();
  if (s.peak_reserved.empty()) {
    *error = trace + ": no PyTorch block records (the trace is not of PyTorch's caching allocator, or its block "
                     "layer was off): whatif replays PyTorch's allocator";
    return false;
  }
  int device = opt.device;
  if (device < 0) {
    device = s.oom_device;
    if (device < 0)
      for (auto& [d, peak] : s.peak_reserved)
        if (device < 0 || peak > s.peak_reserved[device]) device = d;
  } else if (!s.peak_reserved.count(device)) {
    *error = trace + ": device " + std::to_string(device) + " has no PyTorch blocks in this trace";
    return false;
  }
  WhatifRecorded& rec = out->recorded;
  rec.device = device;
  rec.device_total = opt.device_memory ? opt.device_memory : s.totals[device];
  if (!rec.device_total) {
    *error = trace + ": the trace does not say how much memory device " + std::to_string(device) +
             " has: give it with --device-memory";
    return false;
  }
  rec.peak_allocated = s.peak_allocated[device];
  rec.peak_reserved = s.peak_reserved[device];
  rec.alloc_conf = !s.config.cuda_alloc_conf.empty() ? s.config.cuda_alloc_conf : s.config.alloc_conf;
  // What the trace cannot follow moment by moment: the contexts and modules (as measured), and at
  // an OOM whatever cudaMemGetInfo's free leaves unexplained (other processes).
  uint64_t fixed = context_by_device[device];
  for (const Survey::Oom& o : s.ooms) {
    if (o.o.device != device || !o.o.device_free) continue;
    uint64_t used = s.totals[device] > o.o.device_free ? s.totals[device] - o.o.device_free : 0;
    uint64_t hidden = used > o.process_bytes ? used - o.process_bytes : 0;
    fixed = std::max(fixed, hidden + context_by_device[device]);
  }
  rec.fixed_others = fixed;

  AllocConf recorded_conf;
  std::string conf_error;
  if (!parse_alloc_conf(rec.alloc_conf, &recorded_conf, &conf_error)) {
    rec.conf_understood = false;
    rec.conf_problem = conf_error;
    recorded_conf = AllocConf{};
  }

  // Pass 2: every setting at once.
  std::unique_ptr<TraceReader> second = TraceReader::open(trace, error);
  if (!second) return false;
  uint64_t outside_now = 0;
  auto others = [&outside_now, fixed] { return outside_now + fixed; };
  std::vector<std::unique_ptr<Run>> runs;
  auto add_run = [&](const AllocConf& c) {
    auto r = std::make_unique<Run>();
    r->result.conf = c;
    r->model = make_allocator_model(c, rec.device_total, opt.memory_fraction, others);
    runs.push_back(std::move(r));
  };
  add_run(recorded_conf);
  for (const AllocConf& c : opt.settings) add_run(c);

  LiveState live;
  SegmentWatch watch;
  absl::flat_hash_map<uint64_t, uint32_t> live_blocks;  // recorded: address -> its stack (for frees' sake)
  std::vector<uint32_t> oom_stacks;
  std::vector<std::pair<Run*, uint32_t>> new_oom_stacks;
  while (const Record* next = second->next()) {
    const Record& r = *next;
    if (r.is_event()) {
      live.apply(r);
      // Every device's events: a VMM reservation or unmapping names no device, and
      // torch.cuda.empty_cache() empties every device's cache anyway.
      if (watch.on_event(r)) {
        rec.empty_caches++;
        for (auto& run : runs)
          if (!run->ended) run->model->empty_cache();
      }
      continue;
    }
    if (is_torch_block(r.tag)) {
      TorchBlock b;
      if (!decode_torch_block(r, &b) || b.device != device || b.size == 0) continue;
      // Outside PyTorch's cache now: the process's device memory less what PyTorch has reserved.
      uint64_t held = live.bytes(device, Bucket::Device);
      outside_now = held > b.total_reserved ? held - b.total_reserved : 0;
      rec.outside_peak = std::max(rec.outside_peak, outside_now);
      if (b.size > 0) {
        watch.on_block(b.addr, uint64_t(b.size));
        rec.blocks++;
        // The program's own request where the trace has it (a torch alloc record), else the block.
        const uint64_t request = b.requested ? b.requested : uint64_t(b.size);
        if (b.requested) rec.requests_known++;
        live_blocks[b.addr] = b.stack;
        for (auto& run : runs) {
          if (run->ended) continue;
          run->result.blocks++;
          uint64_t h = run->model->malloc(request, b.stream);
          if (!h) {
            run->ended = true;
            run->result.new_oom = true;
            run->result.first_new_oom = WhatifOom{r.t_ns, request, "", true, false};
            new_oom_stacks.push_back({run.get(), b.stack});
            continue;
          }
          run->handles[b.addr] = h;
        }
      } else {
        watch.on_block(b.addr, uint64_t(-b.size));
        auto lb = live_blocks.find(b.addr);
        if (lb == live_blocks.end()) {
          rec.unmatched_frees++;
          continue;
        }
        live_blocks.erase(lb);
        rec.frees++;
        for (auto& run : runs) {
          if (run->ended) continue;
          auto h = run->handles.find(b.addr);
          if (h == run->handles.end()) continue;
          run->model->free(h->second);
          run->handles.erase(h);
        }
      }
    } else if (r.tag == fmt::kTagTorchOom) {
      TorchOom o;
      if (!decode_torch_oom(r, &o) || o.device != device) continue;
      watch.on_block(0, 0);
      rec.ooms.push_back(WhatifOom{r.t_ns, uint64_t(o.size), "", true, false});
      oom_stacks.push_back(o.stack);
      for (auto& run : runs) {
        WhatifOom w{r.t_ns, uint64_t(o.size), "", true, run->ended};
        if (!run->ended) {
          uint64_t h = run->model->malloc(uint64_t(o.size));
          w.would_happen = h == 0;
          run->model->free(h);
        }
        run->result.ooms.push_back(w);
      }
    }
  }
  for (const std::string& p : second->problems())
    if (std::find(out->problems.begin(), out->problems.end(), p) == out->problems.end()) out->problems.push_back(p);

  // The user's lines, for the few stacks shown.
  Symbolizer sym(second->stacks(), opt.symbolizer);
  for (size_t i = 0; i < rec.ooms.size(); i++) {
    rec.ooms[i].where = user_line(sym.stack(oom_stacks[i]));
    for (auto& run : runs) run->result.ooms[i].where = rec.ooms[i].where;
  }
  for (auto& [run, stack] : new_oom_stacks) run->result.first_new_oom.where = user_line(sym.stack(stack));

  for (auto& run : runs) run->result.stats = run->model->stats();
  out->baseline = std::move(runs[0]->result);
  for (size_t i = 1; i < runs.size(); i++) out->results.push_back(std::move(runs[i]->result));

  if (rec.requests_known < rec.blocks)
    out->limits.push_back(
        std::to_string(rec.blocks - rec.requests_known) + " of the " + std::to_string(rec.blocks) + " requests " +
        (rec.blocks - rec.requests_known == 1 ? "is" : "are") +
        " the block size PyTorch recorded, not the size asked for (a block PyTorch did not split counts whole): the "
        "trace has the request only where the hook saw it (docs/trace-format.md, torch alloc)");
  if (!s.streams_known)
    out->limits.push_back(
        "one stream: the trace does not say on which stream each block was allocated (a vramtrace before trace "
        "format 1.6, or VRAMTRACE_TORCH_REQUESTS=0), so PyTorch's per-stream pools are modelled as one");
  for (const AllocConf& c : opt.settings)
    if (c.cuda_malloc_async) {
      out->limits.push_back(
          "backend:cudaMallocAsync is approximate: the driver's pool is modelled without fragmentation, reserving 2 MiB "
          "pages as its use grows and keeping them until empty_cache() or a failed allocation trims it (its allocator is "
          "not published)");
      break;
    }
  if (opt.memory_fraction <= 0)
    out->limits.push_back(
        "no per-process memory fraction (torch.cuda.set_per_process_memory_fraction is not in the trace; "
        "--memory-fraction sets one): without it garbage_collection_threshold does nothing, as in PyTorch");
  return true;
}

}  // namespace vt::analyzer
