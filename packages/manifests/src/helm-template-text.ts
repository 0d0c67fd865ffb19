import { dump } from 'js-yaml';

/**
 * Turns plain manifest objects into Helm template text. The renderers build ordinary objects; the
 * chart renderer puts markers where a value comes from .Values, dumps the objects as YAML like
 * every other generated file, and then swaps each marker for its template action. Three kinds:
 *  - value(expr): a scalar. Alone in a YAML scalar the whole scalar (quotes included) becomes
 *    `{{ expr }}`, so numbers stay numbers; inside a longer string only the marker is replaced.
 *  - block(expr): a mapping/sequence value: `key: <marker>` becomes `key:` + toYaml at the indent.
 *  - optionalBlock(expr, as): as block, but the key is left out when the value is empty (Helm's
 *    `with`), so a default of nothing renders no key at all, as the plain manifests have it. `as`:
 *    'yaml' (toYaml), 'string' (one quoted scalar: a priority class named 1000 stays a string) or
 *    'stringMap' (each value quoted: annotations `true` or `1` stay strings).
 *  - lines(text): a sequence item replaced by raw template lines (e.g. an optional arg), indented
 *    as the item was.
 * Braces already in the objects (Prometheus alert templates) are escaped first, so Helm prints
 * them unchanged.
 */
/** How an optional block renders its value (see HelmTemplateText). */
export type OptionalAs = 'yaml' | 'string' | 'stringMap';

export class HelmTemplateText {
  private readonly values: string[] = [];
  private readonly blocks: string[] = [];
  private readonly lineSets: string[] = [];
  private readonly optionalBlocks: { expr: string; as: OptionalAs }[] = [];

  value(expr: string): string {
    return `@@v${this.values.push(expr) - 1}@@`;
  }

  /** A value for a number/boolean field: typed as unknown so it can stand where a number goes. */
  scalar(expr: string): unknown {
    return this.value(expr);
  }

  block(expr: string): unknown {
    return `@@b${this.blocks.push(expr) - 1}@@`;
  }

  optionalBlock(expr: string, as: OptionalAs = 'yaml'): unknown {
    return `@@o${this.optionalBlocks.push({ expr, as }) - 1}@@`;
  }

  lines(text: string): string {
    return `@@l${this.lineSets.push(text) - 1}@@`;
  }

  /** YAML for the objects (one document each), as Helm template text. */
  yaml(objects: readonly object[]): string {
    const docs = objects.map((o) => dump(o, { lineWidth: -1, noRefs: true, quotingType: '"' }).trimEnd());
    return this.substitute(escapeTemplateBraces(docs.join('\n---\n')));
  }

  private substitute(text: string): string {
    return text
      .replace(/^( *)(- )?"?@@l(\d+)@@"?$/gm, (_m, indent: string, _dash: string | undefined, i: string) =>
        this.lineSets[Number(i)]!.split('\n')
          .map((l) => indent + l)
          .join('\n'),
      )
      .replace(/^( *)([^\s:][^:\n]*): "?@@o(\d+)@@"?$/gm, (_m, indent: string, key: string, i: string) => {
        const { expr, as } = this.optionalBlocks[Number(i)]!;
        const body =
          as === 'string'
            ? [`${key}: {{ . | quote }}`]
            : as === 'stringMap'
              ? [`${key}:`, '  {{- range $k, $v := . }}', '  {{ $k | quote }}: {{ $v | quote }}', '  {{- end }}']
              : [`${key}:`, `  {{- toYaml . | nindent ${indent.length + 2} }}`];
        return [`{{- with ${expr} }}`, ...body, '{{- end }}'].map((l) => indent + l).join('\n');
      })
      .replace(/^( *)([^\s:][^:\n]*): "?@@b(\d+)@@"?$/gm, (_m, indent: string, key: string, i: string) => {
        return `${indent}${key}:\n${indent}  {{- toYaml ${this.blocks[Number(i)]!} | nindent ${indent.length + 2} }}`;
      })
      .replace(/"@@v(\d+)@@"|(?<=: |- )@@v(\d+)@@$/gm, (_m, quoted: string | undefined, plain: string | undefined) => `{{ ${this.values[Number(quoted ?? plain)]!} }}`)
      .replace(/@@v(\d+)@@/g, (_m, i: string) => `{{ ${this.values[Number(i)]!} }}`);
  }
}

/** `{{` in literal text becomes an action printing `{{`, so Helm leaves e.g. `{{ $labels.x }}` as is. */
export function escapeTemplateBraces(text: string): string {
  return text.replace(/\{\{/g, '{{ "{{" }}');
}

/** Applies f to every string in a JSON-like value (objects and arrays are copied). */
export function mapStrings<T>(value: T, f: (s: string) => unknown): T {
  if (typeof value === 'string') return f(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => mapStrings(v, f)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v as unknown, f)])) as T;
  }
  return value;
}
