/**
 * Why `s` cannot be one segment of a request path, or undefined: client-go refuses such a name or
 * namespace before any request (rest.Request.Name/Namespace, apimachinery's IsValidPathSegmentName),
 * and so does KubeClient. kube-apiserver decodes the encoded segment before it routes: a read of
 * claim `x/status` answers claim x, an empty node name the node list. An object read or written
 * under a name no object can have would be some other object.
 */
export function pathSegmentProblem(s: string): string | undefined {
  if (s === '') return 'may not be empty';
  if (s === '.' || s === '..') return `may not be '${s}'`;
  if (s.includes('/')) return "may not contain '/'";
  if (s.includes('%')) return "may not contain '%'";
  return undefined;
}

/** A request for an object whose name or namespace no object can have; nothing was sent. */
export class InvalidPathSegmentError extends Error {
  override readonly name = 'InvalidPathSegmentError';

  constructor(what: 'name' | 'namespace', value: string, problem: string) {
    const shown = value.length > 80 ? `${value.slice(0, 80)}…` : value;
    super(`invalid resource ${what} ${JSON.stringify(shown)}: ${problem}`);
  }
}
