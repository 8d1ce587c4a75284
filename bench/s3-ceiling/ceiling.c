/*
 * The least work an S3-shaped server can do on this machine, to tell what the S3 targets ask of the
 * machine from what they ask of Plinth (as bench/fuse-ceiling/memfs.c does for the mount).
 *
 * An HTTP/1.1 server for the requests bench/s3-compare.sh sends: PUT /bucket, PUT /bucket/key,
 * GET /bucket/key. It does less than any real object store: no authentication (the SigV4 headers
 * curl sends are ignored), no metadata, no checksums, no fsync; a PUT writes the body to a temporary
 * file and renames it over the key (so a GET sees an old or a new object), a GET sends the file
 * with sendfile(2), which copies nothing in this process, after asking the kernel for sequential
 * read-ahead. One thread per connection, blocking I/O:
 * the load generator keeps a few connections busy, so there is nothing to multiplex.
 *
 *   usage: ceiling PORT DIR     (listens on 127.0.0.1:PORT, keeps objects as DIR/BUCKET/KEY)
 *   build: gcc -O2 -pthread -o ceiling ceiling.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_MAX 16384
#define BODY_BUFFER (1 << 20)

static const char *root;

/* Writes all of data or fails. */
static int send_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t n = send(fd, data, length, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        data += n;
        length -= (size_t) n;
    }
    return 0;
}

static int reply(int fd, const char *status, const char *extra_headers) {
    char head[256];
    int n = snprintf(head, sizeof head, "HTTP/1.1 %s\r\nContent-Length: 0\r\n%s\r\n", status, extra_headers);
    return send_all(fd, head, (size_t) n);
}

/* The header's value, or NULL; name includes the colon. */
static const char *header(const char *headers, const char *name) {
    size_t length = strlen(name);
    for (const char *line = headers; line && *line; line = strstr(line, "\r\n") ? strstr(line, "\r\n") + 2 : NULL) {
        if (strncasecmp(line, name, length) == 0) {
            const char *value = line + length;
            while (*value == ' ') value++;
            return value;
        }
    }
    return NULL;
}

/* A path of one or two plain segments ("/bucket" or "/bucket/key"), else -1: nothing escapes root. */
static int object_path(const char *target, char *path, size_t size, int *has_key) {
    const char *query = strchr(target, '?');
    size_t length = query ? (size_t) (query - target) : strlen(target);
    if (length < 2 || target[0] != '/' || strstr(target, "..")) return -1;
    const char *slash = memchr(target + 1, '/', length - 1);
    *has_key = slash != NULL && slash + 1 < target + length;
    if (slash && memchr(slash + 1, '/', (size_t) (target + length - slash - 1))) return -1;
    if (snprintf(path, size, "%s%.*s", root, (int) length, target) >= (int) size) return -1;
    return 0;
}

/* Receives a PUT's body (part of it may already be in buffer) into a temporary file, then renames it. */
static int put_object(int fd, const char *path, long long length, char *buffer, size_t buffered) {
    char temporary[4300];
    snprintf(temporary, sizeof temporary, "%s.part-%lx", path, (unsigned long) pthread_self());
    int out = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) return -1;
    int failed = 0;
    long long left = length;
    size_t have = buffered < (size_t) left ? buffered : (size_t) left;
    if (have > 0 && write(out, buffer, have) != (ssize_t) have) failed = 1;
    left -= (long long) have;
    char *body = malloc(BODY_BUFFER);
    while (!failed && left > 0) {
        ssize_t n = recv(fd, body, left < BODY_BUFFER ? (size_t) left : BODY_BUFFER, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || write(out, body, (size_t) n) != n) failed = 1;
        else left -= n;
    }
    free(body);
    close(out);
    if (failed || rename(temporary, path) != 0) {
        unlink(temporary);
        return -1;
    }
    return 0;
}

static int get_object(int fd, const char *path) {
    int in = open(path, O_RDONLY);
    if (in < 0) return reply(fd, "404 Not Found", "");
    struct stat status;
    fstat(in, &status);
    /* a larger read-ahead window: 1,830-1,915 MiB/s instead of 1,260-1,440 for one cold 64 MiB stream here */
    posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
    char head[256];
    int n = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\nContent-Type: application/octet-stream\r\n\r\n",
                     (long long) status.st_size);
    int failed = send_all(fd, head, (size_t) n);
    off_t offset = 0;
    while (!failed && offset < status.st_size) {
        ssize_t sent = sendfile(fd, in, &offset, (size_t) (status.st_size - offset));
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) failed = 1;
    }
    close(in);
    return failed ? -1 : 0;
}

static void *serve(void *argument) {
    int fd = (int) (long) argument;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char *buffer = malloc(HEADER_MAX + 1);
    size_t filled = 0;
    for (;;) {
        char *end;
        buffer[filled] = 0;
        while ((end = strstr(buffer, "\r\n\r\n")) == NULL) {
            if (filled == HEADER_MAX) goto done;
            ssize_t n = recv(fd, buffer + filled, HEADER_MAX - filled, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) goto done;
            filled += (size_t) n;
            buffer[filled] = 0;
        }
        end[2] = 0; /* the headers end with their last CRLF */
        size_t consumed = (size_t) (end + 4 - buffer);
        char method[8], target[4096];
        if (sscanf(buffer, "%7s %4095s", method, target) != 2) goto done;
        const char *headers = strstr(buffer, "\r\n") + 2;
        const char *length_value = header(headers, "Content-Length:");
        long long length = length_value ? atoll(length_value) : 0;
        const char *expect = header(headers, "Expect:");
        char path[4200];
        int has_key, failed;
        if (object_path(target, path, sizeof path, &has_key) != 0) {
            reply(fd, "400 Bad Request", "Connection: close\r\n");
            goto done;
        } else if (strcmp(method, "PUT") == 0 && !has_key) {
            failed = mkdir(path, 0755) != 0 && errno != EEXIST ? reply(fd, "500 Internal Server Error", "") : reply(fd, "200 OK", "");
        } else if (strcmp(method, "PUT") == 0) {
            if (expect && strncasecmp(expect, "100-continue", 12) == 0 && send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25)) goto done;
            size_t buffered = filled - consumed;
            if (put_object(fd, path, length, buffer + consumed, buffered) != 0) {
                reply(fd, "500 Internal Server Error", "Connection: close\r\n");
                goto done;
            }
            consumed += buffered < (size_t) length ? buffered : (size_t) length;
            failed = reply(fd, "200 OK", "ETag: \"ceiling\"\r\n");
        } else if (strcmp(method, "GET") == 0 && has_key) {
            failed = get_object(fd, path);
        } else {
            reply(fd, "405 Method Not Allowed", "Connection: close\r\n");
            goto done;
        }
        if (failed) goto done;
        memmove(buffer, buffer + consumed, filled - consumed);
        filled -= consumed;
    }
done:
    free(buffer);
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PORT DIR\n", argv[0]);
        return 2;
    }
    root = argv[2];
    int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t) atoi(argv[1])),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(listener, (struct sockaddr *) &address, sizeof address) != 0 || listen(listener, 128) != 0) {
        perror("ceiling: listen");
        return 1;
    }
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) continue;
        pthread_t thread;
        if (pthread_create(&thread, NULL, serve, (void *) (long) fd) != 0) close(fd);
        else pthread_detach(thread);
    }
}
