"""A live-set OOM: the batch is too large for the device. The activations of a deep MLP are kept
for backward; a batch that takes a quarter of the free memory fits, one five times larger does
not. Sized from the device (a 3 GiB simulated one, or a real GPU: narrow layers, so activations
dominate and the compute stays small)."""
import torch
from torch import nn

from vt_marks import mark

torch.manual_seed(0)
width, depth = 1024, 12
layers = []
for _ in range(depth):
    layers += [nn.Linear(width, width), nn.ReLU()]
model = nn.Sequential(*layers).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
mark("model on the GPU")
free, _ = torch.cuda.mem_get_info()
per_sample = (depth + 2) * width * 4  # the activations kept for backward (a ReLU's), the input, the output
first = int(free * 0.25) // per_sample
for batch_size in (first, 5 * first):
    x = torch.randn(batch_size, width, device="cuda")
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"batch {batch_size}")
