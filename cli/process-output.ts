import { displayText } from '../core/redaction/display-text';

/**
 * The CLI's writes to stdout and stderr. Nothing written is lost: the
 * process ends only after `flushed()`, whatever the stream is (a pipe is
 * written asynchronously, and `process.exit()` would cut it). A reader that
 * goes away (`airlock audit --json | head`) is not an error: later output is
 * dropped and the command ends as it would have.
 */

interface Sink {
  /** The reader is gone or the stream failed; nothing more is written. */
  closed: boolean;
  /** A failure other than the reader going away. */
  failure: Error | undefined;
  /** Settles once everything written so far is handed to the system. */
  written: Promise<void>;
  /** Settles when the stream is closed: no write callback is still to come. */
  readonly gone: Promise<void>;
}

const sinks = new Map<NodeJS.WriteStream, Sink>();

function isBrokenPipe(err: unknown): boolean {
  const code = err !== null && typeof err === 'object' && 'code' in err ? err.code : undefined;
  return code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED';
}

function sinkOf(stream: NodeJS.WriteStream): Sink {
  const known = sinks.get(stream);
  if (known !== undefined) return known;
  const sink: Sink = {
    closed: false,
    failure: undefined,
    written: Promise.resolve(),
    gone: new Promise<void>((resolve) => stream.once('close', () => resolve())),
  };
  // Without a listener a broken pipe is an uncaught exception with a stack trace.
  stream.on('error', (err: Error) => {
    sink.closed = true;
    if (!isBrokenPipe(err)) sink.failure ??= err;
  });
  sinks.set(stream, sink);
  return sink;
}

/** One line as the CLI writes it: control characters shown escaped (newlines kept), and a newline. */
export function lineText(text: string): string {
  return `${displayText(text, { newlines: 'keep' })}\n`;
}

/** Writes `text` and a newline; control characters in it are shown escaped (newlines kept). */
export function writeLine(stream: NodeJS.WriteStream, text: string): void {
  const sink = sinkOf(stream);
  if (sink.closed) return;
  const data = lineText(text);
  const previous = sink.written;
  sink.written = new Promise<void>((resolve) => {
    try {
      stream.write(data, () => resolve());
    } catch (err) {
      sink.closed = true;
      if (!isBrokenPipe(err)) sink.failure ??= err instanceof Error ? err : new Error(String(err));
      resolve();
    }
  }).then(() => previous);
}

/** Watches a stream for a reader that goes away, before anything is written to it. */
export function guardStream(stream: NodeJS.WriteStream): void {
  sinkOf(stream);
}

/** Settles when every write so far is done (or can no longer be); says what failed, if anything did. */
export async function flushed(): Promise<Error | undefined> {
  await Promise.all([...sinks.values()].map((sink) => Promise.race([sink.written, sink.gone])));
  return [...sinks.values()].find((sink) => sink.failure !== undefined)?.failure;
}
