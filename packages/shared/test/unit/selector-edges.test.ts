import { expect } from 'chai';
import { labelSelectorMatches } from '../../src/selectors/label-selector.js';
import type { LabelSelector } from '../../src/selectors/label-selector.js';
import { isDnsSubdomain, labelKeyProblem, labelValueProblem } from '../../src/selectors/label-syntax.js';
import { tolerates } from '../../src/selectors/toleration.js';
import type { Taint, Toleration } from '../../src/selectors/toleration.js';
import { nodeSelectorMatches, nodeSelectorNeverMatches, nodeSelectorTermMatches, volumeNodeAffinityMatches } from '../../src/selectors/node-selector.js';
import type { NodeLike, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm } from '../../src/selectors/node-selector.js';

// The selectors that decide which volume a claim may take (a claim's spec.selector) and which
// nodes a volume is reachable from (its spec.nodeAffinity), on the edges a mutation run found no
// unit test held. Semantics of k8s.io/apimachinery/pkg/labels (Requirement.Matches) and
// k8s.io/component-helpers/scheduling/corev1/nodeaffinity.

const labels = { tier: 'gold', zone: 'a', size: '10' };

describe('labelSelectorMatches (a claim\'s spec.selector)', function () {
  const cases: [string, LabelSelector | undefined, Record<string, string> | undefined, boolean][] = [
    ['no selector matches anything', undefined, undefined, true],
    ['an empty selector matches anything', {}, labels, true],
    ['matchLabels: all present and equal', { matchLabels: { tier: 'gold', zone: 'a' } }, labels, true],
    ['matchLabels: one differs', { matchLabels: { tier: 'gold', zone: 'b' } }, labels, false],
    ['matchLabels: one missing', { matchLabels: { rack: '1' } }, labels, false],
    ['matchLabels against no labels', { matchLabels: { tier: 'gold' } }, undefined, false],
    ['In: the value is listed', { matchExpressions: [{ key: 'tier', operator: 'In', values: ['silver', 'gold'] }] }, labels, true],
    ['In: the value is not listed', { matchExpressions: [{ key: 'tier', operator: 'In', values: ['silver'] }] }, labels, false],
    ['In: the key is missing', { matchExpressions: [{ key: 'rack', operator: 'In', values: ['1'] }] }, labels, false],
    ['In: no labels at all', { matchExpressions: [{ key: 'tier', operator: 'In', values: ['gold'] }] }, undefined, false],
    ['NotIn: the value is listed', { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['gold'] }] }, labels, false],
    ['NotIn: the value is not listed', { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['silver'] }] }, labels, true],
    ['NotIn: the key is missing', { matchExpressions: [{ key: 'rack', operator: 'NotIn', values: ['1'] }] }, labels, true],
    ['Exists: present', { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, labels, true],
    ['Exists: present with an empty value', { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, { tier: '' }, true],
    ['Exists: missing', { matchExpressions: [{ key: 'rack', operator: 'Exists' }] }, labels, false],
    ['DoesNotExist: missing', { matchExpressions: [{ key: 'rack', operator: 'DoesNotExist' }] }, labels, true],
    ['DoesNotExist: present', { matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, labels, false],
    // An inherited property is no label.
    ['Exists: a key only on Object.prototype', { matchExpressions: [{ key: 'toString', operator: 'Exists' }] }, labels, false],
    ['DoesNotExist: a key only on Object.prototype', { matchExpressions: [{ key: 'toString', operator: 'DoesNotExist' }] }, labels, true],
    // LabelSelectorAsSelector refuses an unknown operator; a claim with one is never bound to a volume.
    ['an unknown operator matches nothing', { matchExpressions: [{ key: 'tier', operator: 'Equals', values: ['gold'] }] }, labels, false],
    ['requirements are ANDed: the second fails', { matchExpressions: [{ key: 'tier', operator: 'Exists' }, { key: 'zone', operator: 'In', values: ['b'] }] }, labels, false],
    ['requirements are ANDed: every one holds', { matchExpressions: [{ key: 'tier', operator: 'Exists' }, { key: 'zone', operator: 'NotIn', values: ['b'] }, { key: 'rack', operator: 'DoesNotExist' }] }, labels, true],
    ['matchLabels and matchExpressions are ANDed', { matchLabels: { tier: 'gold' }, matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] }, labels, false],
  ];
  for (const [what, selector, l, want] of cases) {
    it(`${what}: ${want ? 'matches' : 'does not match'}`, function () {
      expect(labelSelectorMatches(selector, l)).to.equal(want);
    });
  }
});

const nodeA: NodeLike = { metadata: { name: 'n1', labels } };
const expr = (key: string, operator: string, values?: string[]): NodeSelectorRequirement => ({ key, operator, ...(values ? { values } : {}) });
const term = (...matchExpressions: NodeSelectorRequirement[]): NodeSelectorTerm => ({ matchExpressions });

describe('node selector terms (a volume\'s nodeAffinity.required)', function () {
  const requirements: [string, NodeSelectorRequirement, boolean][] = [
    ['In: listed', expr('zone', 'In', ['b', 'a']), true],
    ['In: not listed', expr('zone', 'In', ['b']), false],
    ['In: label missing', expr('rack', 'In', ['1']), false],
    ['NotIn: listed', expr('zone', 'NotIn', ['a']), false],
    ['NotIn: not listed', expr('zone', 'NotIn', ['b']), true],
    ['NotIn: label missing', expr('rack', 'NotIn', ['1']), true],
    ['Exists: present', expr('zone', 'Exists'), true],
    ['Exists: missing', expr('rack', 'Exists'), false],
    ['DoesNotExist: missing', expr('rack', 'DoesNotExist'), true],
    ['DoesNotExist: present', expr('zone', 'DoesNotExist'), false],
    // Gt and Lt compare integers (Requirement.Matches parses both sides), strictly.
    ['Gt: greater', expr('size', 'Gt', ['9']), true],
    ['Gt: equal', expr('size', 'Gt', ['10']), false],
    ['Gt: smaller', expr('size', 'Gt', ['11']), false],
    ['Gt: a value with a leading zero is still a number', expr('size', 'Gt', ['09']), true],
    ['Lt: smaller', expr('size', 'Lt', ['11']), true],
    ['Lt: equal', expr('size', 'Lt', ['10']), false],
    ['Lt: greater', expr('size', 'Lt', ['9']), false],
    ['Lt: compared as numbers, not as text ("10" < "2" as text)', expr('size', 'Lt', ['2']), false],
    ['Gt: label missing', expr('rack', 'Gt', ['0']), false],
    ['Gt: a label that is not an integer', expr('zone', 'Gt', ['0']), false],
    ['Gt: a value that is not an integer', expr('size', 'Gt', ['x']), false],
    ['Gt: two values', expr('size', 'Gt', ['1', '2']), false],
    ['Gt: no value', expr('size', 'Gt'), false],
    ['an unknown operator', expr('zone', 'Equals', ['a']), false],
    // What labels.NewRequirement refuses makes upstream's term match no node, NotIn included
    // (nodeSelectorRequirementsAsSelector, k8s.io/component-helpers/scheduling/corev1/nodeaffinity).
    ['NotIn: a value that is no label value', expr('zone', 'NotIn', ['a b']), false],
    ['NotIn: no values', expr('zone', 'NotIn'), false],
    ['DoesNotExist: with values', expr('rack', 'DoesNotExist', ['1']), false],
    ['Exists: a key that is no label key', expr('zone!', 'Exists'), false],
    ['Gt: a negative value (an integer, but no label value)', expr('size', 'Gt', ['-5']), false],
  ];
  for (const [what, r, want] of requirements) {
    it(`${what}: ${want ? 'matches' : 'does not match'}`, function () {
      expect(nodeSelectorTermMatches(term(r), nodeA)).to.equal(want);
    });
  }

  it('Gt and Lt read a node value as int64: past its range, neither matches', function () {
    const big = { metadata: { name: 'n1', labels: { size: '9223372036854775808' } } };
    const max = { metadata: { name: 'n1', labels: { size: '9223372036854775807' } } };
    expect(nodeSelectorTermMatches(term(expr('size', 'Gt', ['1'])), big), 'beyond int64').to.equal(false);
    expect(nodeSelectorTermMatches(term(expr('size', 'Lt', ['1'])), big), 'beyond int64').to.equal(false);
    expect(nodeSelectorTermMatches(term(expr('size', 'Gt', ['1'])), max), 'int64 max').to.equal(true);
  });

  it('requirements within a term are ANDed, whichever comes first', function () {
    expect(nodeSelectorTermMatches(term(expr('zone', 'In', ['a']), expr('rack', 'Exists')), nodeA)).to.equal(false);
    expect(nodeSelectorTermMatches(term(expr('rack', 'Exists'), expr('zone', 'In', ['a'])), nodeA)).to.equal(false);
    expect(nodeSelectorTermMatches(term(expr('zone', 'In', ['a']), expr('tier', 'Exists')), nodeA)).to.equal(true);
  });

  it('matchFields: metadata.name only, ANDed with the expressions', function () {
    const byName = (op: string, name: string, key = 'metadata.name'): NodeSelectorTerm => ({ matchFields: [{ key, operator: op, values: [name] }] });
    expect(nodeSelectorTermMatches(byName('In', 'n1'), nodeA), 'In, its name').to.equal(true);
    expect(nodeSelectorTermMatches(byName('In', 'n2'), nodeA), 'In, another name').to.equal(false);
    expect(nodeSelectorTermMatches(byName('NotIn', 'n1'), nodeA), 'NotIn, its name').to.equal(false);
    expect(nodeSelectorTermMatches(byName('NotIn', 'n2'), nodeA), 'NotIn, another name').to.equal(true);
    expect(nodeSelectorTermMatches(byName('In', 'n1', 'metadata.uid'), nodeA), 'a field other than metadata.name').to.equal(false);
    expect(nodeSelectorTermMatches({ ...byName('In', 'n1'), matchExpressions: [expr('zone', 'In', ['b'])] }, nodeA), 'name matches, expression does not').to.equal(false);
    expect(nodeSelectorTermMatches({ ...byName('In', 'n2'), matchExpressions: [expr('zone', 'In', ['a'])] }, nodeA), 'expression matches, name does not').to.equal(false);
    expect(nodeSelectorTermMatches({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }, { key: 'metadata.name', operator: 'NotIn', values: ['n1'] }] }, nodeA), 'two fields, the second fails').to.equal(false);
  });

  it('a term without requirements matches no node (nodeaffinity: "nil or empty term matches no objects")', function () {
    expect(nodeSelectorTermMatches({}, nodeA)).to.equal(false);
    expect(nodeSelectorTermMatches({ matchExpressions: [], matchFields: [] }, nodeA)).to.equal(false);
    expect(nodeSelectorTermMatches({ matchExpressions: [] }, { metadata: { name: 'n1' } })).to.equal(false);
  });

  it('a node without labels: only requirements that need none match', function () {
    const bare: NodeLike = { metadata: { name: 'n1' } };
    expect(nodeSelectorTermMatches(term(expr('zone', 'DoesNotExist')), bare)).to.equal(true);
    expect(nodeSelectorTermMatches(term(expr('zone', 'NotIn', ['a'])), bare)).to.equal(true);
    expect(nodeSelectorTermMatches(term(expr('zone', 'Exists')), bare)).to.equal(false);
  });
});

describe('node selectors and volume node affinity', function () {
  it('terms are ORed: any one matching term is enough, in any position', function () {
    const miss = term(expr('zone', 'In', ['b']));
    const hit = term(expr('zone', 'In', ['a']));
    expect(nodeSelectorMatches({ nodeSelectorTerms: [miss, hit] }, nodeA)).to.equal(true);
    expect(nodeSelectorMatches({ nodeSelectorTerms: [hit, miss] }, nodeA)).to.equal(true);
    expect(nodeSelectorMatches({ nodeSelectorTerms: [miss, {}] }, nodeA)).to.equal(false);
  });

  it('no selector, or no affinity, reaches every node; a selector without terms reaches none', function () {
    expect(nodeSelectorMatches(undefined, nodeA)).to.equal(true);
    expect(volumeNodeAffinityMatches(undefined, nodeA)).to.equal(true);
    expect(volumeNodeAffinityMatches({}, nodeA)).to.equal(true);
    expect(volumeNodeAffinityMatches({ required: { nodeSelectorTerms: [] } }, nodeA)).to.equal(false);
    // Refused by validation, so only from a forged or pre-validation object.
    expect(nodeSelectorMatches({} as NodeSelector, nodeA)).to.equal(false);
  });

  it('nodeSelectorNeverMatches: why a selector reaches no node, or undefined when some node could match', function () {
    const never = (...terms: NodeSelectorTerm[]): string | undefined => nodeSelectorNeverMatches({ nodeSelectorTerms: terms });
    expect(nodeSelectorNeverMatches(undefined), 'no selector').to.equal(undefined);
    expect(nodeSelectorNeverMatches({} as NodeSelector), 'no terms field').to.equal('it has no node selector terms');
    expect(never(), 'no terms').to.equal('it has no node selector terms');
    expect(never({}), 'an empty term').to.equal('term 1 has no requirements');
    expect(never(term(expr('zone', 'In'))), 'In without values').to.equal('term 1: "zone In" lists no values');
    expect(never(term(expr('zone', 'In', ['a']))), 'In with values').to.equal(undefined);
    for (const op of ['Exists', 'DoesNotExist']) expect(never(term(expr('zone', op))), op).to.equal(undefined);
    // What labels.NewRequirement refuses (k8s.io/apimachinery/pkg/labels/selector.go), its term
    // reaching no node in upstream's matcher, though API validation of nodeAffinity lets it through.
    expect(never(term(expr('zone', 'NotIn'))), 'NotIn without values').to.equal('term 1: "zone NotIn" lists no values');
    expect(never(term(expr('zone', 'Exists', ['a']))), 'Exists with values').to.equal('term 1: "zone Exists" lists values');
    expect(never(term(expr('zone', 'NotIn', ['a b']))), 'a value that is no label value').to.match(/^term 1: "zone NotIn": value "a b" must be alphanumerics/);
    expect(never(term(expr('bad key!', 'Exists'))), 'a key that is no label key').to.match(/^term 1: key the name part of "bad key!"/);
    expect(never(term(expr('size', 'Gt', ['9223372036854775808']))), 'Gt beyond int64').to.match(/needs exactly one integer value/);
    expect(never(term(expr('size', 'Gt', ['10']))), 'Gt with an integer').to.equal(undefined);
    // An integer, but no label value (it starts with "-"): refused as upstream refuses it.
    expect(never(term(expr('size', 'Lt', ['-3']))), 'Lt with a negative integer').to.match(/^term 1: "size Lt": value "-3" must be alphanumerics/);
    expect(never(term(expr('size', 'Gt', ['x']))), 'Gt with text').to.equal('term 1: "size Gt" needs exactly one integer value, not ["x"]');
    expect(never(term(expr('size', 'Lt', ['1', '2']))), 'Lt with two values').to.equal('term 1: "size Lt" needs exactly one integer value, not ["1","2"]');
    expect(never(term(expr('size', 'Gt'))), 'Gt without values').to.equal('term 1: "size Gt" needs exactly one integer value, not []');
    expect(never(term(expr('zone', 'Equals', ['a']))), 'an unknown operator').to.equal('term 1: unknown operator "Equals"');
    expect(never({ matchFields: [{ key: 'metadata.uid', operator: 'In', values: ['u'] }] }), 'a field other than metadata.name').to.equal('term 1: matchFields supports only metadata.name, not "metadata.uid"');
    expect(never({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] }), 'metadata.name').to.equal(undefined);
    // One bad requirement spoils its term; one usable term saves the selector.
    expect(never(term(expr('zone', 'In', ['a']), expr('size', 'Gt', ['x']))), 'a good and a bad requirement').to.equal('term 1: "size Gt" needs exactly one integer value, not ["x"]');
    expect(never({}, term(expr('size', 'Gt', ['x']))), 'two bad terms').to.equal('term 1 has no requirements; term 2: "size Gt" needs exactly one integer value, not ["x"]');
    expect(never({}, term(expr('zone', 'Exists'))), 'a bad term, then a good one').to.equal(undefined);
  });
});

describe('label syntax (IsValidLabelValue, IsQualifiedName, IsDNS1123Subdomain)', function () {
  it('label values: at most 63 characters, alphanumeric at both ends', function () {
    expect(labelValueProblem('a'.repeat(63))).to.equal(undefined);
    expect(labelValueProblem('a'.repeat(64))).to.match(/longer than 63 characters/);
    expect(labelValueProblem('a-b_c.d')).to.equal(undefined);
    for (const bad of ['-a', 'a-', 'a b', '.a']) expect(labelValueProblem(bad), bad).to.match(/must be alphanumerics/);
    // The message quotes at most 70 characters of a long value.
    expect(labelValueProblem('x'.repeat(100))).to.equal(`"${'x'.repeat(70)}…" is longer than 63 characters`);
  });

  it('label keys: an optional DNS-subdomain prefix of at most 253 characters, then a name of 1-63', function () {
    const ok = ['zone', 'topology.kubernetes.io/zone', `${'a'.repeat(253)}/x`, 'a'.repeat(63), 'A_b.c-D'];
    for (const k of ok) expect(labelKeyProblem(k), k.slice(0, 20)).to.equal(undefined);
    expect(labelKeyProblem('a/b/c')).to.match(/more than one "\/"/);
    expect(labelKeyProblem(`${'a'.repeat(254)}/x`)).to.match(/prefix .* must be a DNS subdomain/);
    expect(labelKeyProblem('Upper.Case/x')).to.match(/prefix .* must be a DNS subdomain/);
    expect(labelKeyProblem('/x')).to.match(/prefix .* must be a DNS subdomain/);
    for (const k of ['', 'p/', 'a'.repeat(64), 'p/-x', '-x']) expect(labelKeyProblem(k), k.slice(0, 20)).to.match(/name part .* must be 1-63/);
  });

  it('DNS subdomains: at most 253 characters, lower-case labels joined by dots', function () {
    expect(isDnsSubdomain('a'.repeat(253))).to.equal(true);
    expect(isDnsSubdomain('a'.repeat(254))).to.equal(false);
    expect(isDnsSubdomain('a.b-c.d')).to.equal(true);
    for (const bad of ['', 'A', 'a..b', '-a', 'a-', 'a_b']) expect(isDnsSubdomain(bad), bad).to.equal(false);
  });
});

// ToleratesTaint (k8s.io/api/core/v1/toleration.go): an effect, when given, must be the taint's.
describe('tolerations with an effect', function () {
  const cases: [string, Toleration, Taint, boolean][] = [
    ['Exists, the same effect', { key: 'k', operator: 'Exists', effect: 'NoExecute' }, { key: 'k', effect: 'NoExecute' }, true],
    ['Equal, the same effect and value', { key: 'k', operator: 'Equal', value: 'v', effect: 'NoExecute' }, { key: 'k', value: 'v', effect: 'NoExecute' }, true],
    ['Exists, another effect', { key: 'k', operator: 'Exists', effect: 'NoSchedule' }, { key: 'k', effect: 'NoExecute' }, false],
  ];
  for (const [what, t, taint, want] of cases) {
    it(`${what}: ${want ? 'tolerated' : 'not tolerated'}`, function () {
      expect(tolerates(t, taint)).to.equal(want);
    });
  }
});
