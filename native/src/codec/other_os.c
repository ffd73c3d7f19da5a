/*
** other_os.c: the codec and container API where there are no frame pools
** (not Linux): every call says so, and nothing of FFmpeg is opened.
*/
#include "../internal.h"

#if !defined(__linux__)
static int unsupported(const char *verb) {
  gpures__op op = {verb, 0};
  return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "",
                      "gpures's codecs decode into frame pools, which need Linux's memfds");
}
int gpures_codec_library(gpures_codec_info *out) { (void)out; return unsupported("open FFmpeg"); }
int gpures_codec_find(const char *name, uint32_t flags) {
  (void)name, (void)flags;
  return unsupported("find codec");
}
int gpures_codec_stats_get(gpures_codec_stats *out) {
  (void)out;
  return unsupported("read codec stats");
}
int gpures_decoder_create(const gpures_decoder_desc *desc, gpures_decoder **out) {
  (void)desc;
  if (out) *out = NULL;
  return unsupported("create a decoder");
}
int gpures_decoder_send(gpures_decoder *decoder, const gpures_packet *packet) {
  (void)decoder, (void)packet;
  return unsupported("send a packet to the decoder");
}
int gpures_decoder_receive(gpures_decoder *decoder, gpures_handle *out_frame) {
  (void)decoder;
  if (out_frame) *out_frame = 0;
  return unsupported("receive a frame from the decoder");
}
int gpures_decoder_queue(gpures_decoder *decoder, const gpures_packet *packet) {
  (void)decoder, (void)packet;
  return unsupported("queue a packet for the decoder");
}
int gpures_decoder_run(gpures_decoder *decoder) {
  (void)decoder;
  return unsupported("decode queued packets");
}
int gpures_decoder_last_run(gpures_decoder *decoder) {
  (void)decoder;
  return unsupported("decode queued packets");
}
int gpures_decoder_notify(gpures_decoder *decoder, uint32_t queue, uint64_t token) {
  (void)decoder, (void)queue, (void)token;
  return unsupported("ask the decoder for a free slot");
}
int gpures_decoder_notify_cancel(gpures_decoder *decoder, uint32_t queue, uint64_t token, int why) {
  (void)decoder, (void)queue, (void)token, (void)why;
  return unsupported("withdraw the decoder's slot notice");
}
int gpures_decoder_destroy(gpures_decoder *decoder) { (void)decoder; return GPURES_OK; }
int gpures_encoder_create(const gpures_encoder_desc *desc, gpures_encoder **out) {
  (void)desc;
  if (out) *out = NULL;
  return unsupported("create an encoder");
}
int gpures_encoder_send(gpures_encoder *encoder, gpures_handle frame, uint32_t flags) {
  (void)encoder, (void)frame, (void)flags;
  return unsupported("send a frame to the encoder");
}
int gpures_encoder_queue(gpures_encoder *encoder, gpures_handle frame, uint32_t flags) {
  (void)encoder, (void)frame, (void)flags;
  return unsupported("queue a frame for the encoder");
}
int gpures_encoder_queue_at(gpures_encoder *encoder, gpures_handle frame, uint32_t flags,
                            int64_t pts) {
  (void)encoder, (void)frame, (void)flags, (void)pts;
  return unsupported("queue a frame for the encoder");
}
int gpures_encoder_run(gpures_encoder *encoder) {
  (void)encoder;
  return unsupported("encode queued frames");
}
int gpures_encoder_last_run(gpures_encoder *encoder) {
  (void)encoder;
  return unsupported("encode queued frames");
}
int gpures_encoder_receive(gpures_encoder *encoder, gpures_packet *out) {
  (void)encoder, (void)out;
  return unsupported("receive a packet from the encoder");
}
int gpures_encoder_extradata(gpures_encoder *encoder, uint8_t *out, uint32_t capacity,
                             uint32_t *out_size) {
  (void)encoder, (void)out, (void)capacity;
  if (out_size) *out_size = 0;
  return unsupported("read the encoder's extradata");
}
int gpures_encoder_destroy(gpures_encoder *encoder) { (void)encoder; return GPURES_OK; }
GPURES_API int gpures__test_codec_offset(const char *field);
int gpures__test_codec_offset(const char *field) { (void)field; return -1; }
static int no_containers(const char *verb) {
  gpures__op op = {verb, 0};
  return gpures__fail(op, GPURES_E_UNSUPPORTED_PLATFORM, "",
                      "gpures opens FFmpeg's libavformat on Linux only");
}
int gpures_demuxer_create(const gpures_demuxer_desc *desc, gpures_demuxer **out) {
  (void)desc;
  if (out) *out = NULL;
  return no_containers("create a demuxer");
}
int gpures_demuxer_open(gpures_demuxer *demuxer) {
  (void)demuxer;
  return no_containers("open the demuxer's input");
}
int gpures_demuxer_track_count(gpures_demuxer *demuxer, uint32_t *out_count) {
  (void)demuxer;
  if (out_count) *out_count = 0;
  return no_containers("count the demuxer's tracks");
}
int gpures_demuxer_track(gpures_demuxer *demuxer, uint32_t track, gpures_track_info *out) {
  (void)demuxer, (void)track, (void)out;
  return no_containers("describe the demuxer's track");
}
int gpures_demuxer_extradata(gpures_demuxer *demuxer, uint32_t track, uint8_t *out,
                             uint32_t capacity, uint32_t *out_size) {
  (void)demuxer, (void)track, (void)out, (void)capacity;
  if (out_size) *out_size = 0;
  return no_containers("read the demuxer's track");
}
int gpures_demuxer_select(gpures_demuxer *demuxer, uint32_t track, uint32_t selected) {
  (void)demuxer, (void)track, (void)selected;
  return no_containers("select the demuxer's track");
}
int gpures_demuxer_read(gpures_demuxer *demuxer) {
  (void)demuxer;
  return no_containers("read the demuxer's input");
}
int gpures_demuxer_last_run(gpures_demuxer *demuxer) {
  (void)demuxer;
  return no_containers("read the demuxer's input");
}
int gpures_demuxer_packet(gpures_demuxer *demuxer, uint32_t *out_track, gpures_packet *out) {
  (void)demuxer, (void)out;
  if (out_track) *out_track = GPURES_TRACK_END;
  return no_containers("take the demuxer's packet");
}
int gpures_demuxer_interrupt(gpures_demuxer *demuxer) {
  (void)demuxer;
  return no_containers("interrupt the demuxer");
}
int gpures_demuxer_destroy(gpures_demuxer *demuxer) { (void)demuxer; return GPURES_OK; }
int gpures_muxer_create(const gpures_muxer_desc *desc, gpures_muxer **out) {
  (void)desc;
  if (out) *out = NULL;
  return no_containers("create a muxer");
}
int gpures_muxer_add_track(gpures_muxer *muxer, const gpures_mux_track_desc *desc,
                           uint32_t *out_track) {
  (void)muxer, (void)desc;
  if (out_track) *out_track = 0;
  return no_containers("add a track to the muxer");
}
int gpures_muxer_queue(gpures_muxer *muxer, uint32_t track, const gpures_packet *packet) {
  (void)muxer, (void)track, (void)packet;
  return no_containers("queue a packet for the muxer");
}
int gpures_muxer_run(gpures_muxer *muxer) {
  (void)muxer;
  return no_containers("write the muxer's packets");
}
int gpures_muxer_last_run(gpures_muxer *muxer) {
  (void)muxer;
  return no_containers("write the muxer's packets");
}
int gpures_muxer_write(gpures_muxer *muxer, uint32_t track, const gpures_packet *packet) {
  (void)muxer, (void)track, (void)packet;
  return no_containers("queue a packet for the muxer");
}
int gpures_muxer_interrupt(gpures_muxer *muxer) {
  (void)muxer;
  return no_containers("interrupt the muxer");
}
int gpures_muxer_destroy(gpures_muxer *muxer) { (void)muxer; return GPURES_OK; }
GPURES_API int gpures__test_container_offset(const char *field);
int gpures__test_container_offset(const char *field) { (void)field; return -1; }
#endif
