/**
 * The figures a Markdown document states (a number with a unit of time, size, rate, share or
 * ratio), so that a test can tell which of the README's and docs' figures docs/benchmarks.md (or
 * the bench's notes, hack/bench/README.md) does not have. A heuristic, not a parser of English: it
 * finds "0.8 s", "977-1,158 MiB", "81%", "0.94x", and in tables a number under a header that ends
 * in a unit ("peak RSS MiB"). Code spans and fenced blocks are skipped (flag names, file names).
 */

export type FigureUnit = 'us' | 'ms' | 's' | 'min' | 'KB' | 'MB' | 'GB' | 'KiB' | 'MiB' | 'GiB' | 'pairs/s' | 'writes/s' | '%' | 'x';

const UNITS: Readonly<Record<string, FigureUnit>> = {
  µs: 'us',
  ms: 'ms',
  s: 's',
  second: 's',
  seconds: 's',
  min: 'min',
  minute: 'min',
  minutes: 'min',
  KB: 'KB',
  MB: 'MB',
  GB: 'GB',
  KiB: 'KiB',
  MiB: 'MiB',
  GiB: 'GiB',
  'pairs/s': 'pairs/s',
  'writes/s': 'writes/s',
  '%': '%',
  x: 'x',
};

const NUMBER = String.raw`\d[\d,]*(?:\.\d+)?`;
const UNIT_ALTERNATIVES = Object.keys(UNITS)
  .sort((a, b) => b.length - a.length)
  .map((u) => u.replace(/[/]/g, '\\/'))
  .join('|');
/** A number, or a range of two, then a unit; not inside a word, a version (v1.2) or a name (k8s-1). */
const FIGURE = new RegExp(String.raw`(?<![\w.\-/])(${NUMBER})(?:\s?[-–]\s?(${NUMBER}))?\s?(${UNIT_ALTERNATIVES})(?![\w/])`, 'g');
const BARE_NUMBER = new RegExp(String.raw`(?<![\w.\-/])${NUMBER}(?![\w/])`, 'g');

export interface DocFigure {
  /** As written: "977-1,158 MiB". */
  text: string;
  /** Each number as written ("977", "1,158"). */
  values: string[];
  unit: FigureUnit;
  /** 1-based line in the document. */
  line: number;
}

/** The text with code spans and fenced code blocks blanked out, line breaks kept. */
function withoutCode(markdown: string): string {
  const blank = (s: string): string => s.replace(/[^\n]/g, ' ');
  return markdown.replace(/^```[\s\S]*?^```/gm, blank).replace(/`[^`\n]*`/g, blank);
}

/** The unit a table header cell names last ("peak RSS MiB", "CPU ms/binding", "p50 / p99 s"). */
function headerUnit(cell: string): FigureUnit | undefined {
  const words = cell.trim().split(/\s+/).reverse();
  for (const w of words) {
    // "ms/binding" is ms; "writes/binding" is no unit.
    const unit = UNITS[w] ?? UNITS[w.split('/')[0]!];
    if (unit) return unit;
  }
  return undefined;
}

const cells = (row: string): string[] => row.trim().replace(/^\|/, '').replace(/\|$/, '').split('|');
const isDivider = (row: string): boolean => /^\s*\|?\s*:?-{3,}/.test(row);

/** Every figure the document states, in order. */
export function figuresIn(markdown: string): DocFigure[] {
  const lines = withoutCode(markdown).split('\n');
  const out: DocFigure[] = [];
  let columns: (FigureUnit | undefined)[] | undefined;
  lines.forEach((text, i) => {
    const isRow = text.trim().startsWith('|');
    if (!isRow) columns = undefined;
    else if (columns === undefined && isDivider(lines[i + 1] ?? '')) {
      columns = cells(text).map(headerUnit);
      return;
    } else if (isDivider(text)) return;
    const parts = isRow && columns ? cells(text) : [text];
    parts.forEach((part, col) => {
      const found = [...part.matchAll(FIGURE)];
      for (const m of found) out.push({ text: m[0], values: [m[1], m[2]].filter((v): v is string => v !== undefined), unit: UNITS[m[3]!]!, line: i + 1 });
      const unit = isRow ? columns?.[col] : undefined;
      if (unit === undefined || found.length > 0) return;
      for (const m of part.matchAll(BARE_NUMBER)) out.push({ text: `${m[0]} ${unit}`, values: [m[0]], unit, line: i + 1 });
    });
  });
  return out;
}

/** The numbers a source states, by unit. */
export type FigureSource = ReadonlyMap<FigureUnit, readonly number[]>;

export function figureSource(...markdown: string[]): FigureSource {
  const by = new Map<FigureUnit, number[]>();
  for (const doc of markdown) {
    for (const f of figuresIn(doc)) {
      const list = by.get(f.unit) ?? [];
      list.push(...f.values.map(toNumber));
      by.set(f.unit, list);
    }
  }
  return by;
}

const toNumber = (v: string): number => Number(v.replace(/,/g, ''));
const decimals = (v: string): number => v.split('.')[1]?.length ?? 0;

/**
 * Whether the source states each of the figure's numbers, in its unit, to the precision the figure
 * is written with (976.7 MiB in the source is "977 MiB" in prose).
 */
export function isSourced(figure: DocFigure, source: FigureSource): boolean {
  const known = source.get(figure.unit) ?? [];
  return figure.values.every((v) => {
    const n = toNumber(v);
    const d = decimals(v);
    return known.some((s) => Number(s.toFixed(d)) === n);
  });
}
