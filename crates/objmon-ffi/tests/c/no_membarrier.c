/* no_membarrier PROGRAM [ARGS...]: runs PROGRAM with the membarrier(2) system call denied
 * (EPERM), as a seccomp sandbox or an old kernel would. objmon's biased revocation then
 * falls back to handshakes with the bias owner; .ci/valgrind.sh runs the C
 * toy VM under it for `biased` and `fable`.
 *
 * A classic-BPF seccomp filter: on this build's architecture, membarrier -> EPERM, every
 * other call allowed; a call made under another architecture's convention (x32, i386
 * emulation) is allowed unchanged, as it cannot be membarrier of ours. Linux only. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#else
#error "no_membarrier: add this architecture's AUDIT_ARCH_* value"
#endif

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: no_membarrier PROGRAM [ARGS...]\n");
        return 2;
    }
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {
        .len = (unsigned short)(sizeof filter / sizeof filter[0]),
        .filter = filter,
    };
    /* Required to install a filter without CAP_SYS_ADMIN; also inherited by the exec. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("no_membarrier: PR_SET_NO_NEW_PRIVS");
        return 2;
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("no_membarrier: PR_SET_SECCOMP");
        return 2;
    }
    /* Check that the filter is in force before trusting a run under it. */
    if (syscall(__NR_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0) != -1 || errno != EPERM) {
        fprintf(stderr, "no_membarrier: membarrier is not denied\n");
        return 2;
    }
    execvp(argv[1], argv + 1);
    perror("no_membarrier: exec");
    return 127;
}
