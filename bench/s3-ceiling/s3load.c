/*
 * A lean load generator for small objects: THREADS threads, each on one keep-alive connection, send
 * plain HTTP/1.1 requests for the paths in a file (one per line, already carrying their
 * authorization, e.g. presigned URLs' path and query) and read each whole answer: GETs, or with
 * BODY_FILE PUTs of that file's bytes (at most 1 MiB, sent with the head in one write). No TLS, no
 * signing, no output files: it costs a server's machine far less per request than curl, so it tells
 * a server's own limit from curl's (design note 64). Prints requests/s and how many answers were not 200.
 *
 *   usage: s3load HOST_PORT PATHS_FILE [THREADS=16] [BODY_FILE]
 *   build: gcc -O2 -pthread -o s3load s3load.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in address;
static char host[64];
static char **paths;
static char *body; /* PUT this, or GET when NULL */
static size_t body_length;
static int path_count, thread_count;
static long failures;
static pthread_mutex_t failures_lock = PTHREAD_MUTEX_INITIALIZER;

/* Reads one answer (headers, then Content-Length bytes); returns its status, or -1 if the connection broke. */
static int read_answer(int fd, char *buffer, size_t size) {
    size_t filled = 0;
    char *end;
    buffer[0] = 0;
    while ((end = strstr(buffer, "\r\n\r\n")) == NULL) {
        if (filled == size - 1) return -1;
        ssize_t n = recv(fd, buffer + filled, size - 1 - filled, 0);
        if (n <= 0) return -1;
        filled += (size_t) n;
        buffer[filled] = 0;
    }
    int status = atoi(buffer + 9);
    long length = 0;
    for (char *line = strstr(buffer, "\r\n") + 2; line < end; line = strstr(line, "\r\n") + 2) {
        if (strncasecmp(line, "Content-Length:", 15) == 0) length = atol(line + 15);
    }
    long left = length - (long) (filled - (size_t) (end + 4 - buffer));
    while (left > 0) {
        ssize_t n = recv(fd, buffer, (size_t) left < size ? (size_t) left : size, 0);
        if (n <= 0) return -1;
        left -= n;
    }
    return status;
}

static void *load(void *argument) {
    long index = (long) argument;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *) &address, sizeof address) != 0) {
        perror("connect");
        exit(1);
    }
    size_t request_size = 8192 + body_length;
    char *request = malloc(request_size), *answer = malloc(1 << 20);
    for (int i = (int) index; i < path_count; i += thread_count) {
        size_t n = body ? (size_t) snprintf(request, 8192, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %zu\r\n\r\n", paths[i], host,
                                            body_length)
                        : (size_t) snprintf(request, 8192, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", paths[i], host);
        if (n >= 8192) {
            fprintf(stderr, "a path of %zu bytes is too long\n", strlen(paths[i]));
            exit(1);
        }
        if (body) {
            memcpy(request + n, body, body_length);
            n += body_length;
        }
        for (size_t sent = 0; sent < n;) {
            ssize_t written = send(fd, request + sent, n - sent, MSG_NOSIGNAL);
            if (written <= 0) {
                perror("send");
                exit(1);
            }
            sent += (size_t) written;
        }
        int status = read_answer(fd, answer, 1 << 20);
        if (status < 0) {
            fprintf(stderr, "the connection broke\n");
            exit(1);
        }
        if (status != 200) {
            pthread_mutex_lock(&failures_lock);
            failures++;
            pthread_mutex_unlock(&failures_lock);
        }
    }
    close(fd);
    free(answer);
    free(request);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s HOST:PORT PATHS_FILE [THREADS=16] [BODY_FILE]\n", argv[0]);
        return 2;
    }
    snprintf(host, sizeof host, "%s", argv[1]);
    char *colon = strrchr(argv[1], ':');
    if (!colon) {
        fprintf(stderr, "%s: HOST:PORT, e.g. 127.0.0.1:9000\n", argv[1]);
        return 2;
    }
    *colon = 0;
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t) atoi(colon + 1));
    inet_pton(AF_INET, argv[1], &address.sin_addr);
    thread_count = argc > 3 ? atoi(argv[3]) : 16;
    if (argc > 4) {
        FILE *body_file = fopen(argv[4], "rb");
        if (!body_file) {
            perror(argv[4]);
            return 1;
        }
        body = malloc((1 << 20) + 1);
        body_length = fread(body, 1, (1 << 20) + 1, body_file);
        if (body_length > 1 << 20) {
            fprintf(stderr, "%s: more than 1 MiB\n", argv[4]);
            return 2;
        }
        fclose(body_file);
    }
    FILE *file = fopen(argv[2], "r");
    if (!file) {
        perror(argv[2]);
        return 1;
    }
    size_t capacity = 1024;
    paths = malloc(capacity * sizeof *paths);
    char line[8192];
    while (fgets(line, sizeof line, file)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line) continue;
        if ((size_t) path_count == capacity) paths = realloc(paths, (capacity *= 2) * sizeof *paths);
        paths[path_count++] = strdup(line);
    }
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pthread_t *threads = calloc((size_t) thread_count, sizeof *threads);
    for (long i = 0; i < thread_count; i++) pthread_create(&threads[i], NULL, load, (void *) i);
    for (int i = 0; i < thread_count; i++) pthread_join(threads[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double) (end.tv_sec - start.tv_sec) + (double) (end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%.0f requests/s, %ld not 200\n", path_count / seconds, failures);
    return failures ? 1 : 0;
}
