"""A Triton kernel that stores far outside its buffer: the ``cuda_illegal_address`` drill's
fault (the GPU raises ``cudaErrorIllegalAddress``, as a kernel with a bad index does).

Imported only by a worker that runs that drill: it needs torch's Triton and a CUDA GPU.
"""

import triton
import triton.language as tl

# Elements past the buffer's start: ~4 TiB of float32 away, outside any allocation.
OUT_OF_BOUNDS = 1 << 40


@triton.jit
def _store_one(ptr, offset):
    tl.store(ptr + offset, 1.0)


def store_out_of_bounds(buffer) -> None:  # noqa: ANN001 (a CUDA tensor; torch is not imported here)
    """Launch one program that writes ``1.0`` at ``buffer + OUT_OF_BOUNDS`` elements."""
    _store_one[(1,)](buffer, OUT_OF_BOUNDS)
