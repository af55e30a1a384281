/* fakecuda profiler control: cuProfilerStart and cuProfilerStop only flip a state tests can
 * read (fakecuda_profiler_state); both need a current context, as the driver's do.
 */
#include "fk_internal.h"

static long fk_profiling; /* under the lock */

/* Set the profiler state if a context is current. */
static CUresult
profiler_set(gh_cu_id id, long state)
{
    CUresult res = fk_enter(id, FK_AFTER_INIT);
    fk_context *ctx = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        fk_profiling = state;
    }
    fk_unlock();
    return res;
}

CUresult
fk_ProfilerStart(void)
{
    return profiler_set(GH_CU_ProfilerStart, 1);
}

CUresult
fk_ProfilerStop(void)
{
    return profiler_set(GH_CU_ProfilerStop, 0);
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
