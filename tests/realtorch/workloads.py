"""The real-PyTorch workloads (tests/realtorch/workloads/) and what each must show: one entry per
ctest test. Fields:
  script   the plain PyTorch script (they import vt_marks to mark instants; nothing else)
  env      extra environment (the simulated device's size, PyTorch's allocator settings)
  rc       the script's own exit status (1: an OutOfMemoryError it does not catch)
  mode     the report's torch.mode
  verdict  the verdict of its (last) OOM, when it has one
  other_process  the share of the device another process holds (run.py starts one)
  nvml_lists_none  NVML lists no process (the other one included): a container's NVML
  remedies_apply  each PYTORCH_CUDA_ALLOC_CONF its OOM's remedies write is given to the script again
                 (without vramtrace): PyTorch must accept it
  cublas_workspace  a matmul ran and nothing else is left: PyTorch's cuBLAS workspace is all that
                 is allocated at exit, and the leaks must name it apart
  one_thread_leaks  the script writes leaker.json (the thread that keeps its outputs, and the line): the
           tensor growth is that line alone, on that thread alone (1 of the 32 that allocated there),
           and no driver-level growth is listed (PyTorch's segments are its reserved memory)
  gate     `vramtrace check` at PyTorch's own peaks (its last mark's) passes, 1 byte under fails,
           and --max-leak 0 passes: a clean run that allocates nothing after its last mark
"""

WORKLOADS = {
    # Training loops and features, default caching allocator.
    "mlp_adamw": dict(script="mlp_adamw.py", cublas_workspace=True, gate=True),
    "transformer_block": dict(script="transformer_block.py"),
    "grad_accumulation": dict(script="grad_accumulation.py"),
    "autocast_bf16": dict(script="autocast_bf16.py"),
    "activation_checkpointing": dict(script="activation_checkpointing.py"),
    "cnn_no_cudnn": dict(script="cnn_no_cudnn.py"),
    "dataloader_pinned": dict(script="dataloader_pinned.py", gate=True),
    "inference_no_grad": dict(script="inference_no_grad.py"),
    "empty_cache": dict(script="empty_cache.py"),
    "memory_fraction": dict(script="memory_fraction.py", env={"FAKECUDA_TOTAL_BYTES": "16GiB"}),
    "two_devices": dict(script="two_devices.py", env={"FAKECUDA_DEVICES": "2"}),
    "cuda_graph": dict(script="cuda_graph.py"),
    # Allocator settings.
    "transformer_expandable": dict(script="transformer_block.py",
                                   env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                                   mode="caching allocator, expandable segments"),
    "mlp_cuda_malloc_async": dict(script="mlp_adamw.py", env={"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
                                  mode="cudaMallocAsync backend: every tensor is a stream-ordered allocation"),
    # One OOM of each kind the verdicts name.
    "oom_live_set": dict(script="oom_live_set.py", env={"FAKECUDA_TOTAL_BYTES": "3GiB"}, rc=1,
                         verdict="live_set_too_large"),
    "oom_fragmentation": dict(script="oom_fragmentation.py", env={"FAKECUDA_TOTAL_BYTES": "2GiB"}, rc=1,
                              verdict="fragmentation", remedies_apply=True),
    # The remedy the fragmentation verdict gives, applied: the same script then fits.
    "oom_fragmentation_expandable": dict(script="oom_fragmentation.py",
                                         env={"FAKECUDA_TOTAL_BYTES": "2GiB",
                                              "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                                         mode="caching allocator, expandable segments"),
    "oom_outside": dict(script="oom_outside.py", env={"FAKECUDA_TOTAL_BYTES": "3GiB"}, rc=1, verdict="outside_pytorch"),
    "oom_other_process": dict(script="oom_other_process.py", env={"FAKECUDA_TOTAL_BYTES": "3GiB"}, rc=1,
                              verdict="other_processes", other_process=1 / 3),
    # The same in a container whose NVML cannot see this process (it lists no process): the other
    # process's memory is still another process's, not this one's context.
    "oom_other_process_nvml_blind": dict(script="oom_other_process.py",
                                         env={"FAKECUDA_TOTAL_BYTES": "3GiB", "FAKENVML_SELF": "0"}, rc=1,
                                         verdict="other_processes", other_process=1 / 3, nvml_lists_none=True),
    # An OutOfMemoryError caught, then one that ends the program: the page shows the last first.
    "oom_caught_then_fatal": dict(script="oom_caught_then_fatal.py", env={"FAKECUDA_TOTAL_BYTES": "2GiB"}, rc=1,
                                  verdict="live_set_too_large"),
    "oom_kept_alive": dict(script="oom_kept_alive.py", env={"FAKECUDA_TOTAL_BYTES": "3GiB"}, rc=1,
                           verdict="leak_growth"),
    # Thirty-two threads, one keeps its outputs: growth is that thread's, concurrency is none.
    "threads_one_leaks": dict(script="threads_one_leaks.py", one_thread_leaks=True),
    # torch.profiler(profile_memory=True) sees the same memory events with and without vramtrace.
    "profiler_memory": dict(script="profiler_memory.py", plain_too=True),
}
