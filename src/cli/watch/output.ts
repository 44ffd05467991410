/// <reference types="node" preserve="true" />

/**
 * Lines to a stream that may be slow or go away — a pipe into `head -1`, a terminal scrolled back:
 * each write waits until the stream took the previous ones (so nothing piles up in memory), and a
 * reader that went away (EPIPE) calls `onGone` once instead of crashing the process.
 */
export class LineOutput {
  readonly #stream: NodeJS.WritableStream;
  #gone = false;
  #wake: (() => void) | undefined;

  constructor(stream: NodeJS.WritableStream, onGone: () => void, onError: (error: unknown) => void) {
    this.#stream = stream;
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (!this.#gone) {
        this.#gone = true;
        if (error.code !== 'EPIPE') onError(error);
        onGone();
      }
      this.#wake?.();
    });
  }

  /** Whether the reader went away. */
  get gone(): boolean {
    return this.#gone;
  }

  /** Writes `line` and a newline; resolves once the stream can take more (or is gone). */
  async write(line: string): Promise<void> {
    if (this.#gone) return;
    if (this.#stream.write(`${line}\n`)) return;
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
      this.#stream.once('drain', resolve);
    });
    this.#wake = undefined;
  }
}
