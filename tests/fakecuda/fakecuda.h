/* fakecuda: the control API of the libcuda test double (tests/fakecuda).
 *
 * The library exports cuGetProcAddress_v2 and cuGetProcAddress (the driver side, every
 * entry point of csrc/base/cuda_api.h resolved by name) and the fakecuda_ functions below, which
 * tests call through ctypes on the same path the extension loaded, so both share state.
 * Configuration comes from the environment, read once (see fakecuda.c).
 */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <stddef.h>

#define FAKECUDA_API __attribute__((visibility("default")))

/* Make the nth next call (1 = the very next) of entry point `name` ("cuMemGetInfo") return
   `code` without running, for `times` consecutive calls (-1: every call from then on).
   Re-arming a name replaces its fault; several names can be armed at once.
   0, or -1 for an unknown name, nth < 1, code 0, or times 0 / below -1. */
FAKECUDA_API int fakecuda_fail(const char *name, long nth, int code, long times);

/* Disarm every fault armed by fakecuda_fail. */
FAKECUDA_API void fakecuda_clear_faults(void);

/* The call site that received the most recent injected fault (the return address, in
   the calling library's code, of the entry point that failed), then forget it; NULL if no
   fault was injected since the last take.  Tests map it to a source line (dladdr,
   addr2line) to count the distinct call sites a fault sweep reached. */
FAKECUDA_API void *fakecuda_take_fault_site(void);

/* How many times entry point `name` was called since load (or the last fakecuda_reset),
   failed calls included; -1 for an unknown name. */
FAKECUDA_API long fakecuda_calls(const char *name);

/* How many resources of `kind` are alive: "contexts", "allocations" (cuMemAlloc and
   cuMemAllocManaged), "streams", "events", "modules", "host_allocations" (cuMemHostAlloc),
   "registrations" (cuMemHostRegister), "ipc_mappings" (cuIpcOpenMemHandle); -1 for an
   unknown kind. */
FAKECUDA_API long fakecuda_live(const char *kind);

/* How many bytes the live resources of memory `kind` span ("allocations",
   "host_allocations", "registrations", "ipc_mappings": the sizes asked for); -1 for any
   other kind. */
FAKECUDA_API long fakecuda_bytes(const char *kind);

/* Test isolation: disarm every fault, zero every call counter, open the gate and turn
   kernels mode off.  Contexts, other resources (modules) and queued work are left alone. */
FAKECUDA_API void fakecuda_reset(void);

/* The calling thread's context stack depth (0: no current context). */
FAKECUDA_API int fakecuda_thread_stack_depth(void);

/* Asynchronous work (host callbacks, event records, stream waits) runs on one worker thread,
   in the order it was queued on any stream.  Closing the gate holds the worker back: no
   further op starts (one already running finishes) until fakecuda_gate_open; synchronizing
   calls made meanwhile wait. */
FAKECUDA_API void fakecuda_gate_close(void);

/* Let the worker run queued ops again, waking it. */
FAKECUDA_API void fakecuda_gate_open(void);

/* How many ops are queued and not finished (the one running included). */
FAKECUDA_API long fakecuda_pending(void);

/* 1 between cuProfilerStart and cuProfilerStop, else 0. */
FAKECUDA_API long fakecuda_profiler_state(void);

/* Kernels mode (default off; fakecuda_reset turns it off).  While on, cuModuleLoadDataEx
   loads PTX text: each .entry becomes a function with its PTX parameters laid out as the
   driver's cuFuncGetParamInfo reports them (natural alignment, in order), with plausible
   attributes; cuLaunchKernel(Ex) of one checks the launch, runs nothing, and records its
   argument bytes.  Other images stay CUDA_ERROR_NOT_SUPPORTED, as does launching on a
   capturing stream.  Modules loaded stay usable when the mode goes off.  Either call
   forgets the recorded launches. */
FAKECUDA_API void fakecuda_kernels(int enable);

/* How many launches were recorded since fakecuda_kernels was last called. */
FAKECUDA_API long fakecuda_launches(void);

/* The last recorded launch: copies up to `cap` bytes of its arguments (the kernel's
   parameter buffer, each parameter at its offset, padding zero) to `buf` and, unless NULL,
   grid x, y, z, block x, y, z and dynamic shared bytes to `dims`; returns the buffer's
   size, or -1 if no launch was recorded. */
FAKECUDA_API long fakecuda_last_launch(void *buf, long cap, unsigned int dims[7]);

/* More of the last recorded launch: its kernel's entry name (NUL-terminated, cut to `cap`
   bytes) into `name`, its stream handle into *stream, and what cuLaunchKernelEx set into
   `ex` (cooperative, cluster x, y, z; zeros for cuLaunchKernel), each unless NULL; returns
   the name's length, or -1 if no launch was recorded. */
FAKECUDA_API long fakecuda_last_launch_info(char *name, long cap, void **stream,
                                            unsigned int ex[4]);

/* The host bytes behind [addr, addr + len) of a live allocation (device memory included),
   or NULL if no one allocation holds the whole range.  For other test doubles built on this
   one (the fake NCCL), which must move an allocation's bytes where the driver API may not be
   called (inside a host function on the work queue).  The pointer stays valid while the
   allocation lives. */
FAKECUDA_API void *fakecuda_host_view(unsigned long long addr, size_t len);

#endif /* FAKECUDA_H */
