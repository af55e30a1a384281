/* fakecuda profiler control: cuProfilerStart and cuProfilerStop only flip a state tests can
 * read (fakecuda_profiler_state); both need a current context, as the driver's do.
 */
#include "fk_internal.h"

static long fk_profiling; /* under the lock */

/* Set the profiler state to *state (a context is current). */
static CUresult
profiler_set(fk_target *target, void *state)
{
    (void)target;
    fk_profiling = *(const long *)state;
    return CUDA_SUCCESS;
}

CUresult
fk_ProfilerStart(void)
{
    static long on = 1;

    return fk_call(GH_CU_ProfilerStart, 1, fk_on_current, NULL, profiler_set, &on);
}

CUresult
fk_ProfilerStop(void)
{
    static long off = 0;

    return fk_call(GH_CU_ProfilerStop, 1, fk_on_current, NULL, profiler_set, &off);
}

long
fakecuda_profiler_state(void)
{
    long state;

    fk_lock();
    state = fk_profiling;
    fk_unlock();
    return state;
}
