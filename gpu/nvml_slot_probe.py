"""What nvidia-smi asks of private-table slot 26 at start: the strings it
passes (read from the nvidia-smi binary at the addresses vgpu's NVML
logged), and what the real libnvidia-ml.so.1 answers them. Prints one line
per fact."""

import ctypes
import shutil
import struct
import sys


def strings_at(path, addresses):
    data = open(path, "rb").read()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    found = {}
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type != 1:
            continue
        for a in addresses:
            if p_vaddr <= a < p_vaddr + p_filesz:
                off = p_offset + a - p_vaddr
                found[a] = data[off:data.index(b"\0", off)].decode(errors="replace")
    return found


def main():
    smi = shutil.which("nvidia-smi")
    addrs = [int(a, 16) for a in sys.argv[1:]]
    texts = strings_at(smi, addrs)
    for a in addrs:
        print(f"string {a:#x} = {texts.get(a)!r}")
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    print("init", nvml.nvmlInit_v2())
    guid = bytes([0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e, 0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4])
    table = ctypes.c_void_p()
    print("table", nvml.nvmlInternalGetExportTable(ctypes.byref(table), guid))
    size = ctypes.c_size_t.from_address(table.value).value
    print("table size", size)
    fn = ctypes.c_void_p.from_address(table.value + 8 * 26).value
    slot = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p)(fn)
    for b in addrs[1:]:
        out = ctypes.create_string_buffer(256)
        r = slot(texts.get(addrs[0], "").encode(), texts.get(b, "").encode(), ctypes.addressof(out))
        print(f"slot 26 ({texts.get(addrs[0])!r}, {texts.get(b)!r}) -> {r}; out {out.raw[:48].hex()}")


main()
