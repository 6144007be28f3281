/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * map-race: the guest side of the guest suite's map-race boot.
 *
 *   map-race TOGGLE-CONFIG READ-RESOURCE TOGGLES
 *
 * CPU 0 turns the memory decoding of one PCI device (its sysfs config file,
 * TOGGLE-CONFIG) off and on TOGGLES times; each change maps or unmaps that
 * device's BAR, a change of the guest-physical memory map.  Meanwhile CPU 1
 * reads the first register of another device (its sysfs BAR file,
 * READ-RESOURCE, mapped) as fast as it can and counts the reads that do not
 * return what the first read returned.  The register does not change, so on
 * a correct machine that count is 0 whatever the interleaving.
 *
 * The toggles start once the reader reads; DURING counts its reads while
 * they ran.  Prints one line:
 * "reads N wrong N first 0xV want 0xV toggles N during N".
 * Exit status 0 when it ran (whatever the count), 1 when it could not.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct shared {
    volatile int ready, stop;
    volatile uint64_t live;     /* reads so far, as the reader goes */
    volatile uint64_t reads, wrong;
    volatile uint32_t first_wrong;
};

static int pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set);
}

static void reader(struct shared *sh, const volatile uint32_t *reg, uint32_t want)
{
    uint64_t reads = 0, wrong = 0;

    if (pin(1) < 0) {
        perror("map-race: CPU 1");
        _exit(1);
    }
    sh->ready = 1;
    while (!sh->stop) {
        uint32_t v = reg[0];

        sh->live = ++reads;
        if (v != want && wrong++ == 0) {
            sh->first_wrong = v;
        }
    }
    sh->reads = reads;
    sh->wrong = wrong;
    _exit(0);
}

int main(int argc, char **argv)
{
    struct shared *sh;
    const volatile uint32_t *reg;
    unsigned char on, off;
    long toggles;
    int cfd, rfd, status;
    uint32_t want;
    uint64_t before, during;
    pid_t pid;

    if (argc != 4 || (toggles = atol(argv[3])) <= 0) {
        fprintf(stderr, "usage: map-race TOGGLE-CONFIG READ-RESOURCE TOGGLES\n");
        return 1;
    }
    cfd = open(argv[1], O_RDWR);
    rfd = open(argv[2], O_RDWR | O_SYNC);
    if (cfd < 0 || rfd < 0) {
        perror("map-race: open");
        return 1;
    }
    reg = mmap(NULL, 4096, PROT_READ, MAP_SHARED, rfd, 0);
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (reg == MAP_FAILED || sh == MAP_FAILED) {
        perror("map-race: mmap");
        return 1;
    }
    memset(sh, 0, sizeof(*sh));
    if (pread(cfd, &on, 1, 4) != 1 || !(on & 2)) {
        fprintf(stderr, "map-race: %s: memory decoding is not on\n", argv[1]);
        return 1;
    }
    off = on & ~2;
    want = reg[0];
    pid = fork();
    if (pid < 0) {
        perror("map-race: fork");
        return 1;
    }
    if (pid == 0) {
        reader(sh, reg, want);
    }
    if (pin(0) < 0) {
        perror("map-race: CPU 0");
    }
    while (!sh->ready) {        /* the reader is pinned and reading */
        sched_yield();
    }
    before = sh->live;
    for (long i = 0; i < toggles; i++) {
        if (pwrite(cfd, &off, 1, 4) != 1 || pwrite(cfd, &on, 1, 4) != 1) {
            perror("map-race: config write");
            toggles = i;
            break;
        }
    }
    during = sh->live - before;
    sh->stop = 1;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "map-race: the reader on CPU 1 failed\n");
        return 1;
    }
    printf("reads %llu wrong %llu first 0x%x want 0x%x toggles %ld during %llu\n",
           (unsigned long long)sh->reads, (unsigned long long)sh->wrong,
           sh->first_wrong, want, toggles, (unsigned long long)during);
    return 0;
}
