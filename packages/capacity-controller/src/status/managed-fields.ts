import type { KubeObject } from '@topovol/shared';

/** A metav1.FieldsV1 set: "f:<field>", "k:<key json>", "v:<value json>", "i:<index>", "." keys. */
export interface FieldSet {
  [key: string]: FieldSet;
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: FieldSet;
}

export function managedFieldsOf(obj: KubeObject): ManagedFieldsEntry[] {
  return obj.metadata?.managedFields ?? [];
}

/** The managedFields entry of a server-side apply manager on the status subresource. */
export function statusApplier(obj: KubeObject, manager: string): ManagedFieldsEntry | undefined {
  return managedFieldsOf(obj).find((m) => m.manager === manager && m.operation === 'Apply' && m.subresource === 'status');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  if (isRecord(a) && isRecord(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => sameJson(a[k], b[k]));
  }
  return false;
}

/** Whether a list item has the key fields of a "k:{...}" entry. */
function matchesKey(item: unknown, key: Record<string, unknown>): boolean {
  return isRecord(item) && Object.entries(key).every(([k, v]) => sameJson(item[k], v));
}

/**
 * The part of value a manager owns, as client-go's Extract* functions rebuild a manager's applied
 * configuration from managedFields: what that manager would have to apply to keep exactly what it
 * has. A field set with no children (a leaf, or an atomic map/list) takes the whole value.
 */
export function extractOwned(value: unknown, fields: FieldSet | undefined): unknown {
  if (!fields) return undefined;
  const keys = Object.keys(fields).filter((k) => k !== '.');
  if (keys.length === 0) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) {
      for (const k of keys) {
        if (k.startsWith('k:') && matchesKey(item, JSON.parse(k.slice(2)) as Record<string, unknown>)) out.push(extractOwned(item, fields[k]));
        else if (k.startsWith('v:') && sameJson(item, JSON.parse(k.slice(2)))) out.push(item);
      }
    }
    return out;
  }
  if (isRecord(value)) {
    const out: Record<string, unknown> = {};
    for (const k of keys) {
      if (!k.startsWith('f:')) continue;
      const name = k.slice(2);
      if (name in value) out[name] = extractOwned(value[name], fields[k]);
    }
    return out;
  }
  return value;
}

/** Whether a field set owns the pool (class, name) under f:status.f:storage. */
export function ownsPool(fields: FieldSet | undefined, storageClassName: string, pool: string): boolean {
  const storage = fields?.['f:status']?.['f:storage'];
  if (!storage) return false;
  for (const [k, entry] of Object.entries(storage)) {
    if (!k.startsWith('k:') || !matchesKey({ storageClassName }, JSON.parse(k.slice(2)) as Record<string, unknown>)) continue;
    const pools = entry['f:pools'];
    if (!pools) return false;
    return Object.keys(pools).some((pk) => pk.startsWith('k:') && matchesKey({ name: pool }, JSON.parse(pk.slice(2)) as Record<string, unknown>));
  }
  return false;
}
