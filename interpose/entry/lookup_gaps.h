// The lookup safety net: which memory-relevant driver entry points a process was handed that are
// not vramtrace's hooks (interpose/entry/memory_entry_points.txt classifies every CUDA 13 entry point),
// whether any lookup reached vramtrace at all, and which libraries were opened where no hook can
// reach them (RTLD_DEEPBIND, dlmopen into another namespace: dlopen_stub.S). Each is recorded once per name and trace
// (format/meta_records.h: LookupRecord); what was seen before the trace opened is written when it
// opens. Lock-free: a bit per table row, set with fetch_or; no allocation, no dladdr (the loader
// lock can be held by a thread waiting on the caller's own locks).
#pragma once

#include <cstdint>

namespace vt {

// After a successful lookup of `symbol` (cuGetProcAddress: the base name and its version/flags;
// dlsym(handle): the export, version 0) whose result `substituted` says whether vramtrace's hook
// was handed out. Safe on any thread, in a signal handler, before and after the trace opens.
void note_lookup(const char* symbol, bool substituted, int version, uint64_t flags);

// A dlopen with RTLD_DEEPBIND or a dlmopen outside the base namespace, before it runs: `file` as
// given, `mode` the dlopen mode. Each path once (the first 16 distinct paths; more are counted as
// one record naming none). Safe on any thread, before and after the trace opens; no allocation.
void note_isolated_open(const char* file, int mode, bool other_namespace);

// The LD_AUDIT module (audit_module.cpp) is loaded and hands RTLD_DEEPBIND libraries the hooks:
// their opens are then recorded as caught (not a dlmopen into another namespace: never caught).
void note_audit_attached();

// At trace open (and in a forked child's new trace): the records for what was seen so far.
void write_lookup_records(uint64_t t);

}  // namespace vt
