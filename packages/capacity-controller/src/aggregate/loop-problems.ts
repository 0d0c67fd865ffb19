import type { Node, StorageClass } from '@topovol/shared';
import type { Problem } from '../problem-reporter.js';
import type { DesiredState } from '../objects/desired-items.js';

/**
 * What a sync found wrong, as problems to report: a class that cannot be published (on the
 * StorageClass), and a node whose storage is counted in no segment (on the Node).
 */
export function loopProblems(
  driverName: string,
  classProblems: DesiredState['problems'],
  storageClass: (name: string) => StorageClass | undefined,
  unsegmented: readonly { node: Node; why: string }[],
): Problem[] {
  return [
    ...classProblems.map((p) => ({
      target: storageClass(p.storageClassName),
      id: `class\u0000${p.storageClassName}\u0000${p.reason}`,
      reason: p.reason,
      message: p.message,
      fields: { storageClass: p.storageClassName },
    })),
    ...unsegmented.map((u) => ({
      target: u.node,
      id: `node\u0000${u.node.metadata?.name ?? ''}`,
      reason: 'NodeWithoutTopology',
      message: `capacity of driver ${driverName} is not tracked for this node: ${u.why}`,
      fields: { node: u.node.metadata?.name, driver: driverName },
    })),
  ];
}
