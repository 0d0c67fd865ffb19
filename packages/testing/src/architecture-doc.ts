import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './repo-root.js';

export interface KeyRow {
  /** The key's `kind`, from the first cell (`{ kind: 'claim', ... }`). */
  kind: string;
  /** The second cell without backticks, e.g. `pvc/<ns>/<name>`. */
  keyString: string;
}

/**
 * The key table of one loop's section (`### <loop>`) of docs/architecture.md, so each loop's unit
 * tests can hold the document to its key type and keyString.
 */
export function architectureKeyTable(loop: string, text = readFileSync(path.join(repoRoot(), 'docs', 'architecture.md'), 'utf8')): KeyRow[] {
  const start = text.indexOf(`\n### ${loop}\n`);
  if (start < 0) throw new Error(`docs/architecture.md has no section "### ${loop}"`);
  const end = text.slice(start + 1).search(/\n##/);
  const section = end < 0 ? text.slice(start) : text.slice(start, start + 1 + end);
  const rows: KeyRow[] = [];
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const kind = /kind: '([a-z-]+)'/.exec(cells[1] ?? '')?.[1];
    if (line.startsWith('|') && kind) rows.push({ kind, keyString: (cells[2] ?? '').replace(/`/g, '') });
  }
  return rows;
}
