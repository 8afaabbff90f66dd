// cuda.h maps these names to newer exports (cuMemAlloc to cuMemAlloc_v2, cuCtxCreate to
// cuCtxCreate_v4, ...); the older exports are distinct functions that the driver still hands
// out for older versions (cudart asks for some of them), and in the hook list (op_table.h) each
// name means its own export. Included by op_table.h and after cuda.h by
// interpose/entry/cuda_decls.h, so the names are plain whichever of the two a file includes first.
// No include guard on purpose: each inclusion undoes what a cuda.h included since defined.
#undef cuGetProcAddress
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxRelease
#undef cuIpcOpenMemHandle
#undef cuStreamBeginCapture
#undef cuGraphInstantiate
#undef cuGraphAddNode
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemAllocHost
#undef cuMemAllocPitch
#undef cuArrayCreate
#undef cuArray3DCreate
#undef cuMemHostRegister
#undef cuCtxCreate
#undef cuCtxDestroy
