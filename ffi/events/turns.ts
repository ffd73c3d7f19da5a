// Waits that take turns: a send or publish that must wait for room goes
// behind the ones already waiting, each on a reference of its own to what it
// carries (its caller may release theirs meanwhile).

/** What a turn holds while it waits. */
interface Holdable<T> {
  clone(): T;
  release(): void;
}

/** One queue of turns (a channel's sends, a fan-out's publishes). */
export class Turns {
  /** The last turn (settled, never rejecting), or null when none waits. */
  #tail: Promise<void> | null = null;

  /** Whether a turn waits: a new try must go behind it, not past it. */
  get waiting(): boolean {
    return this.#tail !== null;
  }

  /** Runs `work` on a clone of `item` once every earlier turn ended; its result is this one's. */
  async take<T extends Holdable<T>>(item: T, work: (held: T) => Promise<void>): Promise<void> {
    const held = item.clone();
    const turn = (this.#tail ?? Promise.resolve()).then(() => work(held));
    const tail = turn.catch(() => {});
    this.#tail = tail;
    try {
      await turn;
    } finally {
      held.release();
      if (this.#tail === tail) this.#tail = null;
    }
  }
}
