/*
 * clockshim: an LD_PRELOAD object that shifts a process's wall clock by an offset a test can change
 * at runtime, to simulate a node whose clock is stepped (NTP step, operator `date -s`, VM resume).
 *
 * Which symbols: Debian's Redis 7.0 imports exactly `clock_gettime`, `gettimeofday` and `time`
 * (`nm -D $(which redis-server)`; no `__clock_gettime`). Key expiry, PTTL, TIME and uptime come from
 * `ustime()`/`mstime()` (gettimeofday) and `time()`; its timers use `getMonotonicUs()`, which in this
 * build ("monotonic clock: POSIX clock_gettime" in its log) is clock_gettime(CLOCK_MONOTONIC). A real
 * wall-clock step moves the CLOCK_REALTIME family and CLOCK_TAI and leaves the monotonic clocks
 * alone, so only those get the offset here.
 *
 * Why raw syscalls: the first clock read in a redis-server process is jemalloc's (its
 * clock_gettime(CLOCK_MONOTONIC_COARSE)), made from inside the process's first malloc, which a
 * library constructor makes before main. libfaketime's interposer sets itself up with dlsym and
 * allocations on its first call, so it re-enters itself there ("Unexpected recursive calls to
 * clock_gettime()") and Redis never starts. This shim never allocates and never resolves symbols:
 * the real time comes from syscall(2), the offset file is found with getenv(3) and mapped with
 * open(2)/fstat(2)/mmap(2), none of which allocate. (The cost: clock reads skip the vDSO.)
 *
 * The offset file: named by $CLOCKSHIM_FILE, at least 8 bytes; its first 8 bytes are a signed 64-bit
 * integer in host byte order, the offset in milliseconds added to the wall clock. It is mapped shared
 * on the first clock read, so a new value is seen by the next read; writers should store it with one
 * aligned 8-byte store (e.g. into their own shared mapping of the file) so a read never sees half of
 * it. Without $CLOCKSHIM_FILE every call passes through unchanged; with it set but unusable the
 * process aborts with a message rather than run silently unshifted.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const int64_t no_offset = 0;
/* NULL until the first clock read; then the mapped offset, or &no_offset. */
static const int64_t *offset_ms;

static void die(const char *why) {
    static const char prefix[] = "clockshim: cannot use $CLOCKSHIM_FILE: ";
    (void)!write(2, prefix, sizeof prefix - 1);
    (void)!write(2, why, strlen(why));
    (void)!write(2, "\n", 1);
    abort();
}

static const int64_t *map_offset(void) {
    const char *path = getenv("CLOCKSHIM_FILE");
    if (path == NULL || path[0] == '\0')
        return &no_offset;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("open failed");
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(int64_t))
        die("not a file of at least 8 bytes"); /* a read past EOF would SIGBUS */
    void *p = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        die("mmap failed");
    return p;
}

/* The offset in milliseconds, mapping the file on the first call. */
static int64_t current_offset_ms(void) {
    const int64_t *p = __atomic_load_n(&offset_ms, __ATOMIC_ACQUIRE);
    if (p == NULL) {
        /* Threads racing here each map the file; one mapping wins, the others are unmapped. */
        const int64_t *mine = map_offset();
        const int64_t *expected = NULL;
        if (__atomic_compare_exchange_n(&offset_ms, &expected, mine, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            p = mine;
        } else {
            if (mine != &no_offset)
                munmap((void *)mine, sizeof(int64_t));
            p = expected;
        }
    }
    return __atomic_load_n(p, __ATOMIC_RELAXED); /* an aligned 8-byte load: never torn */
}

static int is_wall_clock(clockid_t id) {
    return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_REALTIME_ALARM ||
           id == CLOCK_TAI;
}

/* Adds `offset` (in `unit`s per second) to the time *sec + *frac / unit, keeping 0 <= *frac < unit:
 * the fields of a timespec (unit 10^9) or a timeval (10^6; suseconds_t is a long), shifted in place.
 * In int64 nanoseconds this holds for clocks and offsets up to the year 2262. */
static void shift(time_t *sec, long *frac, int64_t unit, int64_t offset) {
    int64_t total = (int64_t)*sec * unit + *frac + offset;
    int64_t s = total / unit, f = total % unit;
    if (f < 0) {
        f += unit;
        s -= 1;
    }
    *sec = s;
    *frac = f;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    long rc = syscall(SYS_clock_gettime, id, ts);
    if (rc != 0 || !is_wall_clock(id))
        return (int)rc;
    shift(&ts->tv_sec, &ts->tv_nsec, 1000000000, current_offset_ms() * 1000000);
    return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    long rc = syscall(SYS_gettimeofday, tv, tz);
    if (rc != 0) /* glibc declares tv non-null, so no NULL check */
        return (int)rc;
    shift(&tv->tv_sec, &tv->tv_usec, 1000000, current_offset_ms() * 1000);
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out != NULL)
        *out = ts.tv_sec;
    return ts.tv_sec;
}
