/**
 * Splits a byte stream into lines at "\n" and hands each non-empty line over as text. A watch body
 * is one JSON document per line; a chunk may end inside a line, even inside a multi-byte character,
 * so bytes are joined before they are decoded. Cheaper than node:readline on the watch hot path (no
 * regular expression over decoded text, no event per line); a trailing "\r" is left to JSON.parse,
 * which reads it as white space.
 */
export function lineSplitter(onLine: (line: string) => void): { push(chunk: Buffer): void; end(): void } {
  let pending: Buffer[] = [];
  const emit = (bytes: Buffer): void => {
    if (bytes.length > 0) onLine(bytes.toString('utf8'));
  };
  return {
    push(chunk: Buffer): void {
      let start = 0;
      for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
        const piece = chunk.subarray(start, nl);
        emit(pending.length ? Buffer.concat([...pending, piece]) : piece);
        pending = [];
        start = nl + 1;
      }
      if (start < chunk.length) pending.push(chunk.subarray(start));
    },
    /** The stream ended: a last line without "\n" still counts. */
    end(): void {
      if (pending.length) emit(Buffer.concat(pending));
      pending = [];
    },
  };
}
