// What an event's op-specific fields (aux, aux2) mean, per op, for presenting events. The
// recording side of this is interpose/describe.h; docs/trace-format.md has the same table.
#pragma once

#include "hook_list.h"

namespace vt::analyzer {

enum class AuxMeaning { None, Flags, Pool, Handle, Offset, Location, Context, Device };

struct AuxFields {
  AuxMeaning aux = AuxMeaning::None;
  AuxMeaning aux2 = AuxMeaning::None;
};

inline AuxFields aux_fields(HookId id) {
  switch (id) {
    case HookId::cuMemAllocManaged:
    case HookId::cuMemHostAlloc:
    case HookId::cuMemHostRegister_v2:
    case HookId::cuIpcOpenMemHandle_v2:
    case HookId::cuIpcOpenMemHandle: return {AuxMeaning::Flags, AuxMeaning::None};
    case HookId::cuMemAllocFromPoolAsync:
    case HookId::cuMemAllocFromPoolAsync_ptsz:
    case HookId::cuMemPoolDestroy:
    case HookId::cuMemPoolTrimTo: return {AuxMeaning::Pool, AuxMeaning::None};
    case HookId::cuMemPoolCreate: return {AuxMeaning::Pool, AuxMeaning::Location};
    case HookId::cuMemCreate: return {AuxMeaning::Handle, AuxMeaning::Location};
    case HookId::cuMemRelease: return {AuxMeaning::Handle, AuxMeaning::None};
    case HookId::cuMemMap: return {AuxMeaning::Handle, AuxMeaning::Offset};
    case HookId::cuCtxDestroy_v2: return {AuxMeaning::Context, AuxMeaning::None};
    case HookId::cuDevicePrimaryCtxReset_v2:
    case HookId::cuDevicePrimaryCtxReset:
    case HookId::cuDevicePrimaryCtxRelease:
    case HookId::cuDevicePrimaryCtxRelease_v2: return {AuxMeaning::Device, AuxMeaning::Context};
    default: return {};
  }
}

inline const char* aux_name(AuxMeaning m) {
  switch (m) {
    case AuxMeaning::Flags: return "flags";
    case AuxMeaning::Pool: return "pool";
    case AuxMeaning::Handle: return "handle";
    case AuxMeaning::Offset: return "offset";
    case AuxMeaning::Location: return "location";
    case AuxMeaning::Context: return "target_context";
    case AuxMeaning::Device: return "target_device";
    default: return "aux";
  }
}

// CUmemLocationType names, for aux values that hold a location (type << 32 | id).
inline const char* location_type_name(uint32_t t) {
  switch (t) {
    case 1: return "device";
    case 2: return "host";
    case 3: return "host_numa";
    case 4: return "host_numa_current";
    default: return "none";
  }
}

const char* kind_name(MemKind k);

}  // namespace vt::analyzer
