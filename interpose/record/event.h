// One intercepted driver call, as the hook hands it to the recorder. Plain data, on the stack.
#pragma once

#include <cstdint>

#include "op_table.h"
#include "trace_format.h"

namespace vt {

// Event::device of a free, which reads no context: the trace keeps the thread's previous one.
inline constexpr int32_t kDeviceNotRead = -2;

struct Event {
  HookId op;              // set with set_op()
  uint8_t fields = 0;     // format::EventFlag bits for the optional fields set below
  uint8_t code = 0;       // kOps[op].code, and whether op is stream-ordered: set with op by
  bool stream_ordered = false;  // set_op()
  int32_t result = 0;     // CUresult
  uint64_t t_ns = 0;
  uint64_t context = 0;
  int32_t device = -1;    // ordinal of the context's device, -1 when unknown (kDeviceNotRead: not asked)
  uint64_t stream = 0;   // only meaningful for MemKind::Async ops
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t aux = 0;
  uint64_t aux2 = 0;
  uint64_t free_bytes = 0;   // device state at a failed call
  uint64_t total_bytes = 0;
  uint32_t stack = 0;        // stack id (0 = none), filled by the recorder
  uint64_t caller_ip = 0;    // return address into the program: stacks start there (not written)
  bool drop = false;         // describe() found nothing worth a record (a graph op that changed nothing)

  // The op, and what the encoder takes of it (constants where the op is: the hooks).
  void set_op(HookId id) {
    op = id;
    code = kOps[int(id)].code;
    stream_ordered = kOps[int(id)].kind == MemKind::Async;
  }
  void set_addr(uint64_t v) { addr = v; fields |= format::kEvAddr; }
  void set_size(uint64_t v) { size = v; fields |= format::kEvSize; }
  void set_aux(uint64_t v) { aux = v; fields |= format::kEvAux; }
  void set_aux2(uint64_t v) { aux2 = v; fields |= format::kEvAux2; }
  void set_stream(uint64_t v) { stream = v; }
};

// A hook's Event keeps its fields in registers only while its address is never taken (the
// compiler's alias analysis is per function, not per path): what a hook hands to an out-of-line
// function, on its rare paths, is a copy (docs/PERFORMANCE.md, "Cutting the hook's own work").
inline Event copy_of(const Event& e) { return e; }

}  // namespace vt
