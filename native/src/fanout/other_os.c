/*
** other_os.c: fan-outs on Windows. They serve consumers over sessions, which
** run over channels that Windows lacks, so every call says so.
*/
#if defined(_WIN32)
#include "../internal.h"

static int unsupported(const char *verb) {
  gpures__op op = {verb, 0};
  return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "",
                      "fan-outs serve consumers over channels, which need Unix domain sockets");
}

int gpures_fanout_create(const gpures_fanout_desc *desc, gpures_fanout **out_fanout) {
  (void)desc;
  if (out_fanout) *out_fanout = NULL;
  return unsupported("create a fan-out");
}
int gpures_fanout_join(gpures_fanout *f, int fd, int32_t timeout_ms, uint64_t *out_consumer) {
  (void)f, (void)fd, (void)timeout_ms;
  if (out_consumer) *out_consumer = 0;
  return unsupported("admit a consumer to a fan-out");
}
int gpures_fanout_publish(gpures_fanout *f, gpures_handle frame, int32_t timeout_ms) {
  (void)f, (void)frame, (void)timeout_ms;
  return unsupported("publish");
}
int gpures_fanout_notify(gpures_fanout *f, uint32_t queue, uint64_t token) {
  (void)f, (void)queue, (void)token;
  return unsupported("ask to hear of room in a fan-out");
}
int gpures_fanout_notify_cancel(gpures_fanout *f, uint32_t queue, uint64_t token) {
  (void)f, (void)queue, (void)token;
  return GPURES_OK;
}
int gpures_fanout_leave(gpures_fanout *f, uint64_t consumer) {
  (void)f, (void)consumer;
  return unsupported("take a consumer off a fan-out");
}
int gpures_fanout_consumers(gpures_fanout *f, uint64_t *ids, uint32_t capacity, uint32_t *out_count) {
  (void)f, (void)ids, (void)capacity;
  if (out_count) *out_count = 0;
  return unsupported("list the consumers of a fan-out");
}
int gpures_fanout_consumer_stats(gpures_fanout *f, uint64_t consumer, gpures_consumer_stats *out) {
  (void)f, (void)consumer, (void)out;
  return unsupported("read the stats of a fan-out's consumer");
}
int gpures_fanout_stats_get(gpures_fanout *f, gpures_fanout_stats *out) {
  (void)f, (void)out;
  return unsupported("read the stats of a fan-out");
}
int gpures_fanout_negotiate(gpures_fanout *f, const gpures_format_cap *producer, uint32_t num_producer,
                            uint32_t width, uint32_t height, gpures_negotiated *out) {
  (void)f, (void)producer, (void)num_producer, (void)width, (void)height, (void)out;
  return unsupported("negotiate for a fan-out");
}
int gpures_fanout_close(gpures_fanout *f) { return (void)f, GPURES_OK; }
#endif
