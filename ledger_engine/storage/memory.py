"""Large freed blocks go back to the system, so a process's memory follows what it holds, not what it once held.

glibc serves a request of at least its mmap threshold by its own mapping, and
unmaps it when freed; smaller ones come from its heaps, which it rarely gives
back. The threshold starts at 128 KiB but rises, by default, to the size of
each mapped block freed, up to 32 MiB. RocksDB's memtables are made of such
blocks, freed at every flush, so after the first flush their successors land
in the heap and stay there: replaying 10^5 commands kept about 38 MiB of freed
memtables resident (docs/adr/0070). Setting the threshold fixes it, which also
stops the rise: blocks of 1 MiB and more are always mapped and returned.
"""

from __future__ import annotations

import ctypes
import functools

M_MMAP_THRESHOLD = -3  # <malloc.h>
MAPPED_FROM_BYTES = 1 << 20


@functools.cache
def return_large_frees() -> bool:
    """Set glibc's mmap threshold once per process; False where the C library is not glibc."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process runs on, without a search for it
    except AttributeError:
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    accepted: int = mallopt(M_MMAP_THRESHOLD, MAPPED_FROM_BYTES)
    return accepted == 1
