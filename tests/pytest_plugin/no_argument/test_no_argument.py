"""limit_vram without its size."""
import pytest


@pytest.mark.limit_vram()
def test_no_size():
    pass
