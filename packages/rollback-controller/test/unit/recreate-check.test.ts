import { expect } from 'chai';
import { quotaFreedByDelete } from '../../src/rollback/recreate-check.js';

// kube-apiserver's ResourceQuota refusal (plugin/pkg/admission/resourcequota), masked to the
// resources exceeded: the claim's own delete cures it only while the usage is within the limits.
describe('quotaFreedByDelete: a quota refusal of the copy that the delete cures', function () {
  const msg = (used: string, limited: string, requested = 'requests.storage=1Gi'): string => `persistentvolumeclaims "c1-x" is forbidden: exceeded quota: q, requested: ${requested}, used: ${used}, limited: ${limited}`;
  const rows: [string, string, boolean][] = [
    ['at its limit (the claim still counted): cured', msg('requests.storage=5Gi', 'requests.storage=5Gi'), true],
    ['below it, the copy too large only beside the claim: cured', msg('requests.storage=4608Mi', 'requests.storage=5Gi'), true],
    ['over its limit (lowered below what is in use): not cured', msg('requests.storage=8Gi', 'requests.storage=5Gi'), false],
    ['two resources, one over: not cured', msg('persistentvolumeclaims=3,requests.storage=2Gi', 'persistentvolumeclaims=2,requests.storage=5Gi', 'persistentvolumeclaims=1,requests.storage=1Gi'), false],
    ['two resources, both at the limit: cured', msg('persistentvolumeclaims=2,requests.storage=5Gi', 'persistentvolumeclaims=2,requests.storage=5Gi', 'persistentvolumeclaims=1,requests.storage=1Gi'), true],
    ['a figure it cannot read: not cured', msg('requests.storage=lots', 'requests.storage=5Gi'), false],
    ['a resource without a limit named: not cured', msg('requests.storage=1Gi', 'persistentvolumeclaims=2'), false],
    ['not a quota refusal: not cured', 'admission webhook "w" denied the request', false],
  ];
  for (const [what, message, cured] of rows) it(what, () => expect(quotaFreedByDelete(message)).to.equal(cured));
});
