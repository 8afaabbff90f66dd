"""CUDA graphs: a model's forward captured once with torch.cuda.graph and replayed; the graph's
memory comes from its own private pool."""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).cuda().eval()
static_input = torch.randn(256, 1024, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side), torch.no_grad():
    for _ in range(2):  # warm-up on a side stream, as the documentation asks
        model(static_input)
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(graph):
    static_output = model(static_input)
mark("after capture")
for step in range(3):
    static_input.copy_(torch.randn(256, 1024, device="cuda"))
    graph.replay()
    mark(f"after replay {step}")
