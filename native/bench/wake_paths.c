/*
** wake_paths.c: the sending side of bench/wake_paths.ts, which asks how a
** kernel event can reach JavaScript in the fewest thread wake-ups. It sends
** the same stamped datagrams as wake_floor.c, but to a Deno receiver: it makes
** a socketpair, starts the command after "--" with the other end's number in
** GPURES_WAKE_FD, waits for the receiver's first byte (it is ready), then sends
** one CLOCK_MONOTONIC stamp a round and waits for the answer, so each round
** starts with the receiver idle. The receiver measures and prints the figures.
**
**   gpures_wake_paths ROUNDS seqpacket|stream -- COMMAND [ARG...]
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int send_rounds(int fd, int rounds) {
  char byte;
  if (recv(fd, &byte, 1, 0) != 1) return fprintf(stderr, "the receiver never got ready\n"), 1;
  struct timespec pause = {0, 200000}; /* as wake_floor.c's: the receiver is idle when it comes */
  for (int i = 0; i < rounds; i++) {
    nanosleep(&pause, NULL);
    double sent = now_us();
    if (send(fd, &sent, sizeof sent, MSG_NOSIGNAL) != sizeof sent || recv(fd, &byte, 1, 0) != 1)
      return fprintf(stderr, "round %d: the receiver went away\n", i), 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 0;
  int stream = argc > 2 && strcmp(argv[2], "stream") == 0;
  if (rounds < 10 || rounds > 1000000 || argc < 5 || strcmp(argv[3], "--") != 0) {
    fprintf(stderr, "usage: gpures_wake_paths ROUNDS seqpacket|stream -- COMMAND [ARG...]\n");
    return 2;
  }
  int fds[2];
  if (socketpair(AF_UNIX, (stream ? SOCK_STREAM : SOCK_SEQPACKET) | SOCK_CLOEXEC, 0, fds) != 0)
    return perror("socketpair"), 1;
  struct timeval patience = {30, 0}; /* a receiver that hangs ends the run, not the machine's day */
  if (setsockopt(fds[0], SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience) != 0)
    return perror("setsockopt"), 1;
  pid_t child = fork();
  if (child < 0) return perror("fork"), 1;
  if (child == 0) {
    int fd = dup(fds[1]); /* without CLOEXEC: the receiver inherits this one alone */
    if (fd < 0) return perror("dup"), 127;
    char name[16];
    snprintf(name, sizeof name, "%d", fd);
    setenv("GPURES_WAKE_FD", name, 1);
    execvp(argv[4], argv + 4);
    perror("exec");
    _exit(127);
  }
  close(fds[1]);
  int failed = send_rounds(fds[0], rounds);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}
