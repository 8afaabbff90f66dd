"""The demo's training script (scripts/demo.sh): a small transformer language model trained with
AdamW, that keeps every step's logits "to compute the accuracy at the end of the epoch". Each
step's logits stay alive, so the GPU fills up step after step until the OutOfMemoryError, the way
such a bug shows up in a real job. Sized from the GPU it runs on, so it ends in a few dozen steps
on a 16 GiB simulated device or an 80 GiB one alike."""
import torch
from torch import nn

torch.manual_seed(0)
device = "cuda"
total = torch.cuda.get_device_properties(0).total_memory
vocab, d_model, seq = 8192, 512, 256
batch = max(4, int(total / 40 / (seq * vocab * 4)))  # the logits of one step: ~1/40 of the GPU


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead=8, dim_feedforward=4 * d_model, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens)))


model = TinyLM().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
epoch_logits = []  # for the accuracy at the end of the epoch
for step in range(200):
    tokens = torch.randint(0, vocab, (batch, seq), device=device)
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.view(-1, vocab), tokens.view(-1))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    epoch_logits.append(logits)  # the bug: keeps each step's logits (and their graph) alive
    if step % 5 == 0:
        print(f"step {step}: loss {loss.item():.3f}, {torch.cuda.memory_allocated() / 2**30:.2f} GiB allocated")
