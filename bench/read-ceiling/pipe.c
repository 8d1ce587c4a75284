/*
 * The least work a read over loopback TCP can take on this machine: what issue 2's read target
 * (0.8 of min(local disk read, loopback)) asks of the machine rather than of Plinth.
 *
 * Reads FILE in BLOCK pieces with DEPTH reads in flight (O_DIRECT, one thread per read, as a
 * target's storage threads do), sends the pieces in order over one loopback TCP connection, and a
 * child process receives them into one buffer and drops them. No framing, no checksums, no copy
 * in user space. Prints MiB/s from start to the child's last byte; run it after dropping the page
 * cache, beside `iperf3` in the same minute (docs/benchmarks.md, session 18).
 *
 *   usage: pipe FILE [DEPTH=16] [BLOCK_KIB=1024] [DIRECT=1]
 *   build: gcc -O2 -pthread -o pipe pipe.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* One piece in flight: a reader fills it, the sender empties it. Reader i reads pieces i, i + DEPTH, ... */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int full;
    ssize_t length;
    char *bytes;
} Slot;

static int file, depth;
static size_t block;
static long long pieces;
static Slot *slots;

static void *reader(void *argument) {
    long index = (long) argument;
    Slot *slot = &slots[index];
    for (long long piece = index; piece < pieces; piece += depth) {
        pthread_mutex_lock(&slot->lock);
        while (slot->full) pthread_cond_wait(&slot->changed, &slot->lock);
        pthread_mutex_unlock(&slot->lock);
        ssize_t length = pread(file, slot->bytes, block, piece * (long long) block);
        pthread_mutex_lock(&slot->lock);
        slot->length = length;
        slot->full = 1;
        pthread_cond_broadcast(&slot->changed);
        pthread_mutex_unlock(&slot->lock);
    }
    return NULL;
}

static void receive(struct sockaddr_in *address, long long expected) {
    int connection = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(connection, (struct sockaddr *) address, sizeof *address) != 0) _exit(2);
    char *buffer = malloc(1 << 20);
    long long received = 0;
    ssize_t n;
    while ((n = recv(connection, buffer, 1 << 20, 0)) > 0) received += n;
    _exit(received == expected ? 0 : 1);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [DEPTH=16] [BLOCK_KIB=1024] [DIRECT=1]\n", argv[0]);
        return 2;
    }
    depth = argc > 2 ? atoi(argv[2]) : 16;
    block = (size_t) (argc > 3 ? atoi(argv[3]) : 1024) << 10;
    file = open(argv[1], O_RDONLY | (argc > 4 && atoi(argv[4]) == 0 ? 0 : O_DIRECT));
    struct stat status;
    if (file < 0 || fstat(file, &status) != 0 || depth < 1 || block == 0) {
        perror(argv[1]);
        return 1;
    }
    pieces = (status.st_size + (long long) block - 1) / (long long) block;
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (bind(listener, (struct sockaddr *) &address, sizeof address) != 0 || listen(listener, 1) != 0
        || getsockname(listener, (struct sockaddr *) &address, &length) != 0) {
        perror("listen");
        return 1;
    }
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t child = fork();
    if (child == 0) receive(&address, status.st_size);
    int connection = accept(listener, NULL, NULL);
    int one = 1;
    setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    slots = calloc((size_t) depth, sizeof *slots);
    for (long i = 0; i < depth; i++) {
        pthread_mutex_init(&slots[i].lock, NULL);
        pthread_cond_init(&slots[i].changed, NULL);
        pthread_t thread;
        if (posix_memalign((void **) &slots[i].bytes, 4096, block) != 0 || pthread_create(&thread, NULL, reader, (void *) i) != 0) return 1;
        pthread_detach(thread);
    }
    for (long long piece = 0; piece < pieces; piece++) {
        Slot *slot = &slots[piece % depth];
        pthread_mutex_lock(&slot->lock);
        while (!slot->full) pthread_cond_wait(&slot->changed, &slot->lock);
        pthread_mutex_unlock(&slot->lock);
        if (slot->length < 0) {
            perror("pread");
            return 1;
        }
        for (char *next = slot->bytes, *stop = slot->bytes + slot->length; next < stop;) {
            ssize_t sent = send(connection, next, (size_t) (stop - next), 0);
            if (sent <= 0) {
                perror("send");
                return 1;
            }
            next += sent;
        }
        pthread_mutex_lock(&slot->lock);
        slot->full = 0;
        pthread_cond_broadcast(&slot->changed);
        pthread_mutex_unlock(&slot->lock);
    }
    close(connection);
    int child_status;
    waitpid(child, &child_status, 0);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double) (end.tv_sec - start.tv_sec) + (double) (end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%.0f MiB/s%s\n", (double) status.st_size / 1048576.0 / seconds, WEXITSTATUS(child_status) ? " (the receiver got a different length)" : "");
    return WEXITSTATUS(child_status) ? 1 : 0;
}
