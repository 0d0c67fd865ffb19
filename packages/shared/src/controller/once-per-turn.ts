/**
 * A function that runs `work` once on the next turn of the event loop however often it is called
 * before then: an informer's initial list of N objects, or a relist, costs one walk, not N. Run from
 * a timer, where a throw would end the process, so a throw is handed to `onError` instead.
 */
export function oncePerTurn(work: () => void, onError: (err: unknown) => void): () => void {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    setImmediate(() => {
      queued = false;
      try {
        work();
      } catch (err) {
        onError(err);
      }
    });
  };
}
