// Preloaded into capture under valgrind by bench/instructions.py, never into the product.
// valgrind 3.19 (Debian 12) removes its own signals from the mask a program passes to sigsuspend(2)
// by writing into that mask, and libdispatch's signal thread passes one in read-only memory: valgrind
// then dies of SIGSEGV ("the 'impossible' happened") whenever that thread starts. This sigsuspend
// hands the kernel a writable copy; the system call and its effect are the same.
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int sigsuspend(const sigset_t *mask) {
  sigset_t copy = *mask;
  // The kernel's sigset is 8 bytes on Linux (_NSIG / 8), what glibc passes too.
  return (int)syscall(SYS_rt_sigsuspend, &copy, (size_t)8);
}
