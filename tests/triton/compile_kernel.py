"""compile_kernel.py OUTDIR NAME...: compiles kernels.py's kernels for sm_90 without a GPU
and writes OUTDIR/NAME.ptx and OUTDIR/NAME.cubin (Triton's output: asm["ptx"], asm["cubin"]).
The script of test_triton.py's python specs, and what it runs under Triton's dump and
override environments (TRITON_KERNEL_DUMP, TRITON_KERNEL_OVERRIDE)."""
import os
import sys

import kernels

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name in sys.argv[2:]:
    k = kernels.compile(name)
    with open(os.path.join(out, name + ".ptx"), "w") as f:
        f.write(k.asm["ptx"])
    with open(os.path.join(out, name + ".cubin"), "wb") as f:
        f.write(k.asm["cubin"])
