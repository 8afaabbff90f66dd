// The one list of hooked driver functions, and what each one is on the wire. The exported
// wrappers (interpose/entry/hooks.cpp), the pointer substitution table, the trace's op codes, the
// reader's op names, the JSON field names of `vramtrace dump` and the op table of
// docs/trace-format.md (checked by tests/unit/doc_tables_test.cpp) all come from this list.
//
// VT_FOR_EACH_HOOK(X) calls X(code, name, action, kind, params, args, fields):
//   code    stable op code written to traces (never renumber; append new ones); 0 for a Query
//           row, which is never written (1..127 are all the event tags there are)
//   name    the exact exported driver symbol (the _v2 / _ptsz spelling)
//   action  Acquire: memory becomes live (timestamp after the call; failures carry free/total)
//           Release: memory goes away (timestamp before the call, so a reuse of the address by
//                    another thread always sorts after the release)
//           Lookup:  returns driver function pointers; the hook substitutes ours
//           Control: recorded, holds no memory (stream capture begins and ends)
//           Query:   forwarded and never recorded (the hook may learn from its answer)
//   kind    what the analyzer accounts the event as (MemKind below)
//   params / args  the exact parameter list (checked against cuda.h by the compiler) and the
//           forwarding argument list. They stay in this list, although only the hook side
//           expands them, so that adding a hooked function is one row: a second list of
//           signatures would have to be kept in the same order by hand. Users of the list that
//           do not need them never expand them, so this header needs cuda.h only where they are.
//   fields  (addr, size, aux, aux2): what each optional field of the event holds (op_fields.h);
//           interpose/entry/describe.h fills exactly these
//
// How to add a hooked function (the recipe, as compiler-rt writes its interceptors'):
//   1. A row below: the next free code (never reuse one; 0 for a Query), the export's exact name
//      (an #undef in cuda_export_names.h when cuda.h maps the name to a newer export), its action
//      and kind, its parameters as cuda.h declares them, and the event fields it fills.
//   2. interpose/entry/describe.h: a describe() overload filling exactly those fields (prepare() when an
//      argument must be read before the call; observe() when a call teaches the hook something
//      whether recorded or not; follow_*_call() only for a new kind's bookkeeping).
//   3. interpose/entry/memory_entry_points.txt: its category, when the symbol is not listed yet.
//   4. docs/trace-format.md's op table: the row tests/unit/doc_tables_test.cpp prints for it.
//   5. The simulated driver (tests/fakecuda/api_*.cpp, exports.map) implements it, and a program
//      of tests/programs calls it (lookup_direct calls every op once: the `ops` golden trace).
// Nothing else changes: the wrapper, its substitution, the op's code and name on the wire, the
// reader, dump's JSON and the lookup-gap table all come from this list. A new MemKind also needs
// its accounting rule (accounting.h) and its name (kind_name below).
#pragma once

#include <cstdint>

#include "op_fields.h"

#include "cuda_export_names.h"  // (each name in the list means its own export)

#define VT_FOR_EACH_HOOK(X)                                                                          \
  X(1, cuMemAlloc_v2, Acquire, Device, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize), (Ptr, Bytes, None, None)) \
  X(2, cuMemAllocPitch_v2, Acquire, Device,                                                         \
    (CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height,                       \
     unsigned int ElementSizeBytes),                                                                \
    (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes), (Ptr, PitchBytes, None, None))          \
  X(3, cuMemFree_v2, Release, Device, (CUdeviceptr dptr), (dptr), (Ptr, None, None, None))          \
  X(4, cuMemAllocManaged, Acquire, Managed, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags), \
    (dptr, bytesize, flags), (Ptr, Bytes, Flags, None))                                             \
  X(5, cuMemHostAlloc, Acquire, PinnedHost, (void** pp, size_t bytesize, unsigned int Flags),       \
    (pp, bytesize, Flags), (Ptr, Bytes, Flags, None))                                               \
  X(6, cuMemAllocHost_v2, Acquire, PinnedHost, (void** pp, size_t bytesize), (pp, bytesize), (Ptr, Bytes, None, None)) \
  X(7, cuMemFreeHost, Release, PinnedHost, (void* p), (p), (Ptr, None, None, None))                 \
  X(8, cuMemHostRegister_v2, Acquire, RegisteredHost, (void* p, size_t bytesize, unsigned int Flags), \
    (p, bytesize, Flags), (Ptr, Bytes, Flags, None))                                                \
  X(9, cuMemHostUnregister, Release, RegisteredHost, (void* p), (p), (Ptr, None, None, None))       \
  X(10, cuMemAllocAsync, Acquire, Async, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),   \
    (dptr, bytesize, hStream), (Ptr, Bytes, None, Captured))                                            \
  X(11, cuMemAllocAsync_ptsz, Acquire, Async,                                                       \
    (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream), (Ptr, Bytes, None, Captured)) \
  X(12, cuMemFreeAsync, Release, Async, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream), (Ptr, None, None, Captured)) \
  X(13, cuMemFreeAsync_ptsz, Release, Async, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream), (Ptr, None, None, Captured)) \
  X(14, cuMemAllocFromPoolAsync, Acquire, Async,                                                    \
    (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                     \
    (dptr, bytesize, pool, hStream), (Ptr, Bytes, Pool, Captured))                                      \
  X(15, cuMemAllocFromPoolAsync_ptsz, Acquire, Async,                                               \
    (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                     \
    (dptr, bytesize, pool, hStream), (Ptr, Bytes, Pool, Captured))                                      \
  X(16, cuMemPoolCreate, Acquire, Pool, (CUmemoryPool * pool, const CUmemPoolProps* poolProps),     \
    (pool, poolProps), (None, PoolMaxBytes, Pool, Location))                                        \
  X(17, cuMemPoolDestroy, Release, Pool, (CUmemoryPool pool), (pool), (None, None, Pool, None))     \
  X(18, cuMemPoolTrimTo, Release, Pool, (CUmemoryPool pool, size_t minBytesToKeep),                 \
    (pool, minBytesToKeep), (None, KeepBytes, Pool, None))                                          \
  X(19, cuMemCreate, Acquire, VmmPhysical,                                                          \
    (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp* prop,           \
     unsigned long long flags),                                                                     \
    (handle, size, prop, flags), (None, Bytes, Handle, Location))                                   \
  X(20, cuMemRelease, Release, VmmPhysical, (CUmemGenericAllocationHandle handle), (handle), (None, None, Handle, None)) \
  X(21, cuMemMap, Acquire, VmmMapping,                                                              \
    (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,              \
     unsigned long long flags),                                                                     \
    (ptr, size, offset, handle, flags), (Va, Bytes, Handle, Offset))                                \
  X(22, cuMemUnmap, Release, VmmMapping, (CUdeviceptr ptr, size_t size), (ptr, size), (Va, Bytes, None, None)) \
  X(23, cuMemAddressReserve, Acquire, VmmReservation,                                               \
    (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags), \
    (ptr, size, alignment, addr, flags), (Va, Bytes, None, None))                                   \
  X(24, cuMemAddressFree, Release, VmmReservation, (CUdeviceptr ptr, size_t size), (ptr, size), (Va, Bytes, None, None)) \
  X(25, cuArrayCreate_v2, Acquire, Array,                                                           \
    (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray), (pHandle, pAllocateArray), (ArrayHandle, ArrayBytes, None, None)) \
  X(26, cuArray3DCreate_v2, Acquire, Array,                                                         \
    (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray), (pHandle, pAllocateArray), (ArrayHandle, Array3DBytes, None, None)) \
  X(27, cuArrayDestroy, Release, Array, (CUarray hArray), (hArray), (ArrayHandle, None, None, None)) \
  X(28, cuIpcOpenMemHandle_v2, Acquire, IpcImport,                                                  \
    (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags), (pdptr, handle, Flags), (Ptr, ImportBytes, Flags, None)) \
  X(29, cuIpcCloseMemHandle, Release, IpcImport, (CUdeviceptr dptr), (dptr), (Ptr, None, None, None)) \
  X(30, cuCtxDestroy_v2, Release, Context, (CUcontext ctx), (ctx), (None, None, DestroyedContext, None)) \
  X(31, cuDevicePrimaryCtxReset_v2, Release, Context, (CUdevice dev), (dev), (None, None, Device, ResetContext)) \
  X(32, cuGetProcAddress, Lookup, None,                                                            \
    (const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags),                           \
    (symbol, pfn, cudaVersion, flags), (None, None, None, None))                                   \
  X(33, cuGetProcAddress_v2, Lookup, None,                                                         \
    (const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,                            \
     CUdriverProcAddressQueryResult* symbolStatus),                                                \
    (symbol, pfn, cudaVersion, flags, symbolStatus), (None, None, None, None))                 \
  /* Older exports cudart still asks for by version (cuDevicePrimaryCtx* at 7000, IPC at 4010). */ \
  X(34, cuDevicePrimaryCtxReset, Release, Context, (CUdevice dev), (dev), (None, None, Device, ResetContext)) \
  X(35, cuIpcOpenMemHandle, Acquire, IpcImport,                                                   \
    (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags), (pdptr, handle, Flags), (Ptr, ImportBytes, Flags, None)) \
  X(36, cuDevicePrimaryCtxRelease, Release, Context, (CUdevice dev), (dev), (None, None, Device, ReleasedContext)) \
  X(37, cuDevicePrimaryCtxRelease_v2, Release, Context, (CUdevice dev), (dev), (None, None, Device, ReleasedContext)) \
  /* CUDA graphs: memory nodes hold a virtual address and no memory (graph_node); the driver's */ \
  /* graph pool gets its memory at upload/launch with no API call: those ops carry a sample of */ \
  /* it (graph_pool). Capture and query ops hold no memory (graph). */                         \
  X(38, cuGraphAddMemAllocNode, Acquire, GraphNode,                                                 \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies, size_t numDependencies, \
     CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams),                                                       \
    (phGraphNode, hGraph, dependencies, numDependencies, nodeParams), (Va, Bytes, Graph, Location)) \
  X(39, cuGraphAddMemFreeNode, Release, GraphNode,                                                  \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies, size_t numDependencies, \
     CUdeviceptr dptr),                                                                             \
    (phGraphNode, hGraph, dependencies, numDependencies, dptr), (Va, None, Graph, None))            \
  X(40, cuGraphAddNode, Acquire, GraphNode,                                                         \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies, size_t numDependencies, \
     CUgraphNodeParams* nodeParams),                                                                \
    (phGraphNode, hGraph, dependencies, numDependencies, nodeParams), (NodeVa, Bytes, Graph, NodeType)) \
  X(41, cuGraphAddNode_v2, Acquire, GraphNode,                                                      \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,                    \
     const CUgraphEdgeData* dependencyData, size_t numDependencies, CUgraphNodeParams* nodeParams), \
    (phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams),               \
    (NodeVa, Bytes, Graph, NodeType))                                                                   \
  X(42, cuGraphInstantiate, Acquire, GraphPool,                                                     \
    (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer, size_t bufferSize), \
    (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize), (GraphExec, GraphReserved, GraphUsed, Graph)) \
  X(43, cuGraphInstantiate_v2, Acquire, GraphPool,                                                  \
    (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer, size_t bufferSize), \
    (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize), (GraphExec, GraphReserved, GraphUsed, Graph)) \
  X(44, cuGraphInstantiateWithFlags, Acquire, GraphPool,                                            \
    (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags), (phGraphExec, hGraph, flags), \
    (GraphExec, GraphReserved, GraphUsed, Graph))                                                   \
  X(45, cuGraphInstantiateWithParams, Acquire, GraphPool,                                           \
    (CUgraphExec * phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams),  \
    (phGraphExec, hGraph, instantiateParams), (GraphExec, GraphReserved, GraphUsed, Graph))         \
  X(46, cuGraphInstantiateWithParams_ptsz, Acquire, GraphPool,                                      \
    (CUgraphExec * phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams),  \
    (phGraphExec, hGraph, instantiateParams), (GraphExec, GraphReserved, GraphUsed, Graph))         \
  X(47, cuGraphUpload, Acquire, GraphPool, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream), \
    (GraphExec, GraphReserved, GraphUsed, Stream))                                                  \
  X(48, cuGraphUpload_ptsz, Acquire, GraphPool, (CUgraphExec hGraphExec, CUstream hStream),         \
    (hGraphExec, hStream), (GraphExec, GraphReserved, GraphUsed, Stream))                           \
  X(49, cuGraphLaunch, Acquire, GraphPool, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream), \
    (GraphExec, GraphReserved, GraphUsed, Stream))                                                  \
  X(50, cuGraphLaunch_ptsz, Acquire, GraphPool, (CUgraphExec hGraphExec, CUstream hStream),         \
    (hGraphExec, hStream), (GraphExec, GraphReserved, GraphUsed, Stream))                           \
  X(51, cuGraphExecDestroy, Release, GraphPool, (CUgraphExec hGraphExec), (hGraphExec),             \
    (GraphExec, GraphReserved, GraphUsed, None))                                                    \
  X(52, cuGraphDestroy, Release, GraphPool, (CUgraph hGraph), (hGraph), (Graph, GraphReserved, GraphUsed, None)) \
  X(53, cuDeviceGraphMemTrim, Release, GraphPool, (CUdevice device), (device),                      \
    (None, GraphReserved, GraphUsed, Device))                                                       \
  X(54, cuDeviceGetGraphMemAttribute, Query, Graph, (CUdevice device, CUgraphMem_attribute attr, void* value), \
    (device, attr, value), (None, None, None, None))                                                \
  X(55, cuDeviceSetGraphMemAttribute, Query, Graph, (CUdevice device, CUgraphMem_attribute attr, void* value), \
    (device, attr, value), (None, None, None, None))                                                \
  X(56, cuStreamBeginCapture, Control, Graph, (CUstream hStream), (hStream), (Stream, None, None, None)) \
  X(57, cuStreamBeginCapture_ptsz, Control, Graph, (CUstream hStream), (hStream), (Stream, None, None, None)) \
  X(58, cuStreamBeginCapture_v2, Control, Graph, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode), \
    (Stream, None, CaptureMode, None))                                                              \
  X(59, cuStreamBeginCapture_v2_ptsz, Control, Graph, (CUstream hStream, CUstreamCaptureMode mode), \
    (hStream, mode), (Stream, None, CaptureMode, None))                                             \
  X(60, cuStreamBeginCaptureToGraph, Control, Graph,                                                \
    (CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies, const CUgraphEdgeData* dependencyData, \
     size_t numDependencies, CUstreamCaptureMode mode),                                             \
    (hStream, hGraph, dependencies, dependencyData, numDependencies, mode), (Stream, None, CaptureMode, Graph)) \
  X(61, cuStreamBeginCaptureToGraph_ptsz, Control, Graph,                                           \
    (CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies, const CUgraphEdgeData* dependencyData, \
     size_t numDependencies, CUstreamCaptureMode mode),                                             \
    (hStream, hGraph, dependencies, dependencyData, numDependencies, mode), (Stream, None, CaptureMode, Graph)) \
  X(62, cuStreamEndCapture, Control, Graph, (CUstream hStream, CUgraph* phGraph), (hStream, phGraph), \
    (Stream, None, Graph, None))                                                                    \
  X(63, cuStreamEndCapture_ptsz, Control, Graph, (CUstream hStream, CUgraph* phGraph), (hStream, phGraph), \
    (Stream, None, Graph, None))                                                                    \
  X(64, cuStreamIsCapturing, Query, Graph, (CUstream hStream, CUstreamCaptureStatus* captureStatus), \
    (hStream, captureStatus), (None, None, None, None))                                             \
  X(65, cuStreamIsCapturing_ptsz, Query, Graph, (CUstream hStream, CUstreamCaptureStatus* captureStatus), \
    (hStream, captureStatus), (None, None, None, None))                                             \
  /* Sharing (format/accounting.h, rules 10 to 13). An imported VMM handle is another process's */ \
  /* memory (vmm_import); a retain adds a reference to a handle; exports and pool imports hold no */ \
  /* memory (sharing). */                                                                         \
  X(66, cuMemImportFromShareableHandle, Acquire, VmmImport,                                         \
    (CUmemGenericAllocationHandle * handle, void* osHandle, CUmemAllocationHandleType shHandleType), \
    (handle, osHandle, shHandleType), (None, None, Handle, Location))                               \
  X(67, cuMemRetainAllocationHandle, Acquire, VmmPhysical, (CUmemGenericAllocationHandle * handle, void* addr), \
    (handle, addr), (Va, None, Handle, None))                                                       \
  X(68, cuMemExportToShareableHandle, Control, Sharing,                                             \
    (void* shareableHandle, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType handleType, \
     unsigned long long flags),                                                                     \
    (shareableHandle, handle, handleType, flags), (None, None, Handle, HandleType))                 \
  X(69, cuIpcGetMemHandle, Control, Sharing, (CUipcMemHandle * pHandle, CUdeviceptr dptr), (pHandle, dptr), \
    (Ptr, None, None, None))                                                                        \
  X(70, cuMemGetHandleForAddressRange, Control, Sharing,                                            \
    (void* handle, CUdeviceptr dptr, size_t size, CUmemRangeHandleType handleType, unsigned long long flags), \
    (handle, dptr, size, handleType, flags), (Ptr, Bytes, RangeHandleType, None))                   \
  X(71, cuMemPoolExportToShareableHandle, Control, Sharing,                                         \
    (void* handle_out, CUmemoryPool pool, CUmemAllocationHandleType handleType, unsigned long long flags), \
    (handle_out, pool, handleType, flags), (None, None, Pool, HandleType))                          \
  X(72, cuMemPoolImportFromShareableHandle, Control, Sharing,                                       \
    (CUmemoryPool * pool_out, void* handle, CUmemAllocationHandleType handleType, unsigned long long flags), \
    (pool_out, handle, handleType, flags), (None, None, Pool, HandleType))                          \
  X(73, cuMemPoolExportPointer, Control, Sharing, (CUmemPoolPtrExportData * shareData_out, CUdeviceptr ptr), \
    (shareData_out, ptr), (Ptr, None, None, None))                                                  \
  X(74, cuMemPoolImportPointer, Acquire, IpcImport,                                                 \
    (CUdeviceptr * ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData* shareData), (ptr_out, pool, shareData), \
    (Ptr, ImportBytes, Pool, None))                                                                 \
  /* Multicast objects (rule 12): no memory of their own; the memory bound to them is counted */  \
  /* by its cuMemCreate. */                                                                        \
  X(75, cuMulticastCreate, Acquire, Multicast,                                                      \
    (CUmemGenericAllocationHandle * mcHandle, const CUmulticastObjectProp* prop), (mcHandle, prop), \
    (None, Bytes, Multicast, TeamSize))                                                             \
  X(76, cuMulticastAddDevice, Control, Multicast, (CUmemGenericAllocationHandle mcHandle, CUdevice dev), \
    (mcHandle, dev), (None, None, Multicast, Device))                                               \
  X(77, cuMulticastBindMem, Control, Multicast,                                                     \
    (CUmemGenericAllocationHandle mcHandle, size_t mcOffset, CUmemGenericAllocationHandle memHandle, \
     size_t memOffset, size_t size, unsigned long long flags),                                      \
    (mcHandle, mcOffset, memHandle, memOffset, size, flags), (McOffset, Bytes, Multicast, Handle))  \
  X(78, cuMulticastBindAddr, Control, Multicast,                                                    \
    (CUmemGenericAllocationHandle mcHandle, size_t mcOffset, CUdeviceptr memptr, size_t size,       \
     unsigned long long flags),                                                                     \
    (mcHandle, mcOffset, memptr, size, flags), (Va, Bytes, Multicast, McOffset))                    \
  X(79, cuMulticastUnbind, Control, Multicast,                                                      \
    (CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset, size_t size),            \
    (mcHandle, dev, mcOffset, size), (McOffset, Bytes, Multicast, Device))                          \
  /* External memory (rule 13): the object holds no memory; what is mapped from it is imported. */ \
  X(80, cuImportExternalMemory, Control, Sharing,                                                   \
    (CUexternalMemory * extMem_out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* memHandleDesc),         \
    (extMem_out, memHandleDesc), (None, Bytes, ExternalMemory, ExternalType))                       \
  X(81, cuExternalMemoryGetMappedBuffer, Acquire, ExternalMapping,                                  \
    (CUdeviceptr * devPtr, CUexternalMemory extMem, const CUDA_EXTERNAL_MEMORY_BUFFER_DESC* bufferDesc), \
    (devPtr, extMem, bufferDesc), (Ptr, Bytes, ExternalMemory, Offset))                             \
  X(82, cuExternalMemoryGetMappedMipmappedArray, Acquire, ExternalMapping,                          \
    (CUmipmappedArray * mipmap, CUexternalMemory extMem, const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC* mipmapDesc), \
    (mipmap, extMem, mipmapDesc), (ArrayHandle, MipmapBytes, ExternalMemory, Levels))               \
  X(83, cuDestroyExternalMemory, Control, Sharing, (CUexternalMemory extMem), (extMem),             \
    (None, None, ExternalMemory, None))                                                             \
  X(84, cuMipmappedArrayCreate, Acquire, Array,                                                     \
    (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc, unsigned int numMipmapLevels), \
    (pHandle, pMipmappedArrayDesc, numMipmapLevels), (ArrayHandle, MipmapBytes, Levels, None))      \
  X(85, cuMipmappedArrayDestroy, Release, Array, (CUmipmappedArray hMipmappedArray), (hMipmappedArray), \
    (ArrayHandle, None, None, None))                                                                \
  /* Sparse array tiles mapped onto VMM memory that cuMemCreate already counted: no memory. */    \
  X(86, cuMemMapArrayAsync, Control, None, (CUarrayMapInfo * mapInfoList, unsigned int count, CUstream hStream), \
    (mapInfoList, count, hStream), (None, None, Count, Stream))                                     \
  X(87, cuMemMapArrayAsync_ptsz, Control, None,                                                     \
    (CUarrayMapInfo * mapInfoList, unsigned int count, CUstream hStream), (mapInfoList, count, hStream), \
    (None, None, Count, Stream))                                                                    \
  /* The CUDA 2.x ABI (32-bit device pointers and sizes; cuda.h declares it only for the driver's */ \
  /* own build: interpose/entry/cuda_decls.h). The driver still exports it and cuGetProcAddress hands it */ \
  /* out for versions below 3020 (cuMemHostRegister: below 6050, with the current ABI). */         \
  X(88, cuMemAlloc, Acquire, Device, (vt_CUdeviceptr_v1 * dptr, unsigned int bytesize), (dptr, bytesize), \
    (Ptr, Bytes, None, None))                                                                       \
  X(89, cuMemFree, Release, Device, (vt_CUdeviceptr_v1 dptr), (dptr), (Ptr, None, None, None))      \
  X(90, cuMemAllocHost, Acquire, PinnedHost, (void** pp, unsigned int bytesize), (pp, bytesize),    \
    (Ptr, Bytes, None, None))                                                                       \
  X(91, cuMemAllocPitch, Acquire, Device,                                                           \
    (vt_CUdeviceptr_v1 * dptr, unsigned int* pPitch, unsigned int WidthInBytes, unsigned int Height, \
     unsigned int ElementSizeBytes),                                                                \
    (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes), (Ptr, PitchBytes, None, None))          \
  X(92, cuArrayCreate, Acquire, Array, (CUarray * pHandle, const vt_CUDA_ARRAY_DESCRIPTOR_v1* pAllocateArray), \
    (pHandle, pAllocateArray), (ArrayHandle, ArrayBytes, None, None))                               \
  X(93, cuArray3DCreate, Acquire, Array,                                                            \
    (CUarray * pHandle, const vt_CUDA_ARRAY3D_DESCRIPTOR_v1* pAllocateArray), (pHandle, pAllocateArray), \
    (ArrayHandle, Array3DBytes, None, None))                                                        \
  X(94, cuMemHostRegister, Acquire, RegisteredHost, (void* p, size_t bytesize, unsigned int Flags), \
    (p, bytesize, Flags), (Ptr, Bytes, Flags, None)) \
  /* Graphs without memory of their own (a child graph's memory nodes are its own graph's), and */ \
  /* the VDPAU contexts, measured like cuCtxCreate (rule 14). */                                    \
  X(95, cuGraphCreate, Control, Graph, (CUgraph * phGraph, unsigned int flags), (phGraph, flags),    \
    (None, None, Graph, None))                                                                      \
  X(96, cuGraphAddChildGraphNode, Control, Graph,                                                   \
    (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies, size_t numDependencies, \
     CUgraph childGraph),                                                                           \
    (phGraphNode, hGraph, dependencies, numDependencies, childGraph), (None, None, Graph, None))    \
  X(97, cuVDPAUCtxCreate, Acquire, Code,                                                            \
    (CUcontext * pCtx, unsigned int flags, CUdevice device, vt_VdpDevice vdpDevice,                 \
     vt_VdpGetProcAddress* vdpGetProcAddress),                                                      \
    (pCtx, flags, device, vdpDevice, vdpGetProcAddress), (CodeObject, FreeBefore, FreeAfter, Device)) \
  X(98, cuVDPAUCtxCreate_v2, Acquire, Code,                                                         \
    (CUcontext * pCtx, unsigned int flags, CUdevice device, vt_VdpDevice vdpDevice,                 \
     vt_VdpGetProcAddress* vdpGetProcAddress),                                                      \
    (pCtx, flags, device, vdpDevice, vdpGetProcAddress), (CodeObject, FreeBefore, FreeAfter, Device)) \
  /* Contexts and code (codes 100..126): what they cost is the driver's free memory around the */ \
  /* call (format/accounting.h, rule 14), read by the hook before and after it. */                \
  X(100, cuCtxCreate, Acquire, Code, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev), \
    (CodeObject, FreeBefore, FreeAfter, Device))                                                    \
  X(101, cuCtxCreate_v2, Acquire, Code, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev), \
    (CodeObject, FreeBefore, FreeAfter, Device))                                                    \
  X(102, cuCtxCreate_v3, Acquire, Code,                                                             \
    (CUcontext * pctx, CUexecAffinityParam* paramsArray, int numParams, unsigned int flags, CUdevice dev), \
    (pctx, paramsArray, numParams, flags, dev), (CodeObject, FreeBefore, FreeAfter, Device))        \
  X(103, cuCtxCreate_v4, Acquire, Code,                                                             \
    (CUcontext * pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags, CUdevice dev),       \
    (pctx, ctxCreateParams, flags, dev), (CodeObject, FreeBefore, FreeAfter, Device))               \
  X(104, cuCtxDestroy, Release, Context, (CUcontext ctx), (ctx), (None, None, DestroyedContext, None)) \
  X(105, cuCtxDetach, Release, Context, (CUcontext ctx), (ctx), (None, None, DestroyedContext, None)) \
  X(106, cuCtxSetLimit, Acquire, Code, (CUlimit limit, size_t value), (limit, value),               \
    (LimitValue, FreeBefore, FreeAfter, Limit))                                                     \
  X(107, cuDevicePrimaryCtxRetain, Acquire, Code, (CUcontext * pctx, CUdevice dev), (pctx, dev),    \
    (CodeObject, FreeBefore, FreeAfter, Device))                                                    \
  X(108, cuGreenCtxCreate, Acquire, Code,                                                           \
    (CUgreenCtx * phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags), (phCtx, desc, dev, flags), \
    (CodeObject, FreeBefore, FreeAfter, Device))                                                    \
  X(109, cuGreenCtxDestroy, Release, Context, (CUgreenCtx hCtx), (hCtx), (None, None, DestroyedContext, None)) \
  X(110, cuModuleLoad, Acquire, Code, (CUmodule * module, const char* fname), (module, fname),      \
    (CodeObject, FreeBefore, FreeAfter, None))                                                      \
  X(111, cuModuleLoadData, Acquire, Code, (CUmodule * module, const void* image), (module, image),  \
    (CodeObject, FreeBefore, FreeAfter, None))                                                      \
  X(112, cuModuleLoadDataEx, Acquire, Code,                                                         \
    (CUmodule * module, const void* image, unsigned int numOptions, CUjit_option* options, void** optionValues), \
    (module, image, numOptions, options, optionValues), (CodeObject, FreeBefore, FreeAfter, None))  \
  X(113, cuModuleLoadFatBinary, Acquire, Code, (CUmodule * module, const void* fatCubin), (module, fatCubin), \
    (CodeObject, FreeBefore, FreeAfter, None))                                                      \
  X(114, cuModuleUnload, Release, Code, (CUmodule hmod), (hmod), (CodeObject, None, None, None))   \
  X(115, cuLibraryLoadData, Acquire, Code,                                                          \
    (CUlibrary * library, const void* code, CUjit_option* jitOptions, void** jitOptionsValues,      \
     unsigned int numJitOptions, CUlibraryOption* libraryOptions, void** libraryOptionValues,       \
     unsigned int numLibraryOptions),                                                               \
    (library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions, libraryOptionValues, \
     numLibraryOptions),                                                                            \
    (CodeObject, FreeBefore, FreeAfter, None))                                                      \
  X(116, cuLibraryLoadFromFile, Acquire, Code,                                                      \
    (CUlibrary * library, const char* fileName, CUjit_option* jitOptions, void** jitOptionsValues,  \
     unsigned int numJitOptions, CUlibraryOption* libraryOptions, void** libraryOptionValues,       \
     unsigned int numLibraryOptions),                                                               \
    (library, fileName, jitOptions, jitOptionsValues, numJitOptions, libraryOptions, libraryOptionValues, \
     numLibraryOptions),                                                                            \
    (CodeObject, FreeBefore, FreeAfter, None))                                                      \
  X(117, cuLibraryUnload, Release, Code, (CUlibrary library), (library), (CodeObject, None, None, None)) \
  /* Lazy loading: the first use of a library or kernel in a context loads its code there. */      \
  X(118, cuLibraryGetModule, Acquire, Code, (CUmodule * pMod, CUlibrary library), (pMod, library),  \
    (CodeObject, FreeBefore, FreeAfter, None))                                                      \
  X(119, cuKernelGetFunction, Acquire, Code, (CUfunction * pFunc, CUkernel kernel), (pFunc, kernel), \
    (CodeObject, FreeBefore, FreeAfter, None))                                                      \
  /* Pools by location (CUDA 13) and pool attributes: no memory; they say where a pool lives. */    \
  X(120, cuMemPoolSetAttribute, Control, PoolConfig, (CUmemoryPool pool, CUmemPool_attribute attr, void* value), \
    (pool, attr, value), (None, PoolAttrValue, Pool, PoolAttr))                                     \
  X(121, cuDeviceSetMemPool, Control, PoolConfig, (CUdevice dev, CUmemoryPool pool), (dev, pool),   \
    (None, None, Pool, Location))                                                                   \
  X(122, cuMemGetDefaultMemPool, Control, PoolConfig,                                               \
    (CUmemoryPool * pool_out, CUmemLocation* location, CUmemAllocationType type), (pool_out, location, type), \
    (None, None, Pool, Location))                                                                   \
  X(123, cuMemGetMemPool, Control, PoolConfig,                                                      \
    (CUmemoryPool * pool_out, CUmemLocation* location, CUmemAllocationType type), (pool_out, location, type), \
    (None, None, Pool, Location))                                                                   \
  X(124, cuMemSetMemPool, Control, PoolConfig,                                                      \
    (CUmemLocation * location, CUmemAllocationType type, CUmemoryPool pool), (location, type, pool), \
    (None, None, Pool, Location))                                                                   \
  X(125, cuGLCtxCreate, Acquire, Code, (CUcontext * pCtx, unsigned int Flags, CUdevice device),     \
    (pCtx, Flags, device), (CodeObject, FreeBefore, FreeAfter, Device))                             \
  X(126, cuGLCtxCreate_v2, Acquire, Code, (CUcontext * pCtx, unsigned int Flags, CUdevice device),  \
    (pCtx, Flags, device), (CodeObject, FreeBefore, FreeAfter, Device))                             \
  /* The per-device pool queries (cudaDeviceGetDefaultMemPool / cudaDeviceGetMemPool) name a    */ \
  /* device's pool as their CUDA 13 by-location forms do for a device location, pinned type: they */ \
  /* are recorded as those (codes 122, 123: recorded_as below), so they have no code of their own. */ \
  X(0, cuDeviceGetDefaultMemPool, Control, PoolConfig, (CUmemoryPool * pool_out, CUdevice dev),     \
    (pool_out, dev), (None, None, Pool, Location))                                                  \
  X(0, cuDeviceGetMemPool, Control, PoolConfig, (CUmemoryPool * pool, CUdevice dev), (pool, dev),   \
    (None, None, Pool, Location))                                                                   \
  /* Synchronizes: a pool gives memory above its release threshold back here (rule 15). Observed */ \
  /* only (code 0: no op on the wire); the recorder writes kTagPoolSync when one may release.    */ \
  X(0, cuCtxSynchronize, Query, Sync, (), (), (None, None, None, None))                              \
  X(0, cuCtxSynchronize_v2, Query, Sync, (CUcontext ctx), (ctx), (None, None, None, None))           \
  X(0, cuStreamSynchronize, Query, Sync, (CUstream hStream), (hStream), (None, None, None, None))    \
  X(0, cuStreamSynchronize_ptsz, Query, Sync, (CUstream hStream), (hStream), (None, None, None, None)) \
  X(0, cuEventSynchronize, Query, Sync, (CUevent hEvent), (hEvent), (None, None, None, None))

namespace vt {

enum class Action : uint8_t { Acquire, Release, Lookup, Control, Query };

// What an event's memory is, for accounting. Values are written nowhere: traces carry op codes.
enum class MemKind : uint8_t {
  None,
  Device,          // cuMemAlloc/Pitch: device memory owned by this process
  Managed,         // unified memory
  PinnedHost,      // page-locked host memory allocated by the driver
  RegisteredHost,  // existing host memory pinned by cuMemHostRegister
  Async,           // stream-ordered allocation carved from a pool
  Pool,            // a memory pool object (create / destroy / trim)
  VmmPhysical,     // cuMemCreate physical memory handle
  VmmMapping,      // a mapping of physical memory into a reserved range
  VmmReservation,  // reserved virtual address space (no memory by itself)
  Array,           // CUDA array (size approximated from its descriptor)
  IpcImport,       // memory of another process mapped here (imported, not owned)
  Context,         // context teardown: every allocation of that context is gone
  GraphNode,       // a graph memory node: a virtual address, no memory until the graph runs
  GraphPool,       // the driver's graph pool (memory graphs take at upload/launch): a sample
  Graph,           // graphs and stream capture without memory of their own
  VmmImport,       // a VMM handle imported from another process (imported, not owned)
  Multicast,       // a multicast object and its team and bindings: no memory of its own
  ExternalMapping, // a buffer or mipmapped array mapped from external memory (imported)
  Sharing,         // exports, pool imports and external memory objects: no memory
  Code,            // contexts, modules, libraries, limits: the driver's memory for them (rule 14)
  PoolConfig,      // a pool named for a location, or its attributes set: no memory (rule 4)
  Sync,            // a synchronize, where pools release memory above their threshold (rule 15)
};

// How each kind is accounted (buckets, keys, devices): format/accounting.h.

// MemKind's names: the `kind` of `vramtrace dump` and of docs/trace-format.md's op table.
inline const char* kind_name(MemKind k) {
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
    case MemKind::GraphNode: return "graph_node";
    case MemKind::GraphPool: return "graph_pool";
    case MemKind::Graph: return "graph";
    case MemKind::VmmImport: return "vmm_import";
    case MemKind::Multicast: return "multicast";
    case MemKind::ExternalMapping: return "external_mapping";
    case MemKind::Sharing: return "sharing";
    case MemKind::Code: return "code";
    case MemKind::PoolConfig: return "pool_config";
    case MemKind::Sync: return "sync";
    case MemKind::None: break;
  }
  return "none";
}

enum class HookId : uint8_t {
#define VT_HOOK_ID(code, name, action, kind, params, args, fields) name,
  VT_FOR_EACH_HOOK(VT_HOOK_ID)
#undef VT_HOOK_ID
  kCount
};
inline constexpr int kHookCount = static_cast<int>(HookId::kCount);

// What each optional field of an op's events holds.
struct OpFields {
  Field addr, size, aux, aux2;
};

struct OpInfo {
  uint8_t code;
  HookId id;  // its row in kOps (codes may leave gaps between the ranges helpers were given)
  const char* name;
  Action action;
  MemKind kind;
  OpFields fields;
};

// Indexed by HookId.
#define VT_OP_FIELDS(addr, size, aux, aux2) {Field::addr, Field::size, Field::aux, Field::aux2}
inline constexpr OpInfo kOps[] = {
#define VT_OP_INFO(code, name, action, kind, params, args, fields) \
  {code, HookId::name, #name, Action::action, MemKind::kind, VT_OP_FIELDS fields},
    VT_FOR_EACH_HOOK(VT_OP_INFO)
#undef VT_OP_INFO
};
#undef VT_OP_FIELDS
static_assert(sizeof(kOps) / sizeof(kOps[0]) == kHookCount);

// The op whose code an event of `id` carries: itself, except for a hook recorded as another op of
// the same meaning (code 0 in the list; its describe() fills the other op's fields).
constexpr HookId recorded_as(HookId id) {
  return id == HookId::cuDeviceGetDefaultMemPool ? HookId::cuMemGetDefaultMemPool
         : id == HookId::cuDeviceGetMemPool      ? HookId::cuMemGetMemPool
                                                 : id;
}

constexpr bool codes_increase() {
  int last = 0;
  for (int i = 0; i < kHookCount; ++i) {
    if (kOps[i].code == 0 && kOps[i].action == Action::Query) continue;  // never written
    if (kOps[i].code == 0 && recorded_as(HookId(i)) != HookId(i)) {    // written as another op
      if (kOps[int(recorded_as(HookId(i)))].code == 0) return false;
      continue;
    }
    if (kOps[i].code < 1 || kOps[i].code > 127 || kOps[i].code <= last) return false;
    last = kOps[i].code;
  }
  return true;
}
static_assert(codes_increase(),
              "op codes must increase in list order, within 1..127 (event tags); 0 only for a query or an op recorded as another");

// Op code -> its row (nullptr: no such op). Pointers, not row numbers: the reader looks one up
// per event (a row number was ~10 instructions with its test and multiply, issue 43).
struct OpIndex {
  const OpInfo* row[128] = {};
  constexpr OpIndex() {
    for (int i = 0; i < kHookCount; ++i)
      if (kOps[i].code) row[kOps[i].code] = &kOps[i];
  }
};
inline constexpr OpIndex kOpIndex{};

// Op code -> info, or nullptr for codes this build does not know (newer traces).
inline const OpInfo* op_by_code(uint8_t code) { return code < 128 ? kOpIndex.row[code] : nullptr; }

}  // namespace vt
