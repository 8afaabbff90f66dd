"""No limit_vram marker: an installed plugin stays silent without vramtrace."""


def test_plain():
    assert 1 + 1 == 2
