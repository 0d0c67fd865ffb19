/**
 * Runs `fn` with $POD_NAME and $NAMESPACE set as the downward API sets them in a pod (the capacity
 * loop resolves the owner of its objects from them), then puts both back as they were.
 */
export async function withPodEnv<T>(pod: { name: string; namespace: string }, fn: () => Promise<T>): Promise<T> {
  const saved = { POD_NAME: process.env.POD_NAME, NAMESPACE: process.env.NAMESPACE };
  process.env.POD_NAME = pod.name;
  process.env.NAMESPACE = pod.namespace;
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
