/** What `p` rejects with; a resolved `p` fails the test ("expected a failure"). */
export async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}
