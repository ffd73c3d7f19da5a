/*
** wake_floor.c: the floor under every cross-process wait gpures measures: a
** process blocked in recv() on a SOCK_SEQPACKET socket, woken by a datagram
** another process sends. The sender stamps CLOCK_MONOTONIC into the datagram;
** the receiver takes the difference as soon as recv() returns, then answers,
** so each round starts with the receiver asleep in the kernel again.
**
**   gpures_wake_floor [rounds]   prints {"rounds":N,"p50":us,"p90":us,"p99":us}
*/
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The receiver: records each one-way time, answers, and sends them all at the end. */
static int receive_rounds(int fd, int rounds) {
  double *times = calloc((size_t)rounds, sizeof *times);
  if (!times) return 1;
  for (int i = 0; i < rounds; i++) {
    double sent;
    if (recv(fd, &sent, sizeof sent, 0) != sizeof sent) return 1;
    times[i] = now_us() - sent;
    if (send(fd, "", 1, 0) != 1) return 1;
  }
  for (int i = 0; i < rounds; i++)
    if (send(fd, &times[i], sizeof times[i], 0) != sizeof times[i]) return 1;
  return 0;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 2000;
  if (rounds < 10 || rounds > 1000000) {
    fprintf(stderr, "rounds must be 10..1000000\n");
    return 2;
  }
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds) != 0) return perror("socketpair"), 1;
  pid_t child = fork();
  if (child < 0) return perror("fork"), 1;
  if (child == 0) {
    close(fds[0]);
    _exit(receive_rounds(fds[1], rounds));
  }
  close(fds[1]);
  struct timespec pause = {0, 200000}; /* the receiver is asleep in recv() when the datagram comes */
  for (int i = 0; i < rounds; i++) {
    nanosleep(&pause, NULL);
    double sent = now_us();
    char answer;
    if (send(fds[0], &sent, sizeof sent, 0) != sizeof sent || recv(fds[0], &answer, 1, 0) != 1)
      return perror("round"), 1;
  }
  double *times = calloc((size_t)rounds, sizeof *times);
  for (int i = 0; i < rounds; i++)
    if (recv(fds[0], &times[i], sizeof times[i], 0) != sizeof times[i]) return perror("times"), 1;
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return fprintf(stderr, "receiver failed\n"), 1;
  int warm = rounds / 10; /* the first rounds fault pages in and find caches cold */
  qsort(times + warm, (size_t)(rounds - warm), sizeof *times, by_value);
  int n = rounds - warm;
  printf("{\"rounds\":%d,\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f}\n", n, times[warm + n / 2],
         times[warm + n * 9 / 10], times[warm + n * 99 / 100]);
  return 0;
}
