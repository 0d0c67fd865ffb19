/**
 * A failure that retrying cannot fix (malformed object, impossible request): counted and reported,
 * but the key is not requeued. A later change to the object enqueues it again.
 */
export class TerminalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export function isTerminalError(err: unknown): err is TerminalError {
  return err instanceof TerminalError;
}
