// The types of torch::autograd::Engine::execute's signature as libtorch declares them (the mangled
// name vramtrace binds spells them), shared by the stand-in engine and its Python binding.
#pragma once

#include <cstdint>
#include <vector>

#define FAKE_EXPORT __attribute__((visibility("default")))

namespace at {
class FAKE_EXPORT Tensor {
 public:
  void* impl = nullptr;
};
}  // namespace at

namespace torch::autograd {
struct Edge {
  void* function = nullptr;
  uint32_t input_nr = 0;
};
using edge_list = std::vector<Edge>;
using variable_list = std::vector<at::Tensor>;
struct FAKE_EXPORT Engine {
  virtual ~Engine();
  virtual variable_list execute(const edge_list& roots, const variable_list& inputs, bool keep_graph,
                                bool create_graph, bool accumulate_grad, const edge_list& outputs);
};
}  // namespace torch::autograd
