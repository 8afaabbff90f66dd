// The words for what an event's optional fields (address, size, aux, aux2) hold: the `fields`
// column of the op table (op_table.h) names one per field, and this table gives each its JSON
// key (`vramtrace dump`) and its words in docs/trace-format.md's op table.
#pragma once

#include <cstdint>

namespace vt {

// What one optional field of an event holds (the `fields` column of the list):
// X(name, json key, words in docs/trace-format.md). Several meanings share a JSON key: an
// event's JSON has one key per field, named for what it holds.
#define VT_FOR_EACH_FIELD_MEANING(X)                                                       \
  X(None, "", "")                                                                          \
  X(Ptr, "address", "ptr")                                                                 \
  X(Va, "address", "va")                                                                   \
  X(ArrayHandle, "address", "array handle")                                                \
  X(Bytes, "size", "bytes")                                                                \
  X(PitchBytes, "size", "pitch × height")                                                  \
  X(KeepBytes, "size", "min bytes to keep")                                                \
  X(PoolMaxBytes, "size", "maxSize (absent: no limit)")                                     \
  X(ArrayBytes, "size", "≈ width × height × bytes per texel (its format)")                           \
  X(Array3DBytes, "size", "≈ width × height × depth × bytes per texel (0: sparse, deferred mapping)")                 \
  X(ImportBytes, "size", "bytes (cuMemGetAddressRange)")                                   \
  X(Flags, "flags", "flags")                                                               \
  X(Pool, "pool", "pool")                                                                  \
  X(Handle, "handle", "handle")                                                            \
  X(Location, "location", "location")                                                      \
  X(Offset, "offset", "offset")                                                            \
  X(DestroyedContext, "target_context", "destroyed context")                               \
  X(Device, "target_device", "device")                                                     \
  X(ResetContext, "target_context", "primary context reset (0: none active)")              \
  X(ReleasedContext, "target_context", "the primary context if this release destroyed it, else 0") \
  X(Graph, "graph", "graph") \
  X(GraphExec, "graph_exec", "executable graph") \
  X(GraphReserved, "graph_pool_reserved", "graph pool reserved after it (absent: not read)") \
  X(GraphUsed, "graph_pool_used", "graph pool used after it") \
  X(NodeType, "node_type", "node type (CUgraphNodeType); a GRAPH node's has the ownership << 32 (1: moved in)") \
  X(NodeVa, "address", "va (a GRAPH node: the child graph)") \
  X(Stream, "stream", "stream") \
  X(CaptureMode, "capture_mode", "capture mode (CUstreamCaptureMode)") \
  X(Captured, "captured", "1: made while its stream captured a graph (a node's virtual address, no memory)") \
  X(HandleType, "handle_type", "shareable handle type (CUmemAllocationHandleType)") \
  X(RangeHandleType, "handle_type", "range handle type (CUmemRangeHandleType)") \
  X(Multicast, "multicast", "multicast object (a handle)") \
  X(McOffset, "multicast_offset", "offset in the multicast object") \
  X(TeamSize, "team_size", "devices in the team") \
  X(ExternalMemory, "external_memory", "external memory object") \
  X(ExternalType, "handle_type", "external handle type (CUexternalMemoryHandleType)") \
  X(MipmapBytes, "size", "≈ the levels' width × height × depth × bytes per texel") \
  X(Levels, "levels", "mipmap levels") \
  X(Count, "count", "entries") \
  X(CodeObject, "object", "the context, module or library it made or names (lazy loads: the library, else the kernel)") \
  X(FreeBefore, "free_before", "device free bytes before it (cuMemGetInfo; absent: not read)") \
  X(FreeAfter, "free_after", "device free bytes after it (absent: not read)") \
  X(LimitValue, "value", "limit value") \
  X(Limit, "limit", "limit (CUlimit)") \
  X(PoolAttrValue, "value", "attribute value (cuuint64_t; the reuse flags as int)") \
  X(PoolAttr, "attribute", "attribute (CUmemPool_attribute)")

enum class Field : uint8_t {
#define VT_FIELD_ID(name, json, doc) name,
  VT_FOR_EACH_FIELD_MEANING(VT_FIELD_ID)
#undef VT_FIELD_ID
};

struct FieldInfo {
  const char* json;  // key in `vramtrace dump` ("aux" / "aux2" when the op does not say)
  const char* doc;   // words in docs/trace-format.md
};
inline constexpr FieldInfo kFieldInfo[] = {
#define VT_FIELD_INFO(name, json, doc) {json, doc},
    VT_FOR_EACH_FIELD_MEANING(VT_FIELD_INFO)
#undef VT_FIELD_INFO
};
inline const FieldInfo& field_info(Field f) { return kFieldInfo[int(f)]; }

// A location word is type << 32 | id (interpose/entry/describe.h); a pool's location also says
// whether the pool makes managed memory (CU_MEM_ALLOCATION_TYPE_MANAGED, CUDA 13): this bit.
inline constexpr uint64_t kLocationManaged = 1ull << 56;
constexpr uint32_t location_type_of(uint64_t location) { return uint32_t(location >> 32) & 0xffffffu; }

// CUmemLocationType names, for fields that hold a location (location_type_of).
inline const char* location_type_name(uint32_t t) {
  switch (t) {
    case 1: return "device";
    case 2: return "host";
    case 3: return "host_numa";
    case 4: return "host_numa_current";
    default: return "none";
  }
}

}  // namespace vt
