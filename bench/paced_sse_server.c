/*
 * A stand-in for llama-server's streaming write pattern, for bench/live_client.py.
 *
 * llama-server sends every token's SSE event as soon as the token is sampled: one HTTP chunk, one write.
 * This server does the same, evenly spaced at a configured rate: one writer thread spins on the
 * monotonic clock between events (no timer ticks, so no batching of several tokens into one write) and
 * sends each event with its own send(). Wire format as llama-server 0c1e570 writes it: chunked transfer
 * coding, the role chunk in the same write as the first token, one chunk per token, finish and usage
 * together, "data: [DONE]", then the last chunk; the connection closes after the response.
 *
 * It keeps its own log of what it really sent (GET /_paced/log, JSON): per stream the first and last
 * token write, the rate really sent ((n - 1) / (last - first)), the latest write, and how often a write
 * found the client's socket buffer full (backpressure: the client was not keeping up).
 *
 * Request body (JSON): "max_tokens" (tokens to send), "demo_decode_tps" (tokens per second).
 * Build: cc -O2 -pthread -o paced_sse_server bench/paced_sse_server.c
 * Run:   paced_sse_server PORT [CPU]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_STREAMS 256
#define LOG_SIZE 64
#define SPIN_NS 300000L /* closer than this to the next write: spin instead of sleeping */

typedef struct {
    int fd;
    long n, k;             /* tokens to send, token events written */
    double rate, t0;       /* tokens per second, due time of token 0 */
    double first, last;    /* server clock of the first and last token write */
    double worst_late;     /* seconds the latest write was behind its due time */
    long backpressure;     /* writes that found the socket buffer full */
    char id[32];
} stream_t;

typedef struct {
    long tokens, writes, backpressure;
    double first, last, configured, worst_late;
} record_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static stream_t *pending[MAX_STREAMS];
static int n_pending;
static record_t records[LOG_SIZE];
static long n_records;

static const char *WORDS[] = {" the", " model", " reads", " every", " token", " of", " prompt", " once", " then",
                              " writes", " its", " answer", " one", " at", " a", " time", " 2026", "-11", ":"};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Send all of buf; note when the socket buffer was full (the client was behind). */
static int send_all(stream_t *s, const char *buf, size_t len) {
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(s->fd, buf + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            s->backpressure++;
            struct pollfd p = {s->fd, POLLOUT, 0};
            if (poll(&p, 1, 30000) <= 0) return -1;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        return -1;
    }
    return 0;
}

/* One HTTP chunk holding the given SSE text. */
static int send_chunk(stream_t *s, const char *sse, size_t len) {
    char buf[4096];
    int h = snprintf(buf, sizeof buf, "%zx\r\n", len);
    if (len + (size_t)h + 2 > sizeof buf) return -1;
    memcpy(buf + h, sse, len);
    memcpy(buf + h + len, "\r\n", 2);
    return send_all(s, buf, (size_t)h + len + 2);
}

static int tail(char *out, size_t cap, const stream_t *s) {
    return snprintf(out, cap, ",\"created\":1796000000,\"id\":\"%s\",\"model\":\"paced.gguf\","
                    "\"system_fingerprint\":\"b0-paced\",\"object\":\"chat.completion.chunk\"}\n\n", s->id);
}

static int token_event(stream_t *s) {
    char sse[2048], t[256];
    int len = 0;
    tail(t, sizeof t, s);
    if (s->k == 0)
        len += snprintf(sse, sizeof sse, "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":"
                        "{\"role\":\"assistant\",\"content\":null}}]%s", t);
    len += snprintf(sse + len, sizeof sse - (size_t)len, "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,"
                    "\"delta\":{\"content\":\"%s\"}}]%s", WORDS[s->k % (long)(sizeof WORDS / sizeof *WORDS)], t);
    return send_chunk(s, sse, (size_t)len);
}

static void finish(stream_t *s) {
    char sse[2048], t[256];
    tail(t, sizeof t, s);
    int len = snprintf(sse, sizeof sse,
                       "data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}]%s"
                       "data: {\"choices\":[],\"usage\":{\"completion_tokens\":%ld,\"prompt_tokens\":12,"
                       "\"total_tokens\":%ld},\"timings\":{\"cache_n\":0,\"prompt_n\":12,\"predicted_n\":%ld}%s",
                       t, s->n, s->n + 12, s->n, t);
    if (send_chunk(s, sse, (size_t)len) == 0 && send_chunk(s, "data: [DONE]\n\n", 14) == 0)
        send_all(s, "0\r\n\r\n", 5);
    close(s->fd);
    pthread_mutex_lock(&lock);
    record_t *r = &records[n_records++ % LOG_SIZE];
    *r = (record_t){s->n, s->n + 2, s->backpressure, s->first, s->last, s->rate, s->worst_late};
    pthread_mutex_unlock(&lock);
    free(s);
}

static void *writer(void *arg) {
    (void)arg;
    stream_t *active[MAX_STREAMS];
    int n_active = 0;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (n_active == 0 && n_pending == 0) pthread_cond_wait(&wake, &lock);
        for (int i = 0; i < n_pending && n_active < MAX_STREAMS; i++) {
            pending[i]->t0 = now() + 0.002; /* the first token leaves 2 ms after the request was read */
            active[n_active++] = pending[i];
        }
        n_pending = 0;
        pthread_mutex_unlock(&lock);
        /* the stream whose next token is due first */
        int best = 0;
        double due = 1e300;
        for (int i = 0; i < n_active; i++) {
            double d = active[i]->t0 + active[i]->k / active[i]->rate;
            if (d < due) {
                due = d;
                best = i;
            }
        }
        double wait = due - now();
        if (wait * 1e9 > SPIN_NS) {
            long ns = (long)(wait * 1e9) - SPIN_NS / 2;
            struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
            nanosleep(&ts, NULL);
            continue; /* a new stream may have come in meanwhile */
        }
        double t;
        while ((t = now()) < due) {
        }
        stream_t *s = active[best];
        int bad = token_event(s);
        if (s->k == 0) s->first = t;
        s->last = t;
        if (t - due > s->worst_late) s->worst_late = t - due;
        s->k++;
        if (bad || s->k >= s->n) {
            if (bad) {
                close(s->fd);
                free(s);
            } else {
                finish(s);
            }
            active[best] = active[--n_active];
        }
    }
    return NULL;
}

static void reply(int fd, const char *type, const char *body) {
    char head[256];
    int h = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n", type, strlen(body));
    send(fd, head, (size_t)h, MSG_NOSIGNAL);
    send(fd, body, strlen(body), MSG_NOSIGNAL);
    close(fd);
}

static double json_number(const char *body, const char *key, double fallback) {
    const char *p = strstr(body, key);
    if (!p) return fallback;
    p = strchr(p + strlen(key), ':');
    return p ? strtod(p + 1, NULL) : fallback;
}

static void *request(void *arg) {
    int fd = (int)(long)arg;
    char buf[65536];
    size_t got = 0;
    char *body = NULL;
    while (got < sizeof buf - 1) {
        ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (r <= 0) {
            close(fd);
            return NULL;
        }
        got += (size_t)r;
        buf[got] = 0;
        char *end = strstr(buf, "\r\n\r\n");
        if (!end) continue;
        body = end + 4;
        char *cl = strcasestr(buf, "content-length:");
        size_t want = cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0;
        if ((size_t)(buf + got - body) >= want) break;
    }
    if (!body) {
        close(fd);
        return NULL;
    }
    if (strncmp(buf, "GET /health", 11) == 0) {
        reply(fd, "application/json", "{\"status\":\"ok\"}");
        return NULL;
    }
    if (strncmp(buf, "GET /_paced/log", 15) == 0) {
        static char out[LOG_SIZE * 256 + 8];
        size_t len = 0;
        out[len++] = '[';
        pthread_mutex_lock(&lock);
        long start = n_records > LOG_SIZE ? n_records - LOG_SIZE : 0;
        for (long i = start; i < n_records; i++) {
            record_t *r = &records[i % LOG_SIZE];
            double sent = r->tokens > 1 && r->last > r->first ? (r->tokens - 1) / (r->last - r->first) : 0.0;
            len += (size_t)snprintf(out + len, sizeof out - len,
                                    "%s{\"tokens\":%ld,\"writes\":%ld,\"first_write\":%.9f,\"last_write\":%.9f,"
                                    "\"rate_sent\":%.6f,\"configured\":%.3f,\"worst_late_s\":%.6f,"
                                    "\"backpressure\":%ld}", i > start ? "," : "", r->tokens, r->writes, r->first,
                                    r->last, sent, r->configured, r->worst_late, r->backpressure);
        }
        pthread_mutex_unlock(&lock);
        out[len++] = ']';
        out[len] = 0;
        reply(fd, "application/json", out);
        return NULL;
    }
    stream_t *s = calloc(1, sizeof *s);
    s->fd = fd;
    s->n = (long)json_number(body, "\"max_tokens\"", 16);
    s->rate = json_number(body, "\"demo_decode_tps\"", 100.0);
    if (s->n < 1) s->n = 1;
    if (s->rate <= 0) s->rate = 100.0;
    snprintf(s->id, sizeof s->id, "chatcmpl-%08lx%04x", (unsigned long)random(), fd & 0xffff);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const char *head = "HTTP/1.1 200 OK\r\nServer: llama.cpp\r\nContent-Type: text/event-stream\r\n"
                       "Transfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n";
    send(fd, head, strlen(head), MSG_NOSIGNAL);
    pthread_mutex_lock(&lock);
    if (n_pending < MAX_STREAMS) {
        pending[n_pending++] = s;
        s = NULL;
    }
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    if (s) {
        close(fd);
        free(s);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT [CPU]\n", argv[0]);
        return 2;
    }
    if (argc > 2) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(atoi(argv[2]), &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)atoi(argv[1]));
    a.sin_addr.s_addr = htonl(0x7f000001);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 128)) {
        perror("bind/listen");
        return 1;
    }
    pthread_t w;
    pthread_create(&w, NULL, writer, NULL);
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) continue;
        pthread_t t;
        pthread_create(&t, NULL, request, (void *)(long)fd);
        pthread_detach(t);
    }
}
