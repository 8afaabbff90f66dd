"""A wheel file (PEP 427) written with the standard library: the files, their modes, and the
.dist-info (METADATA, WHEEL, entry_points.txt, RECORD with each file's SHA-256)."""
import base64
import hashlib
import os
import time
import zipfile

import project


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def dist_info_files(tag, pure):
    """The .dist-info's files but RECORD, as {name: bytes}."""
    info = "%s-%s.dist-info" % (project.NAME, project.version())
    wheel = "Wheel-Version: 1.0\nGenerator: vramtrace's own build backend (wheel/backend)\n" \
            "Root-Is-Purelib: %s\nTag: %s\n" % ("true" if pure else "false", tag)
    return {info + "/METADATA": project.metadata().encode(),
            info + "/WHEEL": wheel.encode(),
            info + "/entry_points.txt": project.ENTRY_POINTS.encode()}


def write(directory, tag, files, pure=False):
    """Writes the wheel into `directory`: files is [(name in the wheel, path on disk)]. Returns its
    file name. Timestamps are SOURCE_DATE_EPOCH's when set (reproducible builds)."""
    name = "%s-%s-py3-none-%s.whl" % (project.NAME, project.version(), tag)
    info = "%s-%s.dist-info" % (project.NAME, project.version())
    stamp = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", time.time())))[:6]
    if stamp[0] < 1980:
        stamp = (1980, 1, 1, 0, 0, 0)
    record = []
    path = os.path.join(directory, name)
    with zipfile.ZipFile(path + ".part", "w", zipfile.ZIP_DEFLATED) as z:
        def add(arcname, data, mode):
            entry = zipfile.ZipInfo(arcname, stamp)
            entry.external_attr = (0o100000 | mode) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
            record.append("%s,%s,%d" % (arcname, _digest(data), len(data)))

        for arcname, disk in sorted(files):
            with open(disk, "rb") as f:
                data = f.read()
            add(arcname, data, 0o755 if os.access(disk, os.X_OK) and not disk.endswith(".py") else 0o644)
        for arcname, data in dist_info_files("py3-none-" + tag, pure).items():
            add(arcname, data, 0o644)
        record.append(info + "/RECORD,,")
        add_record = zipfile.ZipInfo(info + "/RECORD", stamp)
        add_record.external_attr = (0o100644) << 16
        add_record.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(add_record, "\n".join(record) + "\n")
    os.replace(path + ".part", path)
    return name
