/** A GitHub-flavoured markdown table; cells are escaped so help texts with '|' stay in their column. */
export function markdownTable(header: string[], rows: string[][]): string {
  const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const line = (cells: string[]): string => `| ${cells.map(cell).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

export function code(s: string): string {
  return s === '' ? '`""`' : `\`${s}\``;
}
