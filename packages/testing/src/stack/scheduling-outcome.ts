import type { KubeClient } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import type { Event, Pod } from '@topovol/shared';

/** Why the scheduler left a pod Pending: its PodScheduled=False condition, as `kubectl describe pod` shows it. */
export interface Unschedulable {
  reason: string;
  message: string;
}

export function unschedulable(pod: Pod): Unschedulable | undefined {
  const c = pod.status?.conditions?.find((x) => x.type === 'PodScheduled');
  if (pod.spec?.nodeName || c?.status !== 'False') return undefined;
  return { reason: c.reason ?? '', message: c.message ?? '' };
}

/** The Events about one object (newest last), optionally of one reason: what `kubectl describe` lists. */
export async function eventsAbout(admin: KubeClient, ns: string, kind: string, name: string, reason?: string): Promise<Event[]> {
  const selector = [`involvedObject.name=${name}`, `involvedObject.kind=${kind}`, ...(reason ? [`reason=${reason}`] : [])].join(',');
  const list = await admin.list<Event>(Resources.events, { namespace: ns, fieldSelector: selector });
  const at = (e: Event): string => e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? '';
  return list.items.sort((a, b) => (at(a) < at(b) ? -1 : at(a) > at(b) ? 1 : 0));
}
