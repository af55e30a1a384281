/* Loading a shared library at run time by a list of candidate paths: the one place that
 * calls dlopen/dlsym for the libraries gpuhost finds on its own (NVRTC, NCCL).
 *
 * The paths come from a function of gpuhost._libpaths, called with `major`; the first path
 * that loads and has every required symbol in `names` wins, and its addresses fill `slots`;
 * the optional ones (those a newer version added) are looked up when first used.  The
 * outcome (success, or the list of what was tried and why each failed) is kept for the life
 * of the process.
 */
#ifndef GPUHOST_LIBLOAD_H
#define GPUHOST_LIBLOAD_H

#include <pthread.h>
#include <stdatomic.h>

typedef struct {
    const char *what;         /* "libnvrtc", for messages */
    const char *candidates;   /* the gpuhost._libpaths function that lists the paths */
    int major;                /* its argument */
    const char *const *names; /* symbol names, n_names of them */
    int n_names;
    int n_required;       /* the first n_required must load (0: all); the rest are optional */
    void **slots;         /* filled with the symbols' addresses */
    void *handle;         /* dlopen's, once loaded */
    pthread_mutex_t lock; /* PTHREAD_MUTEX_INITIALIZER */
    atomic_int state;     /* 0 not tried, 1 loaded, 2 failed */
    char error[4096];     /* "<what> was not found. Tried:\n  path: why..." */
    char path[1024];      /* the path that loaded */
} gh_lib;

/* Load `lib` the first time (without the GIL while dlopen runs); 1 if it is loaded, 0 if it
   could not be (lib->error says why; nothing raised), -1 with an exception (the candidate
   list could not be had). */
int gh_lib_ensure(gh_lib *lib);

/* The address of optional symbol `index` (n_required or past) of a loaded `lib`, looked up
   the first time it is asked for; NULL where the library has none (an older version). */
void *gh_lib_optional(gh_lib *lib, int index);

/* The path that loaded, or NULL. */
const char *gh_lib_path(gh_lib *lib);

#endif /* GPUHOST_LIBLOAD_H */
