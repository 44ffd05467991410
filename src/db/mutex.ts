/** A FIFO lock for async work in this process. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  /** Runs `work` once every earlier `run` has settled; releases even when `work` throws. */
  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}
