// ThreadSanitizer support for oneTBB: an ITT "collector" library that turns oneTBB's ITT
// synchronization notifications into TSan happens-before annotations.
//
// libtbb is not built with -fsanitize=thread, so TSan does not see the synchronization inside it
// (task deques, stealing, waiting): every task run by another thread than the one that made it
// looked like a data race, in TBB's headers and in our code alike. oneTBB announces that
// synchronization through the ITT API for Intel's own race checker: it releases an address when
// it hands work over (spawn, child completion) and acquires it when it takes work or ends a wait.
// libtbb loads the library named by INTEL_LIBITTNOTIFY64 and binds the ITT functions of the
// groups in INTEL_ITTNOTIFY_GROUPS to the ones it exports; tests/CMakeLists.txt sets both for
// the tests of a TSan build (with TBB_USE_PROFILING_TOOLS=2, so that the inline code in TBB's
// headers notifies too).
extern "C" {

void __tsan_acquire(void* addr);
void __tsan_release(void* addr);

// Its presence marks an ITT API version 1 collector: the functions below are bound by name.
__attribute__((visibility("default"))) void __itt_api_version() {}

__attribute__((visibility("default"))) void __itt_sync_releasing(void* addr) {
  __tsan_release(addr);
}
__attribute__((visibility("default"))) void __itt_sync_acquired(void* addr) {
  __tsan_acquire(addr);
}
__attribute__((visibility("default"))) void __itt_fsync_releasing(void* addr) {
  __tsan_release(addr);
}
__attribute__((visibility("default"))) void __itt_fsync_acquired(void* addr) {
  __tsan_acquire(addr);
}
// Announced, but no ordering of their own.
__attribute__((visibility("default"))) void __itt_sync_prepare(void*) {}
__attribute__((visibility("default"))) void __itt_sync_cancel(void*) {}
__attribute__((visibility("default"))) void __itt_fsync_prepare(void*) {}
__attribute__((visibility("default"))) void __itt_fsync_cancel(void*) {}
__attribute__((visibility("default"))) void __itt_sync_create(void*, const char*, const char*,
                                                              int) {}
__attribute__((visibility("default"))) void __itt_sync_rename(void*, const char*) {}
__attribute__((visibility("default"))) void __itt_sync_destroy(void*) {}
}
