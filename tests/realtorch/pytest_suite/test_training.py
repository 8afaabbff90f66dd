"""A test suite a PyTorch user would write, for the plugin under real PyTorch: a model shared by
module-scoped fixture, a test that leaves PyTorch's cache full for the next, one over its limit.
Run in two orders (pytest_plugin_check.py): each test's figure must not depend on the order.
Under the previous plugin (reserved memory, carried over) test_one_tensor failed its limit once
test_leaves_cache had run before it."""
import pytest
import torch

MiB = 1 << 20


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    # 32 MiB of weights (two 1024 x 4096 layers), alive for every test after its creation.
    return torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()


@pytest.mark.limit_vram("100 MiB")
def test_one_tensor():
    x = torch.ones(MiB, device="cuda")  # 4 MiB (the simulated GPU runs no kernel: shapes only)
    assert x.sum().shape == ()


@pytest.mark.limit_vram("100 MiB")
def test_train_step(model):
    x = torch.randn(256, 1024, device="cuda")
    loss = model(x).square().mean()
    loss.backward()
    model.zero_grad(set_to_none=True)


def test_leaves_cache():
    # 256 MiB handed back to PyTorch's cache, which keeps it reserved for the tests after this one.
    x = torch.empty(64 * MiB, device="cuda")
    del x


@pytest.mark.limit_vram("100 MiB")
def test_too_big():
    keep = torch.zeros(75 * MiB, device="cuda")  # 300 MiB
    assert keep.shape[0] == 75 * MiB
