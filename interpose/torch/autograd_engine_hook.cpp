// PyTorch's autograd engine entered from Python: torch::autograd::Engine::execute, which
// libtorch_python.so's PythonEngine::execute calls by name in libtorch_cpu.so (a qualified,
// non-virtual call, bound through the global scope, where a preloaded libvramtrace.so comes
// first). The wrapper publishes the caller's Python frames for the engine's workers
// (backward_context.h), calls the real function (found among the loaded objects: torch loads its
// libraries RTLD_LOCAL) and takes the frames back when it returns.
//
// A C++ exception leaving the engine (an OutOfMemoryError raised in backward is rethrown on the
// calling thread) unwinds through our frame. The injected code has no exceptions and links no C++
// runtime, so a landing pad is not an option: the frame names a personality routine of our own
// instead, which the unwinder calls once on its way through (cleanup phase) and which takes the
// frames back and lets the unwinding go on. Nothing is caught, nothing is resumed.
//
// The mangled name spells the signature (today's, with accumulate_grad): a PyTorch with another never
// binds here and goes on without lent frames.
#include <unwind.h>

#include <cerrno>
#include <cstdint>
#include <unistd.h>

#include <atomic>

#include "backward_context.h"
#include "loaded_symbol.h"
#include "log.h"

namespace {

// std::vector<at::Tensor> as the ABI sees it: returned through a hidden pointer to the caller's
// storage, which the real function constructs (a 24-byte struct is returned the same way).
struct VariableList {
  void* words[3];
};
using ExecuteFn = VariableList (*)(void* engine, const void* roots, const void* inputs, bool keep_graph,
                                   bool create_graph, bool accumulate_grad, const void* outputs);
// torch::autograd::Engine::execute(std::vector<Edge> const&, std::vector<at::Tensor> const&, bool,
// bool, bool, std::vector<Edge> const&)
#define VT_EXECUTE_NAME "_ZN5torch8autograd6Engine7executeERKSt6vectorINS0_4EdgeESaIS3_EERKS2_IN2at6TensorESaIS9_EEbbbS7_"

std::atomic<ExecuteFn> g_real{nullptr};

void own_marker() {}  // an address inside libvramtrace.so: the object find_loaded_symbol skips

__attribute__((noinline, cold)) ExecuteFn resolve() {
  int saved = errno;
  auto fn = reinterpret_cast<ExecuteFn>(vt::find_loaded_symbol(VT_EXECUTE_NAME, reinterpret_cast<const void*>(&own_marker), nullptr));
  errno = saved;
  if (!fn) {
    // The caller was linked against a definition that no loaded object has: what the loader
    // itself does when a lazily bound function is missing.
    vt::log_line("symbol lookup error: torch::autograd::Engine::execute is defined by no loaded object");
    _exit(127);
  }
  g_real.store(fn, std::memory_order_relaxed);
  return fn;
}

}  // namespace

// The personality routine of the wrapper's frame (see the header comment).
extern "C" __attribute__((visibility("hidden"))) _Unwind_Reason_Code vt_engine_unwind(int, _Unwind_Action actions,
                                                                                     _Unwind_Exception_Class,
                                                                                     _Unwind_Exception*,
                                                                                     _Unwind_Context*) {
  if (actions & _UA_CLEANUP_PHASE) {
    int saved = errno;
    vt::backward_leave();
    errno = saved;
  }
  return _URC_CONTINUE_UNWIND;
}
// The indirect pointer the frame's CIE names (.cfi_personality 0x9b: indirect, pc-relative).
asm(".pushsection .data.rel.local.DW.ref.vt_engine_unwind,\"awG\",@progbits,DW.ref.vt_engine_unwind,comdat\n"
    ".p2align 3\n.hidden DW.ref.vt_engine_unwind\n.weak DW.ref.vt_engine_unwind\n"
    "DW.ref.vt_engine_unwind:\n.quad vt_engine_unwind\n.popsection\n");

extern "C" __attribute__((visibility("default"), noinline)) VariableList vt_autograd_engine_execute(
    void* engine, const void* roots, const void* inputs, bool keep_graph, bool create_graph, bool accumulate_grad,
    const void* outputs) asm(VT_EXECUTE_NAME);

VariableList vt_autograd_engine_execute(void* engine, const void* roots, const void* inputs, bool keep_graph,
                                        bool create_graph, bool accumulate_grad, const void* outputs) {
  asm volatile(".cfi_personality 0x9b, DW.ref.vt_engine_unwind");
  ExecuteFn real = g_real.load(std::memory_order_relaxed);
  if (__builtin_expect(!real, 0)) real = resolve();
  int saved = errno;
  vt::backward_enter();
  errno = saved;
  VariableList out = real(engine, roots, inputs, keep_graph, create_graph, accumulate_grad, outputs);
  saved = errno;
  vt::backward_leave();
  errno = saved;
  return out;
}
