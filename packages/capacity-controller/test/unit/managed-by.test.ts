import { expect } from 'chai';
import { perNodeManagedBy } from '../../src/objects/managed-by.js';

describe('perNodeManagedBy: one managed-by value per node, always a valid label value', function () {
  it('base and node when that fits', function () {
    expect(perNodeManagedBy('topovol-capacity', 'worker-7')).to.equal('topovol-capacity-worker-7');
  });
  it('a hash of the node when the node name is too long, still unique per node', function () {
    const a = perNodeManagedBy('topovol-capacity', `${'x'.repeat(60)}.a.example.com`);
    const b = perNodeManagedBy('topovol-capacity', `${'x'.repeat(60)}.b.example.com`);
    for (const v of [a, b]) expect(v).to.match(/^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$/);
    expect(a).to.not.equal(b);
    expect(a.startsWith('topovol-capacity-')).to.equal(true);
  });
});
