import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '@topovol/testing';

export interface DivergenceRow {
  scenario: string;
  upstream: string;
  topovol: string;
  why: string;
  upstreamIssue: string;
}

export const DIVERGENCES_DOC = path.join('docs', 'divergences.md');

/**
 * The rows of the scenario table in docs/divergences.md (the table whose first header cell is
 * "Scenario"): the first cell is the scenario's name, exactly as the differential suite names it,
 * optionally in backticks.
 */
export function divergenceRows(text = readFileSync(path.join(repoRoot(), DIVERGENCES_DOC), 'utf8')): DivergenceRow[] {
  const rows: DivergenceRow[] = [];
  let inTable = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith('|')) {
      inTable = false;
      continue;
    }
    const cells = line
      .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim());
    if (cells[0] === 'Scenario') {
      inTable = true;
      continue;
    }
    if (!inTable || /^-+$/.test(cells[0]?.replace(/:/g, '') ?? '')) continue;
    const [scenario = '', upstream = '', topovol = '', why = '', upstreamIssue = ''] = cells.map((c) => c.replace(/\\\|/g, '|'));
    rows.push({ scenario: scenario.replace(/^`|`$/g, ''), upstream, topovol, why, upstreamIssue });
  }
  return rows;
}
