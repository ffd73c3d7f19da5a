/*
** listeners.c: the socket files this process's listeners made.
**
** A socket file outlives its listener, and a path is only a name: by the time
** a listener closes, the file at its path may be another listener's (its own
** was removed and the path reused, here or in another process). Removing by
** path would then cut that listener off. So listen records the file's device
** and inode, and closing removes the file only while the path still names it.
** The record also holds the listening socket's own identity and the process
** id: an fd number reused by another socket, or a listener inherited across
** fork(), removes nothing.
**
** There is a window between the identity check and unlink() (POSIX has no
** unlink-if-inode); it is as narrow as two system calls.
*/
#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "channel.h"

typedef struct listener_record {
  struct listener_record *next;
  int fd;
  pid_t pid;
  dev_t socket_dev, file_dev; /* the listening socket; the file its bind() made */
  ino_t socket_ino, file_ino;
  char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} listener_record;

static gpures__lock records_lock;
static listener_record *records;
GPURES__LOCKS_ACROSS_FORK(records_lock_across_fork, &records_lock, 1, sizeof records_lock)

/* Unlinks and frees the record of fd (NULL when there is none). */
static listener_record *take(int fd) {
  gpures__lock_acquire(&records_lock);
  listener_record **at = &records;
  while (*at && (*at)->fd != fd) at = &(*at)->next;
  listener_record *r = *at;
  if (r) *at = r->next;
  gpures__lock_release(&records_lock);
  return r;
}

int gpures__listener_remember(gpures__op op, int fd, const char *path) {
  listener_record *old = take(fd); /* an fd closed without gpures_channel_close() */
  gpures__free(old);
  if (path[0] == '@') return GPURES_OK; /* abstract: no file */
  struct stat sock, file;
  if (fstat(fd, &sock) != 0 || lstat(path, &file) != 0 || !S_ISSOCK(file.st_mode))
    return GPURES_OK; /* already gone or replaced: there is nothing of ours to remove later */
  listener_record *r = gpures__alloc(sizeof *r);
  if (!r) return gpures__fail(op, GPURES_E_OUT_OF_MEMORY, "", "out of memory");
  r->fd = fd;
  r->pid = getpid();
  r->socket_dev = sock.st_dev;
  r->socket_ino = sock.st_ino;
  r->file_dev = file.st_dev;
  r->file_ino = file.st_ino;
  snprintf(r->path, sizeof r->path, "%s", path);
  gpures__lock_acquire(&records_lock);
  r->next = records;
  records = r;
  gpures__lock_release(&records_lock);
  return GPURES_OK;
}

/* Whether fd is still the socket recorded, in the process that recorded it. */
static bool same_listener(const listener_record *r, int fd) {
  struct stat st;
  return r->pid == getpid() && fstat(fd, &st) == 0 && st.st_dev == r->socket_dev &&
         st.st_ino == r->socket_ino;
}

void gpures__listener_forget(int fd) {
  listener_record *r = take(fd);
  if (!r) return;
  struct stat file;
  if (same_listener(r, fd) && lstat(r->path, &file) == 0 && S_ISSOCK(file.st_mode) &&
      file.st_dev == r->file_dev && file.st_ino == r->file_ino)
    (void)unlink(r->path);
  gpures__free(r);
}
#endif
