"""The Python workload of the golden traces (record.sh): allocations through the simulated driver
from known Python lines in the shapes the frame walker must name (a function, a nested class's
method, a generator, a coroutine, another thread, a call holding the GIL), and a small training
loop whose forward pass frees its activations while one list keeps a tensor per step (a leak)."""
import asyncio
import ctypes
import threading

cuda = ctypes.CDLL("libcuda.so.1")       # releases the GIL around calls, like PyTorch
cuda_gil = ctypes.PyDLL("libcuda.so.1")  # keeps the GIL
MiB = 1 << 20


def alloc(size, lib=cuda):
    p = ctypes.c_uint64()
    if lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size)) != 0:
        raise SystemExit("cuMemAlloc_v2 failed")
    return p


def free(p):
    cuda.cuMemFree_v2(p)


def load_weights():
    return alloc(64 * MiB)


class Model:
    class Block:
        def forward(self):
            act = alloc(8 * MiB)
            free(act)
            return alloc(1 * MiB)


def batches():
    yield alloc(2 * MiB)


async def prefetch():
    await asyncio.sleep(0)
    return alloc(3 * MiB)


def in_thread(ctx, out):
    cuda.cuCtxSetCurrent(ctx)  # a new thread has no current context
    out.append(alloc(5 * MiB))


def main():
    cuda.cuInit(0)
    dev = ctypes.c_int()
    cuda.cuDeviceGet(ctypes.byref(dev), 0)
    ctx = ctypes.c_void_p()
    cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    cuda.cuCtxSetCurrent(ctx)

    weights = load_weights()
    history = []
    block = Model.Block()
    for step in range(4):
        for b in batches():
            history.append(block.forward())  # the loss kept with its graph
            free(b)
    free(asyncio.run(prefetch()))
    kept = []
    t = threading.Thread(target=in_thread, args=(ctx, kept))
    t.start()
    t.join()
    free(alloc(6 * MiB, cuda_gil))
    free(weights)


main()
