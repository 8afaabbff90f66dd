"""PyTorch kernels for the CUPTI checks (tests/gpu/device_run.sh, section cupti): matmuls in NVTX
ranges; with `profiler`, a torch.profiler window (vramtrace steps aside), then more kernels after it
(vramtrace resumes)."""
import sys, torch
x = torch.randn(4096, 4096, device="cuda")
for i in range(10):
    torch.cuda.nvtx.range_push("step")
    y = x @ x
    z = torch.relu(y).sum()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
if len(sys.argv) > 1 and sys.argv[1] == "profiler":
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(5):
            y = x @ x
        torch.cuda.synchronize()
    n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    print("profiler_cuda_events", n)
    # After the window: vramtrace should record again (if Kineto let CUPTI go).
    import time
    time.sleep(0.3)
    for i in range(10):
        y = x @ x
    torch.cuda.synchronize()
    time.sleep(0.5)
    sys.exit(0 if n > 0 else 7)
