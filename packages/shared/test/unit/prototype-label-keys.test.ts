import { expect } from 'chai';
import { labelKeyProblem } from '../../src/selectors/label-syntax.js';
import { labelSelectorMatches, labelValue } from '../../src/selectors/label-selector.js';
import { nodeSelectorMatches } from '../../src/selectors/node-selector.js';
import type { Node } from '../../src/types/wire.js';

// Labels are parsed JSON objects. `constructor`, `toString`, `valueOf` and `hasOwnProperty` are
// valid label keys, and indexed directly an object without them reads Object.prototype's members:
// a node without the label seemed to have it, so a volume whose nodeAffinity says
// "constructor DoesNotExist" matched no node and "constructor Exists" matched every one.
const KEYS = ['constructor', 'toString', 'valueOf', 'hasOwnProperty'];
const node = (labels: Record<string, string>): Node => ({ metadata: { name: 'n', labels } });

describe('label keys named like Object.prototype members', function () {
  for (const key of KEYS) {
    it(`"${key}": absent unless the object has it`, function () {
      expect(labelKeyProblem(key), 'a valid label key').to.equal(undefined);
      expect(labelValue({}, key)).to.equal(undefined);
      expect(labelValue({ [key]: 'v' }, key)).to.equal('v');
      const exists = { nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'Exists' }] }] };
      const absent = { nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'DoesNotExist' }] }] };
      const notIn = { nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'NotIn', values: ['v'] }] }] };
      expect([nodeSelectorMatches(exists, node({})), nodeSelectorMatches(absent, node({})), nodeSelectorMatches(notIn, node({}))]).to.deep.equal([false, true, true]);
      expect([nodeSelectorMatches(exists, node({ [key]: 'v' })), nodeSelectorMatches(absent, node({ [key]: 'v' })), nodeSelectorMatches(notIn, node({ [key]: 'v' }))]).to.deep.equal([true, false, false]);
      expect(labelSelectorMatches({ matchExpressions: [{ key, operator: 'Exists' }] }, {})).to.equal(false);
      expect(labelSelectorMatches({ matchExpressions: [{ key, operator: 'DoesNotExist' }] }, {})).to.equal(true);
    });
  }
});
