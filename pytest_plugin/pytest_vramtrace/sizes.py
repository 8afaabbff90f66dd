"""Byte sizes written and read exactly as the vramtrace CLI does (common/byte_size.h): the same
rules, proven on the same cases by tests/shared/byte_sizes.json. No pytest import here, so the
shared-cases test can load it alone."""

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_SPACE = " \t\n\v\f\r"  # C's isspace, not Unicode's
_FACTORS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30,
            "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}


def format_bytes(n):
    """1536 -> '1.50 KiB': three significant digits in the largest binary unit reached, rounded
    half to even on the exact value; below 1 KiB, 'N B'."""
    n = max(int(n), 0)
    if n < 1024:
        return f"{n} B"
    u = 1
    while u < 5 and n >> (10 * (u + 1)):
        u += 1
    div = 1 << (10 * u)
    decimals = 0 if n >= 100 * div else 1 if n >= 10 * div else 2
    scale = 10**decimals
    q, r = divmod(n * scale, div)
    if 2 * r > div or (2 * r == div and q & 1):
        q += 1
    text = str(q // scale)
    if decimals:
        text += "." + str(q % scale).zfill(decimals)
    return f"{text} {_UNITS[u]}"


def parse_bytes(text):
    """'2 GiB', '512MB', '1048576' (or an int) -> bytes. K/KiB ... T/TiB are powers of 1024,
    KB/MB/GB/TB powers of 1000. ValueError for anything else, a fraction of a byte, or 2^64 and
    more."""
    if isinstance(text, int) and not isinstance(text, bool):
        if 0 <= text < 1 << 64:
            return text
        raise ValueError(f"{text!r} is not a size")
    s, i = str(text), 0
    n = len(s)
    while i < n and s[i] in _SPACE:
        i += 1
    start, int_digits, frac_digits = i, 0, 0
    while i < n and s[i] in "0123456789":
        i, int_digits = i + 1, int_digits + 1
    point = i < n and s[i] == "."
    if point:
        i += 1
        while i < n and s[i] in "0123456789":
            i, frac_digits = i + 1, frac_digits + 1
    if (frac_digits == 0) if point else (int_digits == 0):
        raise ValueError(f"{text!r} is not a size (examples: 512MiB, 4GB, 1.5GiB, 1048576)")
    value = float(s[start:i])
    while i < n and s[i] in _SPACE:
        i += 1
    unit_start = i
    while i < n and s[i].isascii() and s[i].isalpha():
        i += 1
    unit = s[unit_start:i].lower()
    while i < n and s[i] in _SPACE:
        i += 1
    if i < n or unit not in _FACTORS:
        raise ValueError(f"{text!r} has an unknown unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)")
    factor = _FACTORS[unit]
    if factor == 1 and frac_digits and value != int(value):
        raise ValueError(f"{text!r} is a fraction of a byte")
    b = round(value * float(factor))  # to the nearest byte, half to even (as C's nearbyint)
    if b >= 1 << 64:
        raise ValueError(f"{text!r} is too large")
    return b
