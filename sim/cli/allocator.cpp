// jemalloc's options, compiled into the executables that link it (CMake
// option OVERLAPSIM_JEMALLOC). Freed pages are kept, not returned to the
// system as the run goes (no decay): a sweep's threads free and reuse memory
// point after point, and purging it cost 2-5 % of a sweep in system time.
// Huge pages are left to the system's policy: on a VM that reports free
// memory to its host, a fresh 2 MiB page is unbacked there, and the 1,024-GPU
// all-to-all's 0.6 GB took 1.3 s of system time in huge pages against 0.2 s
// in 4 KiB ones (docs/performance.md). MALLOC_CONF=thp:always asks for them.
// jemalloc reads this symbol at start-up; MALLOC_CONF in the environment
// still overrides it.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface.
const char* malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1";
}
