import { isDnsSubdomain } from '@topovol/shared';
import type { FlagValue, PersistentVolumeClaim } from '@topovol/shared';

/**
 * How a provisioner names the volume it creates for a claim: `<prefix>-<claim uid>`, the uid
 * without dashes and cut to `uuidLength` characters when that is set. external-provisioner's
 * --volume-name-prefix and --volume-name-uuid-length (makeVolumeName in
 * kubernetes-csi/external-provisioner pkg/controller/controller.go); its defaults, `pvc` and
 * uncut, are the in-tree provisioners' name too (getProvisionedVolumeNameForClaim in
 * pkg/controller/volume/persistentvolume).
 */
export interface VolumeNamePattern {
  prefix: string;
  /** Undefined: the whole uid, dashes kept. */
  uuidLength?: number;
}

export const DEFAULT_VOLUME_NAME_PATTERNS: readonly VolumeNamePattern[] = [{ prefix: 'pvc' }];

/** Each name is one live read per selected-node removal: a few, not a catalogue. */
export const MAX_VOLUME_NAME_PATTERNS = 8;

/** A uid without its dashes is 32 hex digits; external-provisioner cuts it, never pads it. */
const UID_HEX_DIGITS = 32;
/** A uid as the API server writes it: 36 characters, dashes kept. */
const SAMPLE_UID = '00000000-0000-0000-0000-000000000000';

/** One flag entry, `prefix` or `prefix:uuid-length`: the pattern, or why not. */
export function parseVolumeNamePattern(entry: string): VolumeNamePattern | string {
  const [prefix = '', length, ...rest] = entry.split(':');
  if (rest.length > 0) return `"${entry}": expected prefix or prefix:uuid-length`;
  // What the provisioner would make of it must be a volume name, for any uid.
  if (!prefix || !isDnsSubdomain(`${prefix}-${SAMPLE_UID}`)) {
    return `"${entry}": the prefix followed by - and a uid is not a valid volume name (a DNS subdomain of at most 253 characters: lower-case letters, digits, '-' and '.')`;
  }
  if (length === undefined) return { prefix };
  const n = /^[0-9]+$/.test(length) ? Number(length) : NaN;
  if (!(n >= 1 && n <= UID_HEX_DIGITS)) return `"${entry}": the uuid length must be a whole number from 1 to ${UID_HEX_DIGITS}`;
  return { prefix, uuidLength: n };
}

/** The flag's entries, or the first reason one is unacceptable. */
export function parseVolumeNamePatterns(entries: readonly string[]): VolumeNamePattern[] | string {
  if (entries.length === 0) return 'at least one prefix is needed (the default is pvc)';
  if (entries.length > MAX_VOLUME_NAME_PATTERNS) return `at most ${MAX_VOLUME_NAME_PATTERNS} entries: each is a live read before every selected-node removal`;
  const patterns: VolumeNamePattern[] = [];
  for (const e of entries) {
    const p = parseVolumeNamePattern(e);
    if (typeof p === 'string') return p;
    patterns.push(p);
  }
  return patterns;
}

/** The flag's parsed value (ManagerOptions.extra); the default when absent (a value that fails to parse never gets past the flag parser). */
export function volumeNamePatternsOf(value: FlagValue | undefined): readonly VolumeNamePattern[] {
  const parsed = Array.isArray(value) ? parseVolumeNamePatterns(value) : undefined;
  return parsed === undefined || typeof parsed === 'string' ? DEFAULT_VOLUME_NAME_PATTERNS : parsed;
}

/** The names, without repeats, that a volume provisioned for the claim would have. None for a claim without a uid. */
export function provisionedVolumeNames(claim: PersistentVolumeClaim, patterns: readonly VolumeNamePattern[] = DEFAULT_VOLUME_NAME_PATTERNS): string[] {
  const uid = claim.metadata?.uid;
  if (!uid) return [];
  const names = patterns.map((p) => `${p.prefix}-${p.uuidLength === undefined ? uid : uid.replace(/-/g, '').slice(0, p.uuidLength)}`);
  return [...new Set(names)];
}
