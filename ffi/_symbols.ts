// The C functions gpures.h exports, as Deno.dlopen needs them. Parameter
// comments give the C declarations. 64-bit values cross as bigint so calls
// stay on V8's fast path; out-parameters are preallocated buffers.

/** The symbol table handed to `Deno.dlopen`. */
export const symbols = {
  // uint32_t gpures_abi_version(void)
  gpures_abi_version: { parameters: [], result: "u32" },
  // uint32_t gpures_build_os(void)
  gpures_build_os: { parameters: [], result: "u32" },
  // const char *gpures_os_name(uint32_t bit)
  gpures_os_name: { parameters: ["u32"], result: "pointer" },
  // const char *gpures_status_name(int status)
  gpures_status_name: { parameters: ["i32"], result: "pointer" },
  // const char *gpures_status_message(int status)
  gpures_status_message: { parameters: ["i32"], result: "pointer" },
  // const char *gpures_last_error(void)
  gpures_last_error: { parameters: [], result: "pointer" },
  // const char *gpures_last_error_field(void)
  gpures_last_error_field: { parameters: [], result: "pointer" },
  // const gpures_kind_info *gpures_kind_table(uint32_t *out_count)
  gpures_kind_table: { parameters: ["buffer"], result: "pointer" },
  // int gpures_kind_supported(uint32_t kind)
  // uint64_t gpures_clock_us(void): the monotonic clock every process shares
  gpures_clock_us: { parameters: [], result: "u64" },
  gpures_kind_supported: { parameters: ["u32"], result: "i32" },
  // const gpures_field_info *gpures_kind_fields(uint32_t kind, uint32_t *out_count)
  gpures_kind_fields: { parameters: ["u32", "buffer"], result: "pointer" },
  // const gpures_field_info *gpures_meta_fields(uint32_t *out_count)
  gpures_meta_fields: { parameters: ["buffer"], result: "pointer" },
  // int gpures_event_queue_wait(uint32_t queue, int32_t timeout_ms, uint32_t *out_pending), on a
  // thread of Deno's: releases made elsewhere wake the isolate at once.
  gpures_event_queue_wait_async: {
    name: "gpures_event_queue_wait",
    parameters: ["u32", "i32", "pointer"], // always null: the isolate may end while it waits
    result: "i32",
    nonblocking: true,
  },
  // The same, on the isolate's thread with timeout 0: polls the queue's watched fds once.
  gpures_event_queue_wait: { parameters: ["u32", "i32", "pointer"], result: "i32" },
  // int gpures_event_queue_watch(uint32_t queue, int fd, uint32_t events, uint64_t token)
  gpures_event_queue_watch: { parameters: ["u32", "i32", "u32", "u64"], result: "i32" },
  // int gpures_event_queue_unwatch(uint32_t queue, uint64_t token, uint32_t *out_withdrawn)
  gpures_event_queue_unwatch: { parameters: ["u32", "u64", "buffer"], result: "i32" },
  // uint32_t gpures_event_queue_watching(uint32_t queue)
  gpures_event_queue_watching: { parameters: ["u32"], result: "u32" },
  // int gpures_sync_wait(gpures_handle sync, int64_t timeout_ns): blocks this thread
  gpures_sync_wait: { parameters: ["u64", "i64"], result: "i32" },
  // int gpures_sync_poll(gpures_handle sync, uint32_t *out_reached)
  gpures_sync_poll: { parameters: ["u64", "pointer"], result: "i32" },
  // int gpures_sync_signal(gpures_handle sync)
  gpures_sync_signal: { parameters: ["u64"], result: "i32" },
  // int gpures_sync_wait_async(gpures_handle sync, int64_t timeout_ns, uint32_t queue, uint64_t token)
  gpures_sync_wait_async: { parameters: ["u64", "i64", "u32", "u64"], result: "i32" },
  // int gpures_sync_cancel(uint32_t queue, uint64_t token)
  gpures_sync_cancel: { parameters: ["u32", "u64"], result: "i32" },
  // uint32_t gpures_sync_pending(void)
  gpures_sync_pending: { parameters: [], result: "u32" },
  // int gpures_cpu_fence_new(gpures_handle *out_sync)
  gpures_cpu_fence_new: { parameters: ["buffer"], result: "i32" },
  // int gpures_fences_set(gpures_handle handle, gpures_handle acquire, gpures_handle release)
  gpures_fences_set: { parameters: ["u64", "u64", "u64"], result: "i32" },
  // int gpures_fences_get(gpures_handle handle, gpures_handle *out_acquire, gpures_handle *out_release)
  gpures_fences_get: { parameters: ["u64", "buffer", "buffer"], result: "i32" },
  // int gpures_begin_access(gpures_handle handle, int64_t timeout_ns)
  gpures_begin_access: { parameters: ["u64", "i64"], result: "i32" },
  // int gpures_end_access(gpures_handle handle, gpures_handle release)
  gpures_end_access: { parameters: ["u64", "u64"], result: "i32" },
  // int gpures_dma_buf_export_sync_file(gpures_handle dma_buf, uint32_t index, uint32_t flags,
  //                                     gpures_handle *out_sync)
  gpures_dma_buf_export_sync_file: { parameters: ["u64", "u32", "u32", "buffer"], result: "i32" },
  // int gpures_dma_buf_import_sync_file(gpures_handle dma_buf, uint32_t index, uint32_t flags,
  //                                     gpures_handle sync)
  gpures_dma_buf_import_sync_file: { parameters: ["u64", "u32", "u32", "u64"], result: "i32" },
  // int gpures_meta_set(gpures_handle handle, const gpures_frame_meta *meta)
  gpures_meta_set: { parameters: ["u64", "buffer"], result: "i32" },
  // int gpures_meta_get(gpures_handle handle, gpures_frame_meta *out)
  gpures_meta_get: { parameters: ["u64", "buffer"], result: "i32" },
  // int gpures_buffer_id(gpures_handle handle, uint64_t *out_id)
  gpures_buffer_id: { parameters: ["u64", "buffer"], result: "i32" },
  // int gpures_pool_create(const gpures_pool_desc *desc, gpures_pool **out_pool)
  gpures_pool_create: { parameters: ["buffer", "buffer"], result: "i32" },
  // int gpures_pool_acquire(gpures_pool *pool, int32_t timeout_ms, uint32_t ticket,
  //                         const gpures_create_options *options, gpures_handle *out_frame)
  gpures_pool_acquire: { parameters: ["pointer", "i32", "u32", "buffer", "buffer"], result: "i32" },
  // int gpures_pool_notify(gpures_pool *pool, uint32_t queue, uint64_t token): no thread waits
  gpures_pool_notify: { parameters: ["pointer", "u32", "u64"], result: "i32" },
  // int gpures_pool_notify_cancel(gpures_pool *pool, uint32_t queue, uint64_t token, int why)
  gpures_pool_notify_cancel: { parameters: ["pointer", "u32", "u64", "i32"], result: "i32" },
  // int gpures_pool_stats_get(gpures_pool *pool, gpures_pool_stats *out)
  gpures_pool_stats_get: { parameters: ["pointer", "buffer"], result: "i32" },
  // int gpures_pool_close(gpures_pool *pool)
  gpures_pool_close: { parameters: ["pointer"], result: "i32" },
  // int gpures_session_open(int fd, uint32_t flags, gpures_session **out_session)
  gpures_session_open: { parameters: ["i32", "u32", "buffer"], result: "i32" },
  // int gpures_session_send(gpures_session *s, gpures_handle h, uint32_t flags, uint32_t *out_sent)
  gpures_session_send: { parameters: ["pointer", "u64", "u32", "buffer"], result: "i32" },
  // int gpures_session_receive(gpures_session *s, uint32_t flags, gpures_handle *out_handle)
  gpures_session_receive: { parameters: ["pointer", "u32", "buffer"], result: "i32" },
  // int gpures_session_stats_get(gpures_session *s, gpures_session_stats *out)
  gpures_session_stats_get: { parameters: ["pointer", "buffer"], result: "i32" },
  // int gpures_session_forgotten(gpures_session *s, uint64_t *ids, uint32_t capacity,
  //                              uint32_t *out_count)
  gpures_session_forgotten: { parameters: ["pointer", "buffer", "u32", "buffer"], result: "i32" },
  // int gpures_session_shutdown(gpures_session *s)
  gpures_session_shutdown: { parameters: ["pointer"], result: "i32" },
  // int gpures_session_close(gpures_session *s)
  gpures_session_close: { parameters: ["pointer"], result: "i32" },
  // const char *gpures_enum_set_name(uint32_t set)
  gpures_enum_set_name: { parameters: ["u32"], result: "pointer" },
  // const gpures_enum_value *gpures_enum_table(uint32_t *out_count)
  gpures_enum_table: { parameters: ["buffer"], result: "pointer" },
  // const gpures_pixel_format_info *gpures_pixel_format_table(uint32_t *out_count)
  gpures_pixel_format_table: { parameters: ["buffer"], result: "pointer" },
  // int gpures_pixel_format_frame_size(uint32_t format, uint32_t width, uint32_t height,
  //                                    uint32_t row_pitch, uint64_t *out_bytes)
  gpures_pixel_format_frame_size: {
    parameters: ["u32", "u32", "u32", "u32", "buffer"],
    result: "i32",
  },
  // int gpures_pixel_format_row_bytes(uint32_t format, uint32_t plane, uint32_t width,
  //                                   uint64_t *out_bytes)
  gpures_pixel_format_row_bytes: { parameters: ["u32", "u32", "u32", "buffer"], result: "i32" },
  // int gpures_pixel_format_layout(uint32_t format, uint32_t width, uint32_t height,
  //                                uint32_t row_align, gpures_plane_layout out_planes[4],
  //                                uint64_t *out_size)
  gpures_pixel_format_layout: {
    parameters: ["u32", "u32", "u32", "u32", "buffer", "buffer"],
    result: "i32",
  },
  // int gpures_create(uint32_t kind, const void *desc, const gpures_create_options *options,
  //                   gpures_handle *out_handle)
  gpures_create: { parameters: ["u32", "buffer", "buffer", "buffer"], result: "i32" },
  // int gpures_clone(gpures_handle handle)
  gpures_clone: { parameters: ["u64"], result: "i32" },
  // int gpures_release(gpures_handle handle)
  gpures_release: { parameters: ["u64"], result: "i32" },
  // int gpures_describe(gpures_handle handle, void *out, uint32_t out_size)
  gpures_describe: { parameters: ["u64", "buffer", "u32"], result: "i32" },
  // int gpures_kind(gpures_handle handle, uint32_t *out_kind)
  gpures_kind: { parameters: ["u64", "buffer"], result: "i32" },
  // int gpures_refcount(gpures_handle handle, uint32_t *out_refcount)
  gpures_refcount: { parameters: ["u64", "buffer"], result: "i32" },
  // int gpures_describe_json(gpures_handle handle, char *buffer, size_t capacity,
  //                          size_t *out_length)
  gpures_describe_json: { parameters: ["u64", "buffer", "usize", "buffer"], result: "i32" },
  // int gpures_dup_fd(gpures_handle handle, uint32_t index, int *out_fd)
  gpures_dup_fd: { parameters: ["u64", "u32", "buffer"], result: "i32" },
  // int gpures_slot_release(gpures_handle handle)
  gpures_slot_release: { parameters: ["u64"], result: "i32" },
  // int gpures_mark_consumed(gpures_handle handle)
  gpures_mark_consumed: { parameters: ["u64"], result: "i32" },
  // int gpures_mark_consumed_heard(gpures_handle handle, uint32_t *out_heard)
  gpures_mark_consumed_heard: { parameters: ["u64", "buffer"], result: "i32" },
  // uint64_t gpures_live_handles(uint32_t kind)
  gpures_live_handles: { parameters: ["u32"], result: "u64" },
  // int gpures_event_queue_open(uint32_t *out_queue)
  gpures_event_queue_open: { parameters: ["buffer"], result: "i32" },
  // int gpures_event_queue_close_on_thread_exit(uint32_t queue)
  gpures_event_queue_close_on_thread_exit: { parameters: ["u32"], result: "i32" },
  // int gpures_event_queue_close(uint32_t queue)
  gpures_event_queue_close: { parameters: ["u32"], result: "i32" },
  // uint32_t gpures_event_queue_pending(uint32_t queue)
  gpures_event_queue_pending: { parameters: ["u32"], result: "u32" },
  // int gpures_event_queue_poll(uint32_t queue, gpures_event *events, uint32_t capacity,
  //                             uint32_t *out_count)
  gpures_event_queue_poll: { parameters: ["u32", "buffer", "u32", "buffer"], result: "i32" },

  // The calls every create, describe, refcount, fromRaw and keep-alive delivery
  // makes, declared again with their buffers as pointers: gpu_resource.ts passes
  // addresses of scratch memory computed once, which cross several times faster
  // than buffer arguments. Same C functions as above.
  // int gpures_create(uint32_t kind, const void *desc, const gpures_create_options *options,
  //                   gpures_handle *out_handle)
  gpures_create_at: {
    name: "gpures_create",
    parameters: ["u32", "pointer", "pointer", "pointer"],
    result: "i32",
  },
  // int gpures_describe(gpures_handle handle, void *out, uint32_t out_size)
  gpures_describe_at: {
    name: "gpures_describe",
    parameters: ["u64", "pointer", "u32"],
    result: "i32",
  },
  // int gpures_kind(gpures_handle handle, uint32_t *out_kind)
  gpures_kind_at: { name: "gpures_kind", parameters: ["u64", "pointer"], result: "i32" },
  // int gpures_refcount(gpures_handle handle, uint32_t *out_refcount)
  gpures_refcount_at: { name: "gpures_refcount", parameters: ["u64", "pointer"], result: "i32" },
  // int gpures_event_queue_poll(uint32_t queue, gpures_event *events, uint32_t capacity,
  //                             uint32_t *out_count)
  gpures_event_queue_poll_at: {
    name: "gpures_event_queue_poll",
    parameters: ["u32", "pointer", "u32", "pointer"],
    result: "i32",
  },

  // Channels between processes (gpures.h, "channels between processes"). The
  // calls that move handles never wait (GPURES_CHANNEL_NONBLOCK); waiting is
  // gpures_channel_wait on a thread of Deno's blocking pool (nonblocking: true).
  // int gpures_channel_listen(const char *path, int *out_fd)
  gpures_channel_listen: { parameters: ["buffer", "buffer"], result: "i32" },
  // int gpures_channel_accept(int listen_fd, uint32_t flags, int *out_fd)
  gpures_channel_accept: { parameters: ["i32", "u32", "buffer"], result: "i32" },
  // int gpures_channel_connect(const char *path, uint32_t flags, int *out_fd)
  gpures_channel_connect: { parameters: ["buffer", "u32", "buffer"], result: "i32" },
  // int gpures_channel_pair(int out_fds[2])
  gpures_channel_pair: { parameters: ["buffer"], result: "i32" },
  // int gpures_channel_send(int fd, gpures_handle handle, uint32_t flags, uint32_t *out_sent)
  gpures_channel_send: { parameters: ["i32", "u64", "u32", "buffer"], result: "i32" },
  // int gpures_channel_receive(int fd, uint32_t flags, gpures_handle *out_handle)
  gpures_channel_receive: { parameters: ["i32", "u32", "buffer"], result: "i32" },
  // int gpures_channel_wait(int fd, uint32_t events, int32_t timeout_ms, uint32_t *out_ready),
  // awaited off the isolate's thread: the benchmarks' measure of a blocking-pool hop
  gpures_channel_wait: {
    parameters: ["i32", "u32", "i32", "pointer"], // out_ready null: the isolate may end mid-wait
    result: "i32",
    nonblocking: true,
  },
  // int gpures_channel_shutdown(int fd)
  gpures_channel_shutdown: { parameters: ["i32"], result: "i32" },
  // int gpures_channel_close(int fd)
  gpures_channel_close: { parameters: ["i32"], result: "i32" },
  // int gpures_channel_unlink(const char *path)
  gpures_channel_unlink: { parameters: ["buffer"], result: "i32" },

  // CPU mappings of owned fds.
  // int gpures_map(gpures_handle handle, uint32_t index, uint32_t flags, void **out_ptr,
  //                uint64_t *out_size)
  gpures_map: { parameters: ["u64", "u32", "u32", "buffer", "buffer"], result: "i32" },
  // int gpures_unmap(void *ptr)
  gpures_unmap: { parameters: ["pointer"], result: "i32" },
  // uint64_t gpures_live_mappings(void)
  gpures_live_mappings: { parameters: [], result: "u64" },

  // Devices, capabilities and importers (interop).
  // int gpures_device_of(gpures_handle handle, gpures_device_id *out_id)
  gpures_device_of: { parameters: ["u64", "buffer"], result: "i32" },
  // int gpures_device_compare(const gpures_device_id *a, const gpures_device_id *b)
  gpures_device_compare: { parameters: ["buffer", "buffer"], result: "i32" },
  // int gpures_vk_device_info(void *instance, void *physical_device, void *get_instance_proc_addr,
  //                           gpures_device_info *out)
  gpures_vk_device_info: { parameters: ["pointer", "pointer", "pointer", "buffer"], result: "i32" },
  // int gpures_cuda_device_info(int32_t ordinal, gpures_device_info *out)
  gpures_cuda_device_info: { parameters: ["i32", "buffer"], result: "i32" },
  // int gpures_caps_vulkan(void *instance, void *physical_device, void *get_instance_proc_addr,
  //                        gpures_format_cap *out, uint32_t capacity, uint32_t *out_count)
  gpures_caps_vulkan: {
    parameters: ["pointer", "pointer", "pointer", "buffer", "u32", "buffer"],
    result: "i32",
  },
  // int gpures_caps_egl(void *display, gpures_format_cap *out, uint32_t capacity,
  //                     uint32_t *out_count)
  gpures_caps_egl: { parameters: ["pointer", "buffer", "u32", "buffer"], result: "i32" },
  // int gpures_caps_cuda(int32_t ordinal, gpures_format_cap *out, uint32_t capacity,
  //                      uint32_t *out_count)
  gpures_caps_cuda: { parameters: ["i32", "buffer", "u32", "buffer"], result: "i32" },
  // int gpures_caps_pool(gpures_format_cap *out, uint32_t capacity, uint32_t *out_count)
  gpures_caps_pool: { parameters: ["buffer", "u32", "buffer"], result: "i32" },
  // int gpures_negotiate(const gpures_format_cap *producer, uint32_t num_producer,
  //                      const gpures_format_cap *consumer, uint32_t num_consumer,
  //                      uint32_t width, uint32_t height, gpures_negotiated *out)
  gpures_negotiate: {
    parameters: ["buffer", "u32", "buffer", "u32", "u32", "u32", "buffer"],
    result: "i32",
  },
  // int gpures_importer_stats_get(gpures_importer *importer, gpures_importer_stats *out)
  gpures_importer_stats_get: { parameters: ["pointer", "buffer"], result: "i32" },
  // int gpures_importer_device(gpures_importer *importer, gpures_device_info *out)
  gpures_importer_device: { parameters: ["pointer", "buffer"], result: "i32" },
  // int gpures_importer_forget(gpures_importer *importer, gpures_handle frame)
  gpures_importer_forget: { parameters: ["pointer", "u64"], result: "i32" },
  // int gpures_importer_collect(gpures_importer *importer)
  gpures_importer_collect: { parameters: ["pointer"], result: "i32" },
  // int gpures_importer_destroy(gpures_importer *importer)
  gpures_importer_destroy: { parameters: ["pointer"], result: "i32" },
  // int gpures_vk_importer_create(const gpures_vk_importer_desc *desc, gpures_importer **out)
  gpures_vk_importer_create: { parameters: ["buffer", "buffer"], result: "i32" },
  // int gpures_vk_import(gpures_importer *importer, gpures_handle frame, gpures_vk_imported *out)
  gpures_vk_import: { parameters: ["pointer", "u64", "buffer"], result: "i32" },
  // int gpures_egl_importer_create(const gpures_egl_importer_desc *desc, gpures_importer **out)
  gpures_egl_importer_create: { parameters: ["buffer", "buffer"], result: "i32" },
  // int gpures_egl_import(gpures_importer *importer, gpures_handle frame, gpures_egl_imported *out)
  gpures_egl_import: { parameters: ["pointer", "u64", "buffer"], result: "i32" },
  // int gpures_cuda_importer_create(const gpures_cuda_importer_desc *desc, gpures_importer **out)
  gpures_cuda_importer_create: { parameters: ["buffer", "buffer"], result: "i32" },
  // int gpures_cuda_import(gpures_importer *importer, gpures_handle frame, gpures_cuda_imported *out)
  gpures_cuda_import: { parameters: ["pointer", "u64", "buffer"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

/** The loaded library's symbols. */
export type Symbols = Deno.DynamicLibrary<typeof symbols>["symbols"];
