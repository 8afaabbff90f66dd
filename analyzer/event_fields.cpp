// See event_fields.h.
#include "event_fields.h"

namespace vt::analyzer {

const char* kind_name(MemKind k) {
  switch (k) {
    case MemKind::Device: return "device";
    case MemKind::Managed: return "managed";
    case MemKind::PinnedHost: return "pinned_host";
    case MemKind::RegisteredHost: return "registered_host";
    case MemKind::Async: return "async";
    case MemKind::Pool: return "pool";
    case MemKind::VmmPhysical: return "vmm_physical";
    case MemKind::VmmMapping: return "vmm_mapping";
    case MemKind::VmmReservation: return "vmm_reservation";
    case MemKind::Array: return "array";
    case MemKind::IpcImport: return "ipc_import";
    case MemKind::Context: return "context";
    case MemKind::None: break;
  }
  return "none";
}

}  // namespace vt::analyzer
