import { expect } from 'chai';
import { enabledExpr, escapeTemplateBraces, HelmTemplateText, mapStrings, valuesKey } from '../../src/index.js';

// The chart's templates are built from plain objects with markers (helm-template-text.ts); these
// cases pin each substitution, so a change that breaks the chart fails here before helm lint does.
describe('manifests: Helm template text', function () {
  const cases: { name: string; build: (t: HelmTemplateText) => object; want: string }[] = [
    { name: 'a value alone in a scalar replaces the whole scalar, quotes included (numbers stay numbers)', build: (t) => ({ spec: { replicas: t.scalar('.Values.replicas') } }), want: 'spec:\n  replicas: {{ .Values.replicas }}' },
    { name: 'a value inside a longer string replaces only the marker', build: (t) => ({ image: `${t.value('.Values.image.repository')}:${t.value('.Values.image.tag')}` }), want: 'image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"' },
    { name: 'a value as a list item', build: (t) => ({ args: ['--a', t.value('.Values.arg')] }), want: 'args:\n  - "--a"\n  - {{ .Values.arg }}' },
    { name: 'a block becomes toYaml at the right indent', build: (t) => ({ spec: { template: { resources: t.block('.Values.resources') } } }), want: 'spec:\n  template:\n    resources:\n      {{- toYaml .Values.resources | nindent 6 }}' },
    {
      name: 'an optional block renders its key only when the value is not empty (Helm `with`)',
      build: (t) => ({ spec: { template: { tolerations: t.optionalBlock('.Values.tolerations'), x: 1 } } }),
      want: 'spec:\n  template:\n    {{- with .Values.tolerations }}\n    tolerations:\n      {{- toYaml . | nindent 6 }}\n    {{- end }}\n    x: 1',
    },
    {
      name: 'an optional string is one quoted scalar (a priority class named 1000 stays a string)',
      build: (t) => ({ spec: { priorityClassName: t.optionalBlock('.Values.priorityClassName', 'string') } }),
      want: 'spec:\n  {{- with .Values.priorityClassName }}\n  priorityClassName: {{ . | quote }}\n  {{- end }}',
    },
    {
      name: 'an optional string map quotes every key and value (annotations "true" or "1" stay strings)',
      build: (t) => ({ metadata: { annotations: t.optionalBlock('.Values.podAnnotations', 'stringMap') } }),
      want: 'metadata:\n  {{- with .Values.podAnnotations }}\n  annotations:\n    {{- range $k, $v := . }}\n    {{ $k | quote }}: {{ $v | quote }}\n    {{- end }}\n  {{- end }}',
    },
    { name: 'lines replace a list item, indented as the item was', build: (t) => ({ args: ['--a', t.lines('{{- if .Values.x }}\n- --x\n{{- end }}')] }), want: 'args:\n  - "--a"\n  {{- if .Values.x }}\n  - --x\n  {{- end }}' },
    {
      // Lines end in a template action without a colon: the key after them is still only its own line.
      name: 'an optional block right after lines keeps its own indent and key',
      build: (t) => ({ spec: { volumes: ['a', t.lines('{{- with .Values.v }}\n- b\n{{- end }}')], tolerations: t.optionalBlock('.Values.tolerations') } }),
      want: 'spec:\n  volumes:\n    - a\n    {{- with .Values.v }}\n    - b\n    {{- end }}\n  {{- with .Values.tolerations }}\n  tolerations:\n    {{- toYaml . | nindent 4 }}\n  {{- end }}',
    },
    {
      name: 'a block right after lines keeps its own indent and key',
      build: (t) => ({ spec: { volumes: ['a', t.lines('{{- end }}')], resources: t.block('.Values.resources') } }),
      want: 'spec:\n  volumes:\n    - a\n    {{- end }}\n  resources:\n    {{- toYaml .Values.resources | nindent 4 }}',
    },
    { name: 'literal braces (alert templates) are escaped so Helm prints them', build: () => ({ summary: '{{ $labels.pod }} is down' }), want: 'summary: "{{ "{{" }} $labels.pod }} is down"' },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const t = new HelmTemplateText();
      expect(t.yaml([c.build(t)])).to.equal(c.want);
    });
  }

  it('several objects become several documents', function () {
    const t = new HelmTemplateText();
    expect(t.yaml([{ a: 1 }, { b: t.scalar('.Values.b') }])).to.equal('a: 1\n---\nb: {{ .Values.b }}');
  });

  it('escapeTemplateBraces leaves text without braces alone', function () {
    expect(escapeTemplateBraces('plain: text')).to.equal('plain: text');
    expect(escapeTemplateBraces('{{x}}')).to.equal('{{ "{{" }}x}}');
  });

  it('mapStrings maps every string, deep, and copies', function () {
    const input = { a: 'x', b: ['y', { c: 'z', n: 1 }], d: null };
    const out = mapStrings(input, (s) => s.toUpperCase());
    expect(out).to.deep.equal({ a: 'X', b: ['Y', { c: 'Z', n: 1 }], d: null });
    expect(input.a).to.equal('x');
  });

  const keys: [string, string][] = [
    ['pv-binder', 'pvBinder'],
    ['zonal-pv-upgrade', 'zonalPvUpgrade'],
    ['capacity', 'capacity'],
    ['rollback', 'rollback'],
  ];
  for (const [name, key] of keys) {
    it(`values key of ${name} is ${key}`, function () {
      expect(valuesKey({ name })).to.equal(key);
      expect(enabledExpr({ name })).to.equal(`.Values.controllers.${key}.enabled`);
    });
  }
});
