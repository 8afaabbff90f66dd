"""A DataLoader with worker processes (fork) and pin_memory: batches are made in the workers,
pinned by the loader's thread, and copied to the GPU with non_blocking=True."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from vt_marks import mark

torch.manual_seed(0)
dataset = TensorDataset(torch.randn(1024, 512), torch.randint(0, 10, (1024,)))
loader = DataLoader(dataset, batch_size=128, shuffle=True, num_workers=2, pin_memory=True)
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    if i % 2 == 1:
        mark(f"after batch {i}")
