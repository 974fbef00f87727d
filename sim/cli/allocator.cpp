// jemalloc's options, compiled into the executables that link it (CMake
// option OVERLAPSIM_JEMALLOC). Transparent huge pages for heap and metadata:
// a large run (a 1,024-GPU all-to-all holds a million flows) touches its
// memory once, and 2 MiB pages fault 512 times less often than 4 KiB ones
// (page faults were a third of that run's time on the C library's malloc).
// Freed pages are kept, not returned to the system as the run goes (no
// decay): a sweep's threads free and reuse memory point after point, and
// purging it cost 2-5 % of a sweep in system time.
// jemalloc reads this symbol at start-up; MALLOC_CONF in the environment
// still overrides it.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface.
const char* malloc_conf = "thp:always,metadata_thp:always,dirty_decay_ms:-1,muzzy_decay_ms:-1";
}
