// What VideoDecoder and VideoEncoder share, as the WebCodecs spec writes it
// for both: the state, the control message queue (one message at a time,
// blocked while one works), the queue size and its coalesced "dequeue"
// event, pending flushes, reset and close. An epoch counts resets, so work
// that finishes after one delivers nothing.

/** A codec's state. */
export type CodecState = "unconfigured" | "configured" | "closed";

/** One step of the control queue: it runs when every earlier one finished, with the epoch it was queued in. */
export type CodecMessage = (epoch: number) => Promise<void> | void;

/** The shared machinery of VideoDecoder and VideoEncoder: state, control queue, dequeue events, reset and close. */
export abstract class CodecMachine extends EventTarget {
  #state: CodecState = "unconfigured";
  #queueSize = 0;
  #messages: CodecMessage[] = [];
  #working = false;
  #epoch = 0;
  #flushes = new Set<PromiseWithResolvers<void>>();
  #dequeueScheduled = false;
  #ondequeue: ((event: Event) => void) | null = null;
  readonly #onError: (error: DOMException) => void;
  readonly #kind: string;

  /** `kind` names the codec in messages; `init` must hold the output and error callbacks (TypeError). */
  protected constructor(kind: string, init: unknown) {
    super();
    this.#kind = kind;
    const i = init as { output?: unknown; error?: unknown } | undefined;
    if (
      typeof i !== "object" || i === null || typeof i.output !== "function" ||
      typeof i.error !== "function"
    ) {
      throw new TypeError(`Cannot construct a ${kind}: init needs output and error callbacks`);
    }
    this.#onError = i.error as (error: DOMException) => void;
  }

  /** "unconfigured", "configured" or "closed". */
  get state(): CodecState {
    return this.#state;
  }

  /** Requests not yet started. */
  protected get queueSize(): number {
    return this.#queueSize;
  }

  /** Called once per batch of dequeued requests. */
  get ondequeue(): ((event: Event) => void) | null {
    return this.#ondequeue;
  }
  set ondequeue(handler: ((event: Event) => void) | null) {
    if (this.#ondequeue) this.removeEventListener("dequeue", this.#ondequeue);
    this.#ondequeue = typeof handler === "function" ? handler : null;
    if (this.#ondequeue) this.addEventListener("dequeue", this.#ondequeue);
  }

  /** Throws InvalidStateError unless configured. */
  protected requireConfigured(what: string): void {
    if (this.#state !== "configured") {
      throw new DOMException(
        `Cannot ${what}: the ${this.#kind} is ${this.#state}`,
        "InvalidStateError",
      );
    }
  }

  /** configure()'s state change: closed refuses, anything else becomes configured. */
  protected beginConfigure(): void {
    if (this.#state === "closed") {
      throw new DOMException(`Cannot configure: the ${this.#kind} is closed`, "InvalidStateError");
    }
    this.#state = "configured";
  }

  /** Queues a request that counts in the queue size until it starts. */
  protected enqueueCounted(message: CodecMessage): void {
    this.#queueSize++;
    this.enqueue((epoch) => {
      this.#queueSize--;
      this.#scheduleDequeue();
      return message(epoch);
    });
  }

  /** Queues a control message. */
  protected enqueue(message: CodecMessage): void {
    this.#messages.push(message);
    if (!this.#working) {
      this.#working = true;
      queueMicrotask(() => void this.#work());
    }
  }

  /** A flush: resolves once `message` (queued now) finished, or rejects at a reset or an error. */
  protected enqueueFlush(message: (epoch: number) => Promise<void>): Promise<void> {
    const flush = Promise.withResolvers<void>();
    this.#flushes.add(flush);
    this.enqueue(async (epoch) => {
      await message(epoch);
      if (epoch !== this.#epoch || !this.#flushes.delete(flush)) return;
      this.#fireDequeue(); // a dequeue event due is seen before the flush settles
      flush.resolve();
    });
    return flush.promise;
  }

  async #work(): Promise<void> {
    while (this.#messages.length) {
      const message = this.#messages.shift()!;
      const epoch = this.#epoch;
      try {
        await message(epoch);
      } catch (e) {
        if (epoch === this.#epoch) this.closeWith(asDomException(e, "EncodingError"));
      }
    }
    this.#working = false;
  }

  /** Whether work of `epoch` may still deliver (no reset or close since). */
  protected current(epoch: number): boolean {
    return epoch === this.#epoch && this.#state !== "closed";
  }

  #scheduleDequeue(): void {
    if (this.#dequeueScheduled) return;
    this.#dequeueScheduled = true;
    queueMicrotask(() => this.#fireDequeue());
  }

  #fireDequeue(): void {
    if (!this.#dequeueScheduled) return;
    this.#dequeueScheduled = false;
    this.dispatchEvent(new Event("dequeue"));
  }

  /** Drops what the subclass holds for the configuration (its native codec). */
  protected abstract dropConfiguration(): void;

  /** The spec's Reset: pending work dropped, flushes rejected with `error`. */
  protected resetWith(error: DOMException): void {
    if (this.#state === "closed") {
      throw new DOMException(`Cannot reset: the ${this.#kind} is closed`, "InvalidStateError");
    }
    this.#state = "unconfigured";
    this.#epoch++;
    this.dropConfiguration();
    this.#messages.length = 0;
    if (this.#queueSize > 0) {
      this.#queueSize = 0;
      this.#scheduleDequeue();
    }
    const flushes = [...this.#flushes];
    this.#flushes.clear();
    for (const f of flushes) f.reject(error);
  }

  /** The spec's Close: reset, closed, and the error callback unless the user closed it. */
  protected closeWith(error: DOMException): void {
    if (this.#state === "closed") return;
    this.resetWith(error);
    this.#state = "closed";
    if (error.name !== "AbortError") callBack(() => this.#onError(error));
  }

  /** Cancels everything pending (flushes reject with AbortError); configure() starts again. */
  reset(): void {
    this.resetWith(new DOMException(`The ${this.#kind} was reset`, "AbortError"));
  }

  /** Ends the codec for good; flushes reject with AbortError. */
  close(): void {
    if (this.#state === "closed") {
      throw new DOMException(`Cannot close: the ${this.#kind} is closed`, "InvalidStateError");
    }
    this.closeWith(new DOMException(`The ${this.#kind} was closed`, "AbortError"));
  }
}

/** hardwareAcceleration's values. @ignore */
export const ACCELERATION = ["no-preference", "prefer-hardware", "prefer-software"] as const;

/** Calls a user's callback; what it throws is reported (as a browser does), never the codec's failure. @ignore */
export function callBack(fn: () => void): void {
  try {
    fn();
  } catch (e) {
    reportError(e);
  }
}

/** An error as the DOMException the spec names for it. */
export function asDomException(e: unknown, name: string): DOMException {
  if (e instanceof DOMException) return e;
  return new DOMException(e instanceof Error ? e.message : String(e), name);
}

/** An ASCII-whitespace-stripped codec string; TypeError when nothing is left. @ignore */
export function codecName(what: string, v: unknown): string {
  if (v === undefined) throw new TypeError(`Cannot ${what}: codec is missing`);
  const codec = String(v);
  if (codec.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, "") === "") {
    throw new TypeError(`Cannot ${what}: codec is empty`);
  }
  return codec;
}
