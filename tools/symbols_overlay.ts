// What the C declarations cannot say about ffi/gen/symbols.ts: the functions
// TypeScript never calls, the parameters that cross otherwise than the rule in
// tools/gen_symbols.ts gives, the second rows of hot calls, and which calls
// run off the isolate's thread. Keyed by function name (by row name for a
// second row); tests/symbols_test.ts fails on an entry the header no longer
// backs.

/** How one row departs from what its C declaration gives. */
export interface SymbolOverlay {
  /** Why, in one line. */
  why: string;
  /** Left out of the table. */
  omit?: true;
  /** A second row for the C function `of`, under this entry's key. */
  of?: string;
  /** Every pointer parameter crosses as "pointer": the caller passes addresses it computed once. */
  addresses?: true;
  /** Parameters, by C name, that cross otherwise than the rule says. */
  pass?: Readonly<Record<string, "pointer" | "buffer">>;
  /** Runs on a thread of Deno's blocking pool and returns a promise. */
  nonblocking?: true;
}

const scratch =
  "a hot path: addresses of scratch memory computed once cross several times faster than buffers";

/** The entries, by function or row name. */
export const overlay: Readonly<Record<string, SymbolOverlay>> = {
  gpures_last_status: { omit: true, why: "TypeScript has each call's status as its result" },
  gpures_kind_info_of: { omit: true, why: "TypeScript reads gpures_kind_table once, whole" },
  gpures_enum_name: { omit: true, why: "TypeScript reads gpures_enum_table once, whole" },
  gpures_enum_lookup: { omit: true, why: "TypeScript reads gpures_enum_table once, whole" },
  gpures_pixel_format_info_of: {
    omit: true,
    why: "TypeScript reads gpures_pixel_format_table once, whole",
  },
  gpures_pixel_format_from_fourcc: {
    omit: true,
    why: "TypeScript reads gpures_pixel_format_table once, whole",
  },
  gpures_pixel_format_plane_extent: {
    omit: true,
    why: "PixelFormat computes extents from gpures_pixel_format_table's rows",
  },
  gpures_pixel_format_plane_pitch: {
    omit: true,
    why: "cpu.ts computes the pitch from gpures_pixel_format_table's rows",
  },
  gpures_pool_wait: { omit: true, why: "pools wait through gpures_pool_notify: no thread waits" },
  gpures_pool_wait_queue: {
    omit: true,
    why: "pools wait through gpures_pool_notify: no thread waits",
  },
  gpures_pool_cancel: {
    omit: true,
    why: "TypeScript acquires with timeout 0 and ticket 0: nothing to cancel",
  },
  gpures_session_fd: { omit: true, why: "Channel keeps the fd it opened the session on" },

  gpures_sync_poll: {
    pass: { out_reached: "pointer" },
    why: "SyncPoint.signaled passes a scratch word's address, taken once",
  },
  gpures_event_queue_wait: {
    pass: { out_pending: "pointer" },
    why: "called with timeout 0 and out_pending null: one poll of the watched fds",
  },
  gpures_event_queue_wait_async: {
    of: "gpures_event_queue_wait",
    nonblocking: true,
    why: "awaited on a thread of Deno's so releases made elsewhere wake the isolate at once",
  },
  gpures_channel_wait: {
    pass: { out_ready: "pointer" },
    nonblocking: true,
    why: "awaited off the isolate's thread, out_ready null: the isolate may end mid-wait",
  },
  gpures_decoder_run: {
    nonblocking: true,
    why: "decoding takes milliseconds: off the isolate's thread, touching no memory of its",
  },
  gpures_encoder_run: {
    nonblocking: true,
    why: "encoding takes milliseconds: off the isolate's thread, touching no memory of its",
  },
  gpures_demuxer_open: {
    nonblocking: true,
    why:
      "opening an input is I/O that may block: off the isolate's thread, touching no memory of its",
  },
  gpures_demuxer_read: {
    nonblocking: true,
    why:
      "reading an input is I/O that may block: off the isolate's thread, touching no memory of its",
  },
  gpures_muxer_run: {
    nonblocking: true,
    why:
      "writing an output is I/O that may block: off the isolate's thread, touching no memory of its",
  },
  gpures_muxer_write: { omit: true, why: "TypeScript queues and runs, off the isolate's thread" },

  gpures_create_at: { of: "gpures_create", addresses: true, why: scratch },
  gpures_describe_at: { of: "gpures_describe", addresses: true, why: scratch },
  gpures_kind_at: { of: "gpures_kind", addresses: true, why: scratch },
  gpures_refcount_at: { of: "gpures_refcount", addresses: true, why: scratch },
  gpures_event_queue_poll_at: { of: "gpures_event_queue_poll", addresses: true, why: scratch },
};
