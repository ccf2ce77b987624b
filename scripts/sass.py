#!/usr/bin/env python3
"""Register counts, spills and SASS of a method room's kernel, with no GPU (see docs/CONTRIBUTING.md).

    scripts/sass.py ROOM [f64|f32] [sm_90] [extra NVRTC options]
    scripts/sass.py cb_spmv f64          # -> target/sass/cb_spmv-f64.cubin(.sass), resource usage

Compiles the prelude plus `crates/spmvkit/src/methods/ROOM/kernel.cu` (or a .cu path) to a
CUBIN with the pinned NVRTC, with the options the runtime uses, then prints `cuobjdump
--dump-resource-usage` (registers, stack = spills, shared memory per kernel) and writes the
`nvdisasm` listing. The tools come from pip wheels installed once under target/sass-tools:
nvidia-cuda-nvrtc==13.0.88 (as .ci/nvrtc-check), nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm.
"""
import ctypes
import os
import subprocess
import sys

root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                      check=True).stdout.strip()
tools = os.environ.get("SASS_TOOLS_DIR", os.path.join(root, "target", "sass-tools"))
lib = os.path.join(tools, "nvidia", "cu13", "lib")
bin_dir = os.path.join(tools, "nvidia", "cu13", "bin")
if not os.path.exists(os.path.join(bin_dir, "nvdisasm")):
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--no-deps", "--target", tools, "nvidia-cuda-nvrtc==13.0.88",
                    "nvidia-cuda-cuobjdump", "nvidia-cuda-nvdisasm"], check=True)
    for f in os.listdir(bin_dir):
        os.chmod(os.path.join(bin_dir, f), 0o755)
if os.path.join(lib) not in os.environ.get("LD_LIBRARY_PATH", ""):
    # libnvrtc loads its builtins library through the loader path: re-exec with it set.
    os.environ["LD_LIBRARY_PATH"] = lib + ":" + os.environ.get("LD_LIBRARY_PATH", "")
    os.execv(sys.executable, [sys.executable] + sys.argv)

if len(sys.argv) < 2:
    sys.exit(__doc__)
room = sys.argv[1]
prec = sys.argv[2] if len(sys.argv) > 2 else "f64"
arch = sys.argv[3] if len(sys.argv) > 3 else "sm_90"
src_dir = os.path.join(root, "crates", "spmvkit", "src")
kpath = room if room.endswith(".cu") else os.path.join(src_dir, "methods", room, "kernel.cu")
prelude = open(os.path.join(src_dir, "gpu", "prelude.cu")).read()
src = f'#line 1 "prelude.cu"\n{prelude}\n#line 1 "kernel.cu"\n{open(kpath).read()}\n'

nvrtc = ctypes.CDLL(os.path.join(lib, "libnvrtc.so.13"))
prog = ctypes.c_void_p()
if nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.cu", 0, None, None):
    sys.exit("nvrtcCreateProgram failed")
opts = [f"--gpu-architecture={arch}", "-DSPMVKIT_REAL_F64" if prec == "f64" else "-DSPMVKIT_REAL_F32",
        "--std=c++17", "--device-as-default-execution-space"] + sys.argv[4:]
arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
rc = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
size = ctypes.c_size_t()
nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
nvrtc.nvrtcGetProgramLog(prog, log)
if rc:
    sys.exit(log.value.decode())
nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size))
cubin = ctypes.create_string_buffer(size.value)
nvrtc.nvrtcGetCUBIN(prog, cubin)
out_dir = os.path.join(root, "target", "sass")
os.makedirs(out_dir, exist_ok=True)
name = os.path.basename(os.path.dirname(kpath)) if not room.endswith(".cu") else os.path.splitext(os.path.basename(room))[0]
out = os.path.join(out_dir, f"{name}-{prec}.cubin")
open(out, "wb").write(cubin.raw)
print(subprocess.run([os.path.join(bin_dir, "cuobjdump"), "--dump-resource-usage", out],
                     capture_output=True, text=True).stdout)
sass = subprocess.run([os.path.join(bin_dir, "nvdisasm"), "-c", out], capture_output=True,
                      text=True).stdout
open(out + ".sass", "w").write(sass)
print("SASS:", out + ".sass")
