#pragma once
// The allocator's per-thread cache (jemalloc's tcache). Every thread that allocates keeps one:
// its slot arrays plus the freed objects parked in them, RSS kept for as long as the thread
// lives even when it sleeps. A thread that allocates rarely (a timer, a file watcher, an accept
// loop, the informer of a configuration kind) gains nothing from it, so it gives it up with
// disableThreadCache() and takes its few allocations from the shared arena instead, which
// lowers the adapter's peak RSS.
//
// Threads: acts on the calling thread only.

namespace mka {

// Turns the calling thread's allocator cache off (what it holds goes back to the arena).
// Returns false, and does nothing, when the process does not run on jemalloc (the test and
// sanitizer builds).
bool disableThreadCache();

// Whether the calling thread has an allocator cache: false after disableThreadCache(), and
// always false without jemalloc. For tests.
bool threadCacheEnabled();

}  // namespace mka
