#!/usr/bin/env python3
"""Writes spy.c: a libnvidia-ml.so.1 that forwards every NVML export to the
real library and logs the calls nvidia-smi makes through NVML's private
export table (slot, arguments, the memory they point at before and after).

    gen.py EXPORTS.txt > spy.c

EXPORTS.txt is the real library's export list, one name per line
(fixtures/libnvidia-ml-580-exports.txt). A GPU-machine investigation tool:
nothing in vgpu links it.
"""
import sys

names = [n.strip() for n in open(sys.argv[1]) if n.strip()]
special = {"nvmlInternalGetExportTable"}
out = []
slots = [
    f"static long spy_slot_{n}(long a0, long a1, long a2, long a3, long a4, long a5)"
    f" {{ return spy_call({n}, a0, a1, a2, a3, a4, a5); }}"
    for n in range(1, 513)
]
slots.append(
    "static slot_fn spy_slots[SLOTS + 1] = {0, "
    + ", ".join(f"spy_slot_{n}" for n in range(1, 513))
    + "};"
)
head = open(__file__.replace("gen.py", "spy_head.c")).read()
out.append(head.replace('#include "slots.h"\n', "\n".join(slots) + "\n"))
for n in names:
    if n in special:
        continue
    out.append(f"__attribute__((visibility(\"hidden\"))) void *spy_p_{n};")
    out.append(f'__asm__(".globl {n}\\n.type {n},@function\\n{n}:\\n\\tjmp *spy_p_{n}(%rip)\\n");')
out.append("static void spy_bind(void *h) {")
for n in names:
    if n in special:
        continue
    out.append(f'    spy_p_{n} = spy_sym(h, "{n}");')
out.append("}")
print("\n".join(out))
