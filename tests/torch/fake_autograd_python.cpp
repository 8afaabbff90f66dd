// libtorch_python.so's side of loss.backward(), without PyTorch: PythonEngine::execute overrides
// the engine's virtual function and calls Engine::execute by name, which binds to libtorch_cpu.so
// (or to a preloaded libvramtrace.so) through the dynamic linker, as in PyTorch
// (torch/csrc/autograd/python_engine.cpp). Called from Python through ctypes.CDLL, which releases
// the GIL, as THPEngine_run_backward does.
#include <cerrno>
#include <cstdint>
#include <exception>
#include <vector>

#include "fake_autograd_types.h"

namespace torch::autograd::python {
struct PythonEngine : Engine {
  variable_list execute(const edge_list& roots, const variable_list& inputs, bool keep_graph, bool create_graph,
                        bool accumulate_grad, const edge_list& outputs) override {
    return Engine::execute(roots, inputs, keep_graph, create_graph, accumulate_grad, outputs);
  }
};
}  // namespace torch::autograd::python

extern "C" {
// run_backward: the worker's allocation, 0 when the engine raised (`raise`: it does), 1 when the
// result or errno did not come back as the engine left them.
FAKE_EXPORT uint64_t fap_run_backward(int raise) {
  torch::autograd::python::PythonEngine engine;
  torch::autograd::Engine& e = engine;
  try {
    errno = 0;
    torch::autograd::variable_list out = e.execute({{}}, {{}, {}}, false, raise != 0, true, {});
    // 1: the result or errno did not come back as the engine left them.
    return out.size() == 2 && errno == ENOTRECOVERABLE ? reinterpret_cast<uint64_t>(out[0].impl) : 1;
  } catch (const std::exception&) {
    return 0;
  }
}
}
