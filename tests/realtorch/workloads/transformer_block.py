"""A small transformer block (multi-head attention, layer norm, dropout, MLP) trained with AdamW."""
import torch
from torch import nn

from vt_marks import mark


class Block(nn.Module):
    def __init__(self, d_model=512, heads=8):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, heads, dropout=0.1, batch_first=True)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model),
                                 nn.Dropout(0.1))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


torch.manual_seed(0)
model = nn.Sequential(nn.Embedding(8000, 512), Block(), Block(), nn.LayerNorm(512), nn.Linear(512, 8000)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
mark("model on the GPU")
for step in range(3):
    tokens = torch.randint(0, 8000, (16, 128), device="cuda")
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.view(-1, 8000), tokens.view(-1))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    mark(f"after step {step}")
