"""Checkpoint generations of a run read back whole: the bundle format of
docs/formats/checkpoint.md (magic, masked CRC-32C over the file, every
entry's length) and the run id each one carries."""
import glob
import os
import re
import struct


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    t = CRC_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_checkpoint(path):
    """(global_step, run_id) of a bundle that reads back whole, or raises
    ValueError saying what is wrong (docs/formats/checkpoint.md)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 20 or data[:8] != b"DTFBNDL\x01":
        raise ValueError(f"{path}: not a bundle ({len(data)} bytes)")
    (stored,) = struct.unpack_from("<I", data, len(data) - 4)
    if masked(crc32c(data[:-4])) != stored:
        raise ValueError(f"{path}: checksum mismatch ({len(data)} bytes)")
    version, count = struct.unpack_from("<II", data, 8)
    if version != 1:
        raise ValueError(f"{path}: version {version}")
    pos = 16
    step = None
    run_id = None
    for _ in range(count):
        (n,) = struct.unpack_from("<H", data, pos)
        name = data[pos + 2:pos + 2 + n].decode()
        pos += 2 + n
        rank = data[pos + 1]
        pos += 2 + 8 * rank
        (length,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        value = data[pos:pos + length]
        pos += length
        if name == "train/global_step":
            (step,) = struct.unpack_from("<q", value)
        elif name == "meta/run_id":
            run_id = value.decode()
    if pos != len(data) - 4:
        raise ValueError(f"{path}: {len(data) - 4 - pos} stray bytes")
    return step, run_id


def check_checkpoints(out_dir, run_id):
    """Generations (checkpoint-<step>.dtf and checkpoint.dtf) in out_dir:
    how many, how many read back whole and are this run's, the newest step,
    and the problems."""
    files = sorted(glob.glob(os.path.join(out_dir, "checkpoint-[0-9]*.dtf")))
    latest = os.path.join(out_dir, "checkpoint.dtf")
    if os.path.exists(latest):
        files.append(latest)
    good = 0
    newest = None
    problems = []
    for path in files:
        try:
            step, owner = read_checkpoint(path)
        except (OSError, ValueError, struct.error, UnicodeDecodeError) as e:
            problems.append(str(e))
            continue
        if owner != run_id:
            problems.append(f"{path}: run {owner!r}, not {run_id}")
            continue
        good += 1
        if step is not None and (newest is None or step > newest):
            newest = step
    known = re.compile(r"^(checkpoint(-[0-9]+|-best)?\.dtf|model|"
                       r"events\.out\.tfevents\..*)$")
    try:
        others = sorted(n for n in os.listdir(out_dir) if not known.match(n))
    except OSError:
        others = []
    return {"files": len(files), "intact": good, "newest_step": newest,
            "problems": problems, "other_files": others}


