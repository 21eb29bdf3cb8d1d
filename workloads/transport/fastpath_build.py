"""cffi's build script for the compiled data path (fastpath.c: rx_take receives, tx_stage
stages sends): setup.py names it in `cffi_modules`, so `pip install` compiles
`workloads.transport._fastpath` with the machine's C compiler.

Why cffi: the routines are plain C over raw pointers (the ring's slots, each peer's received
bitmap, the send batch's iovecs), which cffi binds from the header alone, compiled once at
install; numba would JIT them in every worker at start (4 ranks on 2 cores) and needs the
bitmaps as one 2-D array; Cython would add its own language and a much larger generated file
for the same ~110 lines.
Self-contained: setuptools runs it before the package is importable.
"""

from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent

ffibuilder = FFI()
ffibuilder.cdef((HERE / "fastpath.h").read_text())
ffibuilder.set_source(
    "workloads.transport._fastpath",
    (HERE / "fastpath.c").read_text(),
    include_dirs=[str(HERE)],
    extra_compile_args=["-O2", "-std=gnu99"],
)
