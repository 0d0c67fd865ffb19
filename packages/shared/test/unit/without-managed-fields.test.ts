import { expect } from 'chai';
import fc from 'fast-check';
import { cutManagedFields, sameCut, withoutManagedFields } from '../../src/client/without-managed-fields.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** What the cut must equal once parsed: every member named managedFields whose value is an array, gone. */
function model(v: Json): Json {
  if (Array.isArray(v)) return v.map(model);
  if (v === null || typeof v !== 'object') return v;
  const out: { [k: string]: Json } = {};
  for (const [k, x] of Object.entries(v)) if (!(k === 'managedFields' && Array.isArray(x))) out[k] = model(x);
  return out;
}

/** Compact JSON with a space after some of its structural commas, colons and brackets. */
function spaced(v: Json, space: () => boolean): string {
  const sp = (): string => (space() ? ' ' : '');
  if (Array.isArray(v)) return `[${sp()}${v.map((x) => spaced(x, space)).join(`,${sp()}`)}]`;
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  return `{${sp()}${Object.entries(v)
    .map(([k, x]) => `${JSON.stringify(k)}:${sp()}${spaced(x, space)}`)
    .join(`,${sp()}`)}}`;
}

// Strings a cut that ignored JSON's escapes or strings would trip on.
const tricky = ['"managedFields":[', ',"managedFields":[1],', ']', '[', '}', '{', '"', '\\', '\\"', '\\\\', 'a\\', '\u2028', 'k:{"type":"Ready"}', '🙂', ''];
const keys = fc.constantFrom('managedFields', 'metadata', 'items', 'fieldsV1', 'f:spec', 'k:{"a":"]"}', 'x"managedFields', 'managedFields"', '\\', 'name');
const leaf: fc.Arbitrary<Json> = fc.oneof(fc.constantFrom(...tricky), fc.string({ unit: 'binary' }), fc.integer(), fc.boolean(), fc.constant(null));
const { value } = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(keys, tie('value'), { maxKeys: 4 }),
  ),
}));

describe('withoutManagedFields', function () {
  const cases: { name: string; text: string; want: string }[] = [
    { name: 'the last member of an object, with the comma before it', text: '{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},"spec":{}}', want: '{"metadata":{"name":"a"},"spec":{}}' },
    { name: 'the first member, with the comma after it', text: '{"managedFields":[{"manager":"m"}],"name":"a"}', want: '{"name":"a"}' },
    { name: 'the only member', text: '{"managedFields":[]}', want: '{}' },
    { name: 'a member in the middle', text: '{"a":1,"managedFields":[1,[2]],"b":2}', want: '{"a":1,"b":2}' },
    { name: 'one in each item of a list page', text: '{"items":[{"metadata":{"name":"a","managedFields":[{}]}},{"metadata":{"name":"b","managedFields":[{}]}}]}', want: '{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}' },
    { name: 'brackets and quotes inside its strings', text: '{"a":1,"managedFields":[{"fieldsV1":{"k:{\\"type\\":\\"]\\"}":{}},"manager":"]\\\\"}],"b":"x"}', want: '{"a":1,"b":"x"}' },
    { name: 'an annotation named managedFields (a string) stays', text: '{"annotations":{"managedFields":"[1]"}}', want: '{"annotations":{"managedFields":"[1]"}}' },
    { name: 'a key that only ends in managedFields stays', text: '{"x\\"managedFields":[1]}', want: '{"x\\"managedFields":[1]}' },
    { name: 'the needle inside a string value stays', text: '{"a":"\\"managedFields\\":[1]"}', want: '{"a":"\\"managedFields\\":[1]"}' },
    { name: 'a key given twice (JSON.parse keeps the last): both go', text: '{"managedFields":[1],"managedFields":[2],"a":1}', want: '{"a":1}' },
    { name: 'a key given twice, alone in its object', text: '{"managedFields":[1],"managedFields":[2]}', want: '{}' },
    { name: 'a key given twice after another member', text: '{"a":1,"managedFields":[1],"managedFields":[2]}', want: '{"a":1}' },
    { name: 'a space before the member: left as sent', text: '{"a":1, "managedFields":[1]}', want: '{"a":1, "managedFields":[1]}' },
    { name: 'a space after one member: the whole text as sent', text: '{"a":{"managedFields":[1]},"b":{"managedFields":[2] }}', want: '{"a":{"managedFields":[1]},"b":{"managedFields":[2] }}' },
    { name: 'members inside the value of a key that only ends in managedFields go', text: '{"x\\"managedFields":[{"managedFields":[1],"a":2}]}', want: '{"x\\"managedFields":[{"a":2}]}' },
    { name: 'an array that never ends: the whole text as sent', text: '{"a":{"managedFields":[1]},"b":{"managedFields":[{"x":"]"}', want: '{"a":{"managedFields":[1]},"b":{"managedFields":[{"x":"]"}' },
    { name: 'a string that never ends: the whole text as sent', text: '{"managedFields":["abc', want: '{"managedFields":["abc' },
  ];
  for (const c of cases) {
    it(c.name, function () {
      expect(withoutManagedFields(c.text)).to.equal(c.want);
    });
  }

  it('a text without the member is returned as it is', function () {
    const text = '{"metadata":{"name":"a"}}';
    expect(withoutManagedFields(text)).to.equal(text);
  });

  it('over random JSON as kube-apiserver writes it (compact), parses to the value without its managedFields arrays', function () {
    fc.assert(
      fc.property(value, (v) => {
        expect(JSON.parse(withoutManagedFields(JSON.stringify(v)))).to.deep.equal(model(v));
      }),
      { numRuns: 2000 },
    );
  });

  it('over random JSON with spaces between some tokens, changes nothing but managedFields arrays (all, some or none of them)', function () {
    // A member with a space before it or after its colon is not cut (a space after the member, which
    // leaves the whole text, is a table row): what matters is that nothing else changes.
    fc.assert(
      fc.property(value, fc.array(fc.boolean(), { minLength: 1, maxLength: 16 }), (v, spaces) => {
        let k = 0;
        const text = spaced(v, () => spaces[k++ % spaces.length]!);
        const got = JSON.parse(withoutManagedFields(text)) as Json;
        expect(model(got)).to.deep.equal(model(v));
      }),
      { numRuns: 2000 },
    );
  });

  it('over every prefix of random JSON (an answer cut short), parses exactly when the prefix does, to the same value less its managedFields', function () {
    fc.assert(
      fc.property(value, (v) => {
        const text = JSON.stringify(v);
        for (let n = 0; n <= text.length; n++) {
          const prefix = text.slice(0, n);
          const parse = (t: string): { ok: true; v: Json } | { ok: false } => {
            try {
              return { ok: true, v: JSON.parse(t) as Json };
            } catch {
              return { ok: false };
            }
          };
          const before = parse(prefix);
          const after = parse(withoutManagedFields(prefix));
          expect(after.ok, prefix).to.equal(before.ok);
          if (before.ok && after.ok) expect(after.v).to.deep.equal(model(before.v));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('cutManagedFields: answers cut unless they name a field manager read', function () {
  const volume = (managers: string[]): string =>
    JSON.stringify({ metadata: { name: 'pv-1', managedFields: managers.map((manager) => ({ manager, operation: 'Update', fieldsV1: { 'f:spec': {} } })) }, spec: {} });
  const rows: { name: string; text: string; cut: boolean | { unlessNaming: string[] }; kept: string[] }[] = [
    { name: 'no cut', text: volume(['topovol-controller-manager']), cut: false, kept: ['topovol-controller-manager'] },
    { name: 'every answer cut', text: volume(['kube-controller-manager']), cut: true, kept: [] },
    { name: 'an answer naming no manager read: cut', text: volume(['topovol-controller-manager', 'kubectl']), cut: { unlessNaming: ['kube-controller-manager'] }, kept: [] },
    { name: 'an answer naming one: kept whole', text: volume(['topovol-controller-manager', 'kube-controller-manager']), cut: { unlessNaming: ['kube-controller-manager'] }, kept: ['topovol-controller-manager', 'kube-controller-manager'] },
    { name: 'named elsewhere in the text (a label): kept, which reads more than needed, never less', text: JSON.stringify({ metadata: { name: 'kube-controller-manager', managedFields: [{ manager: 'kubectl' }] } }), cut: { unlessNaming: ['kube-controller-manager'] }, kept: ['kubectl'] },
  ];
  for (const r of rows) {
    it(r.name, function () {
      const parsed = JSON.parse(cutManagedFields(r.text, r.cut)) as { metadata: { managedFields?: { manager: string }[] } };
      expect((parsed.metadata.managedFields ?? []).map((m) => m.manager)).to.deep.equal(r.kept);
    });
  }

  it('sameCut: alike only when every answer is parsed alike', function () {
    expect(sameCut(true, true)).to.equal(true);
    expect(sameCut(true, false)).to.equal(false);
    expect(sameCut({ unlessNaming: ['a'] }, { unlessNaming: ['a'] })).to.equal(true);
    expect(sameCut({ unlessNaming: ['a'] }, { unlessNaming: ['a', 'b'] })).to.equal(false);
    expect(sameCut({ unlessNaming: ['a'] }, false)).to.equal(false);
    expect(sameCut(true, { unlessNaming: [] })).to.equal(false);
  });
});
