// Channels between processes: handles of the kinds that own fds
// (DmaBufHandle, VkOpaqueFd, CudaVmmFd) cross a Unix domain socket with their fds.
//
// Nothing here blocks the event loop or holds a thread while it waits.
// Sending and receiving call C with GPURES_CHANNEL_NONBLOCK, so they either
// finish at once or find the channel full (or empty); only then do they wait
// for the socket (ffi/channel/_socket.ts), which the isolate's one wait on its event
// queue polls along with everything else it waits for. A message that is
// already waiting costs one synchronous call. Closing withdraws such waits,
// then closes the fd.

import { lib } from "../load/load.ts";
import { cPath, Socket } from "./_socket.ts";
import { booleanOption, optionsBag, own, timeoutOption } from "../table/values.ts";
import { check, lastError } from "../load/native.ts";
import { GpuResource } from "../kinds/gpu_resource.ts";
import { errorFor, type GpuResourceError, InvalidHandleError, ReleasedError } from "../errors.ts";
import { type CudaVmmFd, DmaBufHandle, type VkOpaqueFd } from "../gen/variants.ts";
import type { PixelFormatName } from "../gen/types.ts";
import { PixelFormat } from "../map/pixel_format.ts";
import { type DeviceId, encodeCaps, encodeDeviceId, type FormatCap } from "../interop/device.ts";
import { PlaneCache } from "../frames/plane_cache.ts";
import { Turns } from "../events/turns.ts";
import type { PlaneView } from "../map/planes.ts";
import "../gen/variants.ts"; // registers the classes GpuResource.fromRaw() makes

const NONBLOCK = 1;
const ALLOW_UNSEALED = 2;
const SESSION_SEND = 1;
const SESSION_RECEIVE = 2;
const READABLE = 1;
const WRITABLE = 2;

const i32Out = new Int32Array(2);
const u32Out = new Uint32Array(1);
const u64Out = new BigUint64Array(1);
const forgotten = new BigUint64Array(16);

/** What a channel carries: the kinds that own fds. */
export type ChannelResource = DmaBufHandle | VkOpaqueFd | CudaVmmFd;

const INTERNAL = Symbol("gpures.channel");

// Channels and listeners collected unclosed close their fds (a listener's shutdown
// removes its socket file, if the path still names it).
const unclosed = new FinalizationRegistry<{ socket: Socket }>((held) => held.socket.close());

/** What {@link Channel.connect} accepts. */
export interface ConnectOptions {
  /**
   * Milliseconds to wait for a listener to appear at the path (the other
   * process may not have started yet); 0, the default, fails at once;
   * Infinity: no limit. NaN, negatives and non-numbers are refused
   * (InvalidHandleError, field "wait").
   */
  wait?: number;
}

/**
 * The sender let a buffer go (its pool slot was closed or got new memory):
 * drop what you cached for `bufferId` (an import, a texture). Frames of it
 * still held stay valid.
 */
export class BufferGoneEvent extends Event {
  /** The buffer's id, as the frames' {@link GpuResource.bufferId} gave it. */
  readonly bufferId: bigint;

  /** Made by the channel; listen for `"buffergone"`. */
  constructor(bufferId: bigint) {
    super("buffergone");
    this.bufferId = bufferId;
  }
}

/**
 * The frames' format changed (or the first frame came): fired by
 * {@link Channel.receive} before it returns the first frame of the new
 * format, so a consumer rebuilds what depends on the size (textures, an
 * encoder) before it sees a frame that needs it. Every frame after it is of
 * this format until the next such event.
 */
export class FormatChangeEvent extends Event {
  /** The kind of the frames ("DmaBufHandle", "VkOpaqueFd", "CudaVmmFd"). */
  readonly resourceKind: string;
  /** Width in pixels (0 when the kind has none). */
  readonly width: number;
  /** Height in pixels (0 when the kind has none). */
  readonly height: number;
  /** The pixel format its DRM fourcc names, or null (another kind, or a fourcc gpures does not name). */
  readonly format: PixelFormatName | null;
  /** The DRM fourcc (0 for kinds without one). */
  readonly fourcc: number;
  /** The DRM format modifier (0n for kinds without one). */
  readonly modifier: bigint;

  /** Made by the channel; listen for `"formatchange"`. */
  constructor(init: FrameFormat) {
    super("formatchange");
    this.resourceKind = init.kind;
    this.width = init.width;
    this.height = init.height;
    this.format = init.format;
    this.fourcc = init.fourcc;
    this.modifier = init.modifier;
  }
}

/** What {@link FormatChangeEvent} reports of a frame. */
export interface FrameFormat {
  /** The kind ("DmaBufHandle"). */
  kind: string;
  /** Width in pixels. */
  width: number;
  /** Height in pixels. */
  height: number;
  /** The pixel format, or null. */
  format: PixelFormatName | null;
  /** DRM fourcc, or 0. */
  fourcc: number;
  /** DRM format modifier, or 0n. */
  modifier: bigint;
}

const descOut = new Uint8Array(256); // GPURES__DESC_MAX: any kind's descriptor fits

/** A frame's format, read from its descriptor (a DmaBufHandle's fourcc, modifier and extent). */
function formatOf(frame: GpuResource<unknown>): FrameFormat {
  const none = { kind: frame.kind, width: 0, height: 0, format: null, fourcc: 0, modifier: 0n };
  const dmaBuf = frame instanceof DmaBufHandle;
  if (!dmaBuf && frame.kind !== "VkOpaqueFd" && frame.kind !== "CudaVmmFd") return none;
  check(lib().gpures_describe(frame.unsafeHandle, descOut, descOut.length));
  const view = new DataView(descOut.buffer);
  if (!dmaBuf) { // VkOpaqueFd and CudaVmmFd: width 36, height 40, format 44 (a PixelFormat id)
    const id = view.getUint32(44, true);
    const format = id ? PixelFormat.info(id).name : null;
    return { ...none, width: view.getUint32(36, true), height: view.getUint32(40, true), format };
  }
  const fourcc = view.getUint32(28, true); // gpures_dma_buf_handle_desc
  return {
    kind: frame.kind,
    width: view.getUint32(40, true),
    height: view.getUint32(44, true),
    format: PixelFormat.fromFourcc(fourcc)?.name ?? null,
    fourcc,
    modifier: view.getBigUint64(32, true),
  };
}

const sameFormat = (a: FrameFormat, b: FrameFormat) =>
  a.kind === b.kind && a.width === b.width && a.height === b.height && a.format === b.format &&
  a.fourcc === b.fourcc && a.modifier === b.modifier;

/** How a fan-out treats a consumer that falls behind: see {@link SubscribeOptions.policy}. */
export type DeliveryPolicy = "block" | "dropOldest" | "latest";

const POLICIES: Record<DeliveryPolicy, number> = { block: 1, dropOldest: 2, latest: 3 };

/** What {@link Channel.subscribe} asks a fan-out for. */
export interface SubscribeOptions {
  /**
   * `"block"` (the default): every frame; the producer waits for this
   * consumer when its queue is full. `"dropOldest"`: when its queue is full,
   * its oldest undelivered frame is dropped for it. `"latest"`: a mailbox
   * of one, the newest frame replacing an undelivered one.
   */
  policy?: DeliveryPolicy;
  /** Frames queued for it at the producer, 1 to 64 (default 2; `latest`: 1, the only depth). */
  depth?: number;
  /** Frames it holds at once (received, not released), 1 to 64 (default 2). */
  window?: number;
  /** What it can take (as {@link negotiate} reads rows), at most 24 rows; none: anything. */
  caps?: readonly FormatCap[];
  /**
   * The device it imports on (its importer's `device.id`): a fan-out whose
   * frames are on another GPU refuses it at once with DeviceMismatchError
   * (field "device"), not at its first import. Absent: any.
   */
  device?: DeviceId;
  /** Milliseconds to wait for the producer's answer (default 10000; Infinity: no limit). */
  timeout?: number;
}

/** The terms a fan-out granted: {@link Channel.subscribe}. */
export interface Subscription {
  /** The id the producer knows this consumer by ({@link FrameFanout.consumers}). */
  consumer: bigint;
  /** The policy granted. */
  policy: DeliveryPolicy;
  /** Its queue's depth. */
  depth: number;
  /** Its window. */
  window: number;
}

const SUBSCRIPTION_SIZE = 56 + 24 * 32; // gpures_subscription: its device at 32, caps at 56

function encodeSubscription(options: SubscribeOptions): Uint8Array {
  const policy = own(options, "policy") ?? "block";
  if (!Object.hasOwn(POLICIES, policy as string)) {
    throw new InvalidHandleError(
      `Cannot subscribe: policy is ${
        JSON.stringify(policy)
      }; it is "block", "dropOldest" or "latest"`,
      "INVALID_VALUE",
      "policy",
    );
  }
  const count = (name: "depth" | "window") => {
    const v = own(options, name) ?? 0;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > 64) {
      throw new InvalidHandleError(
        `Cannot subscribe: ${name} is ${v}; it is 1 to 64 (0 or absent: the default)`,
        "INVALID_VALUE",
        name,
      );
    }
    return v;
  };
  const caps = (own(options, "caps") ?? []) as readonly FormatCap[];
  if (!Array.isArray(caps) || caps.length > 24) {
    throw new InvalidHandleError(
      "Cannot subscribe: caps is an array of at most 24 rows",
      "INVALID_VALUE",
      "caps",
    );
  }
  const out = new Uint8Array(SUBSCRIPTION_SIZE);
  const view = new DataView(out.buffer);
  view.setUint32(0, SUBSCRIPTION_SIZE, true);
  view.setUint32(4, POLICIES[policy as DeliveryPolicy], true);
  view.setUint32(8, count("depth"), true);
  view.setUint32(12, count("window"), true);
  view.setUint32(16, caps.length, true);
  const device = own(options, "device") as DeviceId | undefined;
  if (device !== undefined) out.set(encodeDeviceId(device, "device"), 32);
  if (caps.length) out.set(encodeCaps(caps, "caps"), 56);
  return out;
}

/** The terms in a gpures_subscription the producer sent. */
export function decodeSubscription(view: DataView): Subscription {
  const policy = (Object.keys(POLICIES) as DeliveryPolicy[]).find((p) =>
    POLICIES[p] === view.getUint32(4, true)
  );
  return {
    consumer: view.getBigUint64(24, true),
    policy: policy ?? "block",
    depth: view.getUint32(8, true),
    window: view.getUint32(12, true),
  };
}

/** What a fan-out needs of a channel it takes: its fd, a wait, and the hand-over. */
export interface ChannelHandover {
  /** The fd, still this channel's: throws ReleasedError once the channel was closed meanwhile. */
  live(): number;
  waitReadable(ms: number): Promise<boolean>;
  detach(): void;
}

let handover: (channel: Channel, verb: string) => ChannelHandover;

/** A channel that has carried nothing yet, for a fan-out to take (FrameFanout.join). */
export function handOver(channel: Channel, verb: string): ChannelHandover {
  return handover(channel, verb);
}

/** A channel's traffic: {@link Channel.stats}. */
export interface ChannelStats {
  /** Buffers the peer holds (sending) or this end keeps mapped-ready (receiving). */
  buffers: number;
  /** Frames and handles sent (that went: the peer can receive them) or received. */
  frames: number;
  /** Of which carried fds: the first frame of each buffer. */
  announced: number;
  /** Sending: frames that went and that the peer has not released yet. */
  inFlight: number;
  /** Sending: releases that came back. */
  returned: number;
  /** Messages refused: malformed, unknown, or not the peer's to send. */
  refused: number;
  /** Receiving: buffers the sender let go of ("buffergone" events). */
  forgotten: number;
}

const ZERO_STATS: ChannelStats = {
  buffers: 0,
  frames: 0,
  announced: 0,
  inFlight: 0,
  returned: 0,
  refused: 0,
  forgotten: 0,
};

/** What {@link Channel.receive} accepts. */
export interface ReceiveOptions {
  /**
   * Trust the peer: accept frames over regular files and memfds that are not
   * sealed against shrinking (a truncate by the peer would then kill this
   * process with SIGBUS on the next access through a mapping).
   */
  allowUnsealed?: boolean;
}

/**
 * One end of a channel to another process (or thread): sends and receives
 * handles of the kinds that own fds, each with its fds. The receiver gets a
 * new handle of its own over the same memory; the sender keeps its handle.
 * The peer is not trusted: every message is validated as `create()` would,
 * and a malformed one is refused with its fds closed.
 *
 * A received fd must be able to back a frame (a dma-buf, or a memfd sealed
 * against shrinking, which gpures seals on receipt when it allows sealing);
 * a pipe, socket, directory or device is refused at once (but a VkOpaqueFd or
 * CudaVmmFd may be a driver's device: NVIDIA's are), and a regular file or
 * unsealable memfd unless `receive({ allowUnsealed: true })`.
 *
 * Pooled frames (from a `FramePool`) travel as a stream: the first frame of
 * each slot carries its fd, later ones only the slot's id and the frame's
 * metadata, and the receiver gets frames over the buffer it already has (the
 * same {@link GpuResource.bufferId}; {@link Channel.planes} maps it once).
 * The sender holds each frame until the receiver releases its copy, so the
 * slot goes back to the pool only then. Such a channel carries frames one
 * way: the library reads the sending end's socket for those releases, so
 * nothing else sent to that end arrives (it is counted as refused). Use a
 * second channel for the other way.
 *
 * POSIX only (Unix domain sockets, `SOCK_SEQPACKET`); the handle kinds it
 * carries exist on Linux and Android (DmaBufHandle) and all but Windows
 * (VkOpaqueFd). Paths are strings or `file:` URLs (percent-escapes decoded);
 * they reach the OS through FFI: Deno's read and write permissions are not
 * consulted. A path that begins with `@` names a socket in Linux's abstract
 * namespace (no file).
 *
 * @example
 * ```ts
 * import { Channel, DmaBufHandle } from "@gpures/gpures";
 *
 * // A frame in shared memory: a memfd that allows sealing (gpures seals it
 * // against shrinking), 64x16 RGBA. In a real server it comes from a decoder.
 * const libc = Deno.dlopen("libc.so.6", {
 *   memfd_create: { parameters: ["buffer", "u32"], result: "i32" },
 *   ftruncate: { parameters: ["i32", "i64"], result: "i32" },
 * });
 * const MFD_CLOEXEC_ALLOW_SEALING = 3;
 * const fd = libc.symbols.memfd_create(new TextEncoder().encode("frame\0"), MFD_CLOEXEC_ALLOW_SEALING);
 * libc.symbols.ftruncate(fd, 4096n);
 * using frame = DmaBufHandle.create({
 *   fds: [fd],
 *   fourcc: 0x34324241, // DRM_FORMAT_ABGR8888
 *   modifier: 0n,
 *   width: 16,
 *   height: 64,
 *   planes: [{ objectIndex: 0, offset: 0, stride: 64 }],
 * }, { takeOwnership: true });
 *
 * // Two ends in one process here; Channel.listen()/connect() join two processes.
 * const [producer, consumer] = Channel.pair();
 * await producer.send(frame); // the producer keeps its own handle
 * using received = await consumer.receive();
 * if (!(received instanceof DmaBufHandle)) throw new Error("expected a DmaBufHandle");
 * new Uint8Array(frame.map())[0] = 42;
 * console.log(new Uint8Array(received.map())[0]); // 42: the same memory, no copy
 * producer.close();
 * consumer.close();
 * libc.close();
 * ```
 */
export class Channel extends EventTarget {
  readonly #socket: Socket;
  readonly #views = new PlaneCache();
  #role = 0;
  /** Sends waiting for room, in order. */
  readonly #sends = new Turns();
  /** The stats as they were at close(); the session they came from is freed. */
  #lastStats: ChannelStats | undefined;
  /** Receiving: each buffer's format, read once; and the last frame's. */
  readonly #formats = new Map<bigint, FrameFormat>();
  #format: FrameFormat | null = null;

  static {
    handover = (channel, verb) => {
      const socket = channel.#socket;
      socket.open(verb);
      if (channel.#role !== 0) {
        throw new InvalidHandleError(
          `Cannot ${verb}: the channel carries frames already; a consumer joins on a new channel`,
          "INVALID_VALUE",
          "channel",
        );
      }
      return {
        live: () => socket.open(verb),
        waitReadable: (ms) => socket.waitFor(1, ms),
        detach: () => {
          unclosed.unregister(channel);
          channel.#lastStats = { ...ZERO_STATS };
          socket.detach();
        },
      };
    };
  }

  /**
   * Not for users: channels come from {@link Channel.connect}, accept() or pair().
   *
   * @ignore
   */
  constructor(key: symbol, fd: number) {
    if (key !== INTERNAL) {
      throw new TypeError("Use Channel.connect(), Channel.listen().accept() or Channel.pair()");
    }
    super();
    this.#socket = new Socket(fd, "channel");
    unclosed.register(this, { socket: this.#socket }, this);
  }

  /** Two channels connected to each other, in this process (a socketpair). */
  static pair(): [Channel, Channel] {
    check(lib().gpures_channel_pair(i32Out));
    return [new Channel(INTERNAL, i32Out[0]), new Channel(INTERNAL, i32Out[1])];
  }

  /**
   * Listens at `path` for channels; a stale socket file left there is
   * replaced. Closing the listener removes the socket file it made, and only
   * that one: not a file that another listener has since made at the path.
   */
  static listen(path: string | URL): ChannelListener {
    const bytes = cPath(path, "listen");
    check(lib().gpures_channel_listen(bytes, i32Out));
    return new ChannelListener(INTERNAL, i32Out[0], bytes);
  }

  /**
   * A channel to the listener at `path`. With `wait`, a path where nobody
   * listens yet is tried again until the listener appears or the time is up.
   */
  static async connect(path: string | URL, options: ConnectOptions = {}): Promise<Channel> {
    const bytes = cPath(path, "connect");
    optionsBag("connect", options);
    const wait = timeoutOption("connect", "wait", own(options, "wait"), 0);
    const until = performance.now() + wait;
    for (;;) {
      const status = lib().gpures_channel_connect(bytes, NONBLOCK, i32Out);
      if (status !== 0 && performance.now() >= until) throw waited(lastError(status), wait);
      if (status === 0 && i32Out[0] >= 0) return new Channel(INTERNAL, i32Out[0]);
      // Nobody listens yet, or the listener has not accepted the connections before this one.
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** The session on this channel, opened for `role` on first use; one role per channel. */
  #session(role: number, verb: string): Deno.PointerValue {
    this.#socket.open(verb); // closed: ReleasedError, before the role is looked at
    if (this.#role === role) return this.#socket.session;
    if (this.#role !== 0) {
      throw new InvalidHandleError(
        `Cannot ${verb}: this channel ${
          this.#role === SESSION_SEND ? "sends frames" : "receives"
        }; a channel carries frames one way (use a second channel for the other)`,
        "INVALID_VALUE",
        "channel",
      );
    }
    const out = new BigUint64Array(1);
    check(lib().gpures_session_open(this.#socket.open(verb), role, out));
    this.#socket.session = Deno.UnsafePointer.create(out[0]);
    this.#role = role;
    return this.#socket.session;
  }

  /**
   * Typed views of a received (or sent) frame's planes: each buffer is
   * mapped once, and later frames of it get the same arrays. A view whose
   * buffer was moved away (a BYOB read into it, `transfer()`, `postMessage`
   * with transfer) is made again over the same memory: call `planes()` again
   * after each such read, as `FramePool.planes()` shows. Throws
   * ReleasedError (field "channel") once the channel is closed; the frames
   * themselves stay valid (their own `planes()`). A frame of another kind (a
   * VkOpaqueFd) has no planes: WrongKindError, field "frame".
   */
  planes(frame: GpuResource<unknown>): PlaneView[] {
    this.#socket.open("view planes");
    return this.#views.of(frame);
  }

  /**
   * What this end has sent or received (zeros before the first frame); after
   * {@link Channel.close}, the counts as they were at the close.
   */
  get stats(): ChannelStats {
    return this.#lastStats ? { ...this.#lastStats } : this.#readStats();
  }

  /** The session's counts now (zeros without one); never once closed: the session is freed. */
  #readStats(): ChannelStats {
    const out = new DataView(new ArrayBuffer(64));
    out.setUint32(0, 64, true);
    const session = this.#socket.closed ? null : this.#socket.session;
    if (session !== null) check(lib().gpures_session_stats_get(session, out.buffer));
    const n = (at: number) => Number(out.getBigUint64(at, true));
    return {
      buffers: out.getUint32(4, true),
      frames: n(8),
      announced: n(16),
      inFlight: n(24),
      returned: n(32),
      refused: n(40),
      forgotten: n(48),
    };
  }

  /** The socket's fd, for a host that polls it itself. Owned by this channel. */
  get fd(): number {
    return this.#socket.open("read fd of");
  }

  /** Whether {@link Channel.close} was called. */
  get closed(): boolean {
    return this.#socket.closed;
  }

  /**
   * Sends a DmaBufHandle, VkOpaqueFd or CudaVmmFd with its fds. The resource stays
   * yours: release it whenever you like, even before the promise settles
   * (the send holds a reference of its own while it waits for room). A slot
   * release does not cross (addresses mean nothing in another process).
   * Rejects with WrongKindError (field "resource") for the process-local
   * kinds, and ReleasedError (field "channel") once the peer closed. A
   * pooled frame is held until the receiver releases its copy (see the
   * class's description).
   *
   * Back-pressure: when the peer reads slower than this end sends, the
   * socket fills, and the promise settles only once the message went (it
   * waits for room off the event loop, never dropping it) or failed. Sends
   * keep their order: one made while an earlier send waits for room waits
   * behind it. {@link Channel.stats} counts in `frames` only what went, and
   * in `inFlight` only frames that went and have not come back. A send still
   * waiting when this end closes rejects with ReleasedError (field
   * "channel"), and nothing of it reaches the peer but, at most, the FENCE
   * that leads it, which names a frame the peer never sees.
   */
  async send(resource: ChannelResource | GpuResource<unknown>): Promise<void> {
    if (!(resource instanceof GpuResource)) {
      throw new InvalidHandleError(
        "Cannot send: resource must be a GpuResource (a DmaBufHandle or VkOpaqueFd)",
        "INVALID_VALUE",
        "resource",
      );
    }
    if (resource.released) {
      throw new ReleasedError(
        `Cannot send ${resource.kind}: handle was released`,
        "STALE",
        "resource",
      );
    }
    // Pooled frames go through a session: their buffers are announced once and come back.
    // Other handles go as they always did (to a peer that has not sent frames on this channel).
    // A handle with an acquire fence goes through the session too: its FENCE message leads it.
    const session =
      this.#role === SESSION_SEND || resource.bufferId !== null || hasAcquireFence(resource)
        ? this.#session(SESSION_SEND, "send")
        : null;
    if (!this.#sends.waiting && this.#trySend(session, resource.unsafeHandle)) return;
    // Full, or earlier sends wait: this one waits its turn.
    await this.#sends.take(resource, (held) => this.#sendWhenRoom(session, held));
  }

  /** One try without waiting: whether the message went (false: the socket is full). */
  #trySend(session: Deno.PointerValue, handle: bigint): boolean {
    const s = lib();
    const fd = this.#socket.open("send");
    check(
      session === null
        ? s.gpures_channel_send(fd, handle, NONBLOCK, u32Out)
        : s.gpures_session_send(session, handle, NONBLOCK, u32Out),
    );
    return u32Out[0] !== 0;
  }

  /**
   * Tries again each time the socket has room. The same handle each time: a
   * FENCE that went before its frame found the socket full is not sent twice.
   */
  async #sendWhenRoom(session: Deno.PointerValue, held: GpuResource<unknown>): Promise<void> {
    while (!this.#trySend(session, held.unsafeHandle)) await this.#socket.wait(WRITABLE);
  }

  /**
   * The next handle sent, as a new DmaBufHandle or VkOpaqueFd that you own
   * (release it), or null once the peer closed the channel and everything it
   * sent was received. Rejects with the error of a malformed message (its fds
   * already closed); the channel stays usable. A message whose fds this
   * process could not take (out of fds, EMFILE) is dropped and reported:
   * GpuResourceError with code "OS_ERROR" and field "fds".
   *
   * `allowUnsealed: true` trusts the peer (`GPURES_CHANNEL_ALLOW_UNSEALED`):
   * it accepts frames over regular files and memfds not sealed against
   * shrinking. Without it such a frame is refused with InvalidHandleError
   * naming its fd field ("fds[0]", "fd"): a peer that keeps another fd could
   * truncate the memory under a mapping here, and an access past the new end
   * kills this process with SIGBUS. A memfd that allows sealing is accepted
   * either way: it is sealed on receipt.
   */
  async receive(options: ReceiveOptions = {}): Promise<ChannelResource | null> {
    const s = lib();
    optionsBag("receive", options);
    const trust = booleanOption("receive", "allowUnsealed", own(options, "allowUnsealed"), false);
    const flags = NONBLOCK | (trust ? ALLOW_UNSEALED : 0);
    const session = this.#session(SESSION_RECEIVE, "receive");
    for (;;) {
      this.#socket.open("receive");
      const status = s.gpures_session_receive(session, flags, u64Out);
      this.#forgetBuffers(session);
      if (status === 0 && u64Out[0] !== 0n) {
        const frame = GpuResource.fromRaw(u64Out[0]) as ChannelResource;
        this.#noticeFormat(frame);
        return frame;
      }
      if (status !== 0) {
        const error = lastError(status);
        if (error.code === "STALE" && error.field === "channel") return null;
        throw error;
      }
      await this.#socket.waitForMessage();
    }
  }

  /** Fires "formatchange" when this frame's format is not the last one's. */
  #noticeFormat(frame: ChannelResource): void {
    const id = frame.bufferId;
    let format = id === null ? undefined : this.#formats.get(id);
    if (format === undefined) {
      format = formatOf(frame);
      if (id !== null) this.#formats.set(id, format);
    }
    if (this.#format !== null && sameFormat(this.#format, format)) return;
    this.#format = format;
    this.dispatchEvent(new FormatChangeEvent(format));
  }

  /**
   * Joins the fan-out at the other end ({@link FrameFanout.join}): asks for a
   * policy, a queue depth, a window and the formats this end takes, and
   * resolves with the terms granted; frames then come through
   * {@link Channel.receive} as on any channel, the first being the next one
   * published. Rejects with UnsupportedError carrying the producer's reason
   * when it refuses (its field names what: "policy", "depth", "window",
   * "caps", "consumers"), DeviceMismatchError (field "device") when the
   * frames are on another device than `device`, the channel then ended; with TimeoutError when no
   * answer came within `timeout`; InvalidHandleError (field "subscription")
   * when the peer is no fan-out (what it sent stays to be received). Call it
   * first, before any receive. A consumer whose `caps` do not take a new
   * format the producer switches to still gets the frames of the old format
   * queued for it; the receive after the last of them rejects with the reason.
   */
  async subscribe(options: SubscribeOptions = {}): Promise<Subscription> {
    optionsBag("subscribe", options);
    const timeout = timeoutOption("subscribe", "timeout", own(options, "timeout"), 10_000);
    const asked = encodeSubscription(options);
    const session = this.#session(SESSION_RECEIVE, "subscribe");
    const granted = new Uint8Array(SUBSCRIPTION_SIZE);
    const view = new DataView(granted.buffer);
    view.setUint32(0, SUBSCRIPTION_SIZE, true);
    const until = performance.now() + timeout;
    for (let first = true;; first = false) {
      this.#socket.open("subscribe");
      const status = lib().gpures_session_subscribe(session, first ? asked : null, 0, granted);
      if (status === 0) return decodeSubscription(view);
      const error = lastError(status);
      if (error.code !== "TIMED_OUT") throw error;
      const left = until - performance.now();
      if (left <= 0 || !(await this.#socket.waitFor(READABLE, left))) {
        throw errorFor(
          "TIMED_OUT",
          `Cannot subscribe: the producer did not answer within ${timeout} ms`,
          "timeout",
        );
      }
    }
  }

  /** Drops the views of buffers the sender let go of, and says so ("buffergone"). */
  #forgetBuffers(session: Deno.PointerValue): void {
    const s = lib();
    for (;;) {
      check(s.gpures_session_forgotten(session, forgotten, forgotten.length, u32Out));
      for (let i = 0; i < u32Out[0]; i++) {
        this.#views.forget(forgotten[i]);
        this.#formats.delete(forgotten[i]);
        this.dispatchEvent(new BufferGoneEvent(forgotten[i]));
      }
      if (u32Out[0] < forgotten.length) return;
    }
  }

  /** Receives until the peer closes the channel. */
  async *[Symbol.asyncIterator](): AsyncGenerator<ChannelResource, void, undefined> {
    for (;;) {
      const resource = await this.receive();
      if (resource === null) return;
      yield resource;
    }
  }

  /**
   * Closes this end; idempotent. The peer sees the end once it received what
   * was sent; a pending send or receive here rejects with ReleasedError.
   * Afterwards `closed` is true, `stats` keeps the counts of the close, and
   * every other use throws ReleasedError (field "channel").
   */
  close(): void {
    if (this.#socket.closed) return;
    unclosed.unregister(this);
    try {
      this.#lastStats = this.#readStats(); // the session goes with the socket (now, or after pending waits)
    } finally {
      this.#lastStats ??= { ...ZERO_STATS };
      this.#socket.close();
      this.#views.clear();
    }
  }

  /** Closes at the end of a `using` block. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/** A socket that channels connect to; from {@link Channel.listen}. */
export class ChannelListener {
  readonly #socket: Socket;
  readonly #path: Uint8Array;

  /**
   * Not for users: listeners come from {@link Channel.listen}.
   *
   * @ignore
   */
  constructor(key: symbol, fd: number, path: Uint8Array) {
    if (key !== INTERNAL) throw new TypeError("Use Channel.listen()");
    this.#socket = new Socket(fd, "listener");
    this.#path = path;
    unclosed.register(this, { socket: this.#socket }, this);
  }

  /** The path listened on. */
  get path(): string {
    return new TextDecoder().decode(this.#path.subarray(0, -1));
  }

  /** The listening socket's fd, for a host that polls it itself. */
  get fd(): number {
    return this.#socket.open("read fd of");
  }

  /** Whether {@link ChannelListener.close} was called. */
  get closed(): boolean {
    return this.#socket.closed;
  }

  /** The next channel that connects. Rejects with ReleasedError once closed. */
  async accept(): Promise<Channel> {
    const s = lib();
    for (;;) {
      const fd = this.#socket.open("accept");
      check(s.gpures_channel_accept(fd, NONBLOCK, i32Out));
      if (i32Out[0] >= 0) return new Channel(INTERNAL, i32Out[0]);
      await this.#socket.waitForMessage();
    }
  }

  /** Accepts channels until the listener is closed. */
  async *[Symbol.asyncIterator](): AsyncGenerator<Channel, void, undefined> {
    while (!this.closed) {
      try {
        yield await this.accept();
      } catch (e) {
        if (this.closed && e instanceof ReleasedError) return;
        throw e;
      }
    }
  }

  /**
   * Stops listening and removes the socket file it made, unless the path now
   * names another file (a newer listener's); idempotent. Accepted channels
   * stay open.
   */
  close(): void {
    if (this.#socket.closed) return;
    unclosed.unregister(this);
    this.#socket.close(); // gpures_channel_shutdown() removes the file
  }

  /** Closes at the end of a `using` block. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/** A connect's failure after waiting `wait` ms says that it waited, and how long. */
function waited(error: GpuResourceError, wait: number): GpuResourceError {
  if (wait === 0) return error;
  return errorFor(error.code, `${error.message} (waited ${wait} ms for a listener)`, error.field);
}

const fencePair = new BigUint64Array(2);
const [acquireOut, releaseOut] = [fencePair.subarray(0, 1), fencePair.subarray(1)]; // made once: send is hot

/** Whether the handle carries an acquire fence (the references read are let go at once). */
function hasAcquireFence(resource: GpuResource<unknown>): boolean {
  const s = lib();
  check(
    s.gpures_fences_get(resource.unsafeHandle, acquireOut, releaseOut),
  );
  const [acquire, release] = fencePair;
  if (acquire) s.gpures_release(acquire);
  if (release) s.gpures_release(release);
  return acquire !== 0n;
}
