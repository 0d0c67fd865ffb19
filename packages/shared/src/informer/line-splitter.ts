/**
 * Splits a byte stream into lines at "\n" and hands each non-empty line over as text. A watch body
 * is one JSON document per line; a chunk may end inside a line, even inside a multi-byte character,
 * so bytes are joined before they are decoded. Cheaper than node:readline on the watch hot path (no
 * regular expression over decoded text, no event per line); a trailing "\r" is left to JSON.parse,
 * which reads it as white space.
 */
export function lineSplitter(onLine: (line: string) => void, limit?: { maxLineBytes: number; onTooLong: () => void }): { push(chunk: Buffer): void; end(): void } {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let tooLong = false;
  const max = limit?.maxLineBytes ?? Infinity;
  const emit = (bytes: Buffer): void => {
    if (bytes.length > 0) onLine(bytes.toString('utf8'));
  };
  // A line is held whole until its "\n": past the limit it is dropped, with everything after it,
  // before it grows into a string V8 cannot make (about 512 MiB), which threw out of the 'data' listener.
  const overflow = (bytes: number): boolean => {
    if (tooLong || bytes <= max) return tooLong;
    tooLong = true;
    pending = [];
    limit?.onTooLong();
    return true;
  };
  return {
    push(chunk: Buffer): void {
      if (tooLong) return;
      let start = 0;
      for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
        const piece = chunk.subarray(start, nl);
        if (overflow(pendingBytes + piece.length)) return;
        emit(pending.length ? Buffer.concat([...pending, piece]) : piece);
        pending = [];
        pendingBytes = 0;
        start = nl + 1;
      }
      if (start < chunk.length) {
        pendingBytes += chunk.length - start;
        if (overflow(pendingBytes)) return;
        pending.push(chunk.subarray(start));
      }
    },
    /** The stream ended: a last line without "\n" still counts. */
    end(): void {
      if (pending.length && !tooLong) emit(Buffer.concat(pending));
      pending = [];
      pendingBytes = 0;
    },
  };
}
