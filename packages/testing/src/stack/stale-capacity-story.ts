import { Resources } from '@topovol/shared';
import { quantityBytes } from '@topovol/shared';
import { GiB } from '../csi-test-driver/byte-size.js';
import { eventually } from '../eventually.js';
import { claim, delayedClass, podWithClaims } from './stack-objects.js';
import type { StorageStack } from './storage-stack.js';

export const STORY_CLAIMS = ['data-0', 'data-1'] as const;
export const STORY_POD = 'app';

export interface StaleCapacityStory {
  ns: string;
  cls: string;
  /** Published with room for both claims, really has room for one. */
  full: string;
  /** Has room for both, and says so. */
  roomy: string;
}

/**
 * kubernetes/kubernetes#94217 set up on the stack: a class (its own pool) whose capacity was
 * published while `full` had 10Gi and `roomy` 3Gi (every other node none); then something outside
 * Kubernetes takes all of `full` but 1Gi, which its capacity instance only notices on an event or
 * its next poll. The real scheduler sees 10Gi against 3Gi and, scoring by free space
 * (StorageCapacityScoring, beta and on by default in v1.37), sends a pod with two 1Gi claims to
 * `full`; each claim fits the published figure on its own, only one fits the real space.
 */
export async function staleCapacity(stack: StorageStack, story: StaleCapacityStory): Promise<void> {
  const pool = story.cls;
  const figures = new Map(stack.nodes.map((n) => [n.name, n.name === story.full ? 10n * GiB : n.name === story.roomy ? 3n * GiB : 0n]));
  for (const n of stack.nodes) n.setCapacity(figures.get(n.name)!, pool);
  await stack.admin.create(Resources.storageClasses, delayedClass(story.cls, stack.opts.driver, { pool }));
  await eventually(
    async () => {
      stack.requireAllRunning();
      const published = await stack.publishedCapacity(story.cls);
      for (const [node, bytes] of figures) {
        const got = published.get(node)?.capacity;
        if (quantityBytes(got) !== bytes) throw new Error(`capacity of ${story.cls} on ${node} not published yet (${got ?? 'none'})`);
      }
    },
    120_000,
    200,
  );
  stack.node(story.full).setCapacity(1n * GiB, pool);
}

/** The pod with two 1Gi claims of the story's class. */
export async function createStoryPod(stack: StorageStack, story: StaleCapacityStory): Promise<void> {
  for (const c of STORY_CLAIMS) await stack.admin.create(Resources.persistentVolumeClaims, claim(story.ns, c, '1Gi', story.cls));
  await stack.admin.create(Resources.pods, podWithClaims(story.ns, STORY_POD, STORY_CLAIMS));
}
