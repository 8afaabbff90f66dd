"""A limit that is not a size: the run stops with pytest's usage error, before any test runs."""
import pytest


def test_first():
    pass


@pytest.mark.limit_vram("lots")
def test_bad_size():
    pass
