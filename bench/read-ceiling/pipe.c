/*
 * The least work a read over loopback TCP can take on this machine: what issue 2's read target
 * (0.8 of min(local disk read, loopback)) asks of the machine rather than of Plinth.
 *
 * Reads FILE in BLOCK pieces with DEPTH reads in flight (O_DIRECT, one thread per read, as a
 * target's storage threads do), sends the pieces in order over one loopback TCP connection, and a
 * child process receives them into one buffer and drops them. No framing, no checksums, no copy
 * in user space. Prints MiB/s from start to the child's last byte; run it after dropping the page
 * cache, beside `iperf3` in the same minute (docs/benchmarks.md, "Read ceiling").
 *
 * With CONNECTIONS > 1 each reader sends its own piece as soon as it has it, over connection
 * (piece % CONNECTIONS), in no particular order, to as many receiving threads: the least work for
 * a client that spreads a read over several connections, as Plinth's does (design note 12), and
 * more than it may do, since Plinth's reader takes the pieces in order.
 *
 *   usage: pipe FILE [DEPTH=16] [BLOCK_KIB=1024] [DIRECT=1] [CONNECTIONS=1]
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

static int file, depth, connections = 1;
static size_t block;
static long long pieces;
static Slot *slots;
/* With several connections: each one's socket, and a lock so that one piece goes out whole. */
static int *sockets;
static pthread_mutex_t *socketLocks;

static int sendAll(int connection, const char *next, const char *stop) {
    while (next < stop) {
        ssize_t sent = send(connection, next, (size_t) (stop - next), 0);
        if (sent <= 0) return -1;
        next += sent;
    }
    return 0;
}

/* A reader that sends its own pieces (CONNECTIONS > 1). */
static void *readerSending(void *argument) {
    long index = (long) argument;
    char *bytes = slots[index].bytes;
    for (long long piece = index; piece < pieces; piece += depth) {
        ssize_t length = pread(file, bytes, block, piece * (long long) block);
        int to = (int) (piece % connections);
        pthread_mutex_lock(&socketLocks[to]);
        int failed = length < 0 || sendAll(sockets[to], bytes, bytes + length) != 0;
        pthread_mutex_unlock(&socketLocks[to]);
        if (failed) {
            perror("pread or send");
            exit(1);
        }
    }
    return NULL;
}

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

static long long receivedBytes[64];

static void *receiveOne(void *argument) {
    long index = (long) argument;
    char *buffer = malloc(1 << 20);
    ssize_t n;
    while ((n = recv(sockets[index], buffer, 1 << 20, 0)) > 0) receivedBytes[index] += n;
    return NULL;
}

/* The child: CONNECTIONS connections, each drained by a thread of its own. */
static void receive(struct sockaddr_in *address, long long expected) {
    sockets = calloc((size_t) connections, sizeof *sockets);
    pthread_t *threads = calloc((size_t) connections, sizeof *threads);
    for (long i = 0; i < connections; i++) {
        sockets[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(sockets[i], (struct sockaddr *) address, sizeof *address) != 0) _exit(2);
    }
    for (long i = 0; i < connections; i++) pthread_create(&threads[i], NULL, receiveOne, (void *) i);
    long long received = 0;
    for (long i = 0; i < connections; i++) {
        pthread_join(threads[i], NULL);
        received += receivedBytes[i];
    }
    _exit(received == expected ? 0 : 1);
}

/* One connection: readers fill their slots, this thread sends the pieces in order. */
static int sendInOrder(int connection) {
    for (long i = 0; i < depth; i++) {
        pthread_mutex_init(&slots[i].lock, NULL);
        pthread_cond_init(&slots[i].changed, NULL);
        pthread_t thread;
        if (posix_memalign((void **) &slots[i].bytes, 4096, block) != 0 || pthread_create(&thread, NULL, reader, (void *) i) != 0) return -1;
        pthread_detach(thread);
    }
    for (long long piece = 0; piece < pieces; piece++) {
        Slot *slot = &slots[piece % depth];
        pthread_mutex_lock(&slot->lock);
        while (!slot->full) pthread_cond_wait(&slot->changed, &slot->lock);
        pthread_mutex_unlock(&slot->lock);
        if (slot->length < 0) {
            perror("pread");
            return -1;
        }
        if (sendAll(connection, slot->bytes, slot->bytes + slot->length) != 0) {
            perror("send");
            return -1;
        }
        pthread_mutex_lock(&slot->lock);
        slot->full = 0;
        pthread_cond_broadcast(&slot->changed);
        pthread_mutex_unlock(&slot->lock);
    }
    return 0;
}

/* Several connections: each reader sends its own pieces. */
static int sendAsRead(void) {
    pthread_t *threads = calloc((size_t) depth, sizeof *threads);
    for (long i = 0; i < depth; i++) {
        if (posix_memalign((void **) &slots[i].bytes, 4096, block) != 0
            || pthread_create(&threads[i], NULL, readerSending, (void *) i) != 0) return -1;
    }
    for (long i = 0; i < depth; i++) pthread_join(threads[i], NULL);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [DEPTH=16] [BLOCK_KIB=1024] [DIRECT=1] [CONNECTIONS=1]\n", argv[0]);
        return 2;
    }
    depth = argc > 2 ? atoi(argv[2]) : 16;
    connections = argc > 5 ? atoi(argv[5]) : 1;
    if (connections < 1 || connections > 64) {
        fprintf(stderr, "CONNECTIONS: 1 to 64\n");
        return 2;
    }
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
    if (bind(listener, (struct sockaddr *) &address, sizeof address) != 0 || listen(listener, connections) != 0
        || getsockname(listener, (struct sockaddr *) &address, &length) != 0) {
        perror("listen");
        return 1;
    }
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t child = fork();
    if (child == 0) receive(&address, status.st_size);
    int one = 1;
    sockets = calloc((size_t) connections, sizeof *sockets);
    socketLocks = calloc((size_t) connections, sizeof *socketLocks);
    for (int i = 0; i < connections; i++) {
        sockets[i] = accept(listener, NULL, NULL);
        setsockopt(sockets[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_mutex_init(&socketLocks[i], NULL);
    }
    slots = calloc((size_t) depth, sizeof *slots);
    if ((connections == 1 ? sendInOrder(sockets[0]) : sendAsRead()) != 0) return 1;
    for (int i = 0; i < connections; i++) close(sockets[i]);
    int child_status;
    waitpid(child, &child_status, 0);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double) (end.tv_sec - start.tv_sec) + (double) (end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%.0f MiB/s%s\n", (double) status.st_size / 1048576.0 / seconds, WEXITSTATUS(child_status) ? " (the receiver got a different length)" : "");
    return WEXITSTATUS(child_status) ? 1 : 0;
}
