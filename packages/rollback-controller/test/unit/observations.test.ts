import { expect } from 'chai';
import { ProvisioningObservations } from '../../src/rollback/observations.js';

// Uses forgotten in a namespace (EndedUse's cap) were the evidence that could refute an observation
// there: those go, and none is taken there until the claims were listed after that, since a claim
// state older than the forgotten use could hide it. Other namespaces go on: a tenant flooding its
// own namespace does not turn observation off in others'.
describe('ProvisioningObservations', function () {
  const seen = (node: string, podUid: string) => ({ node, podUid, workloadUid: podUid });
  function observations() {
    let sequence = 0;
    let listedAt = 1; // the claims' last list was asked for at 1
    const o = new ProvisioningObservations((mark) => listedAt > mark, () => ++sequence + 1);
    return { o, listClaims: () => (listedAt = ++sequence + 1) };
  }

  it('notes what it sees, and says when it changed', function () {
    const { o } = observations();
    expect(o.note('uid-a', 'tenant', seen('n1', 'p1'))).to.equal('changed');
    expect(o.note('uid-a', 'tenant', seen('n1', 'p1'))).to.equal('same');
    expect(o.note('uid-a', 'tenant', seen('n2', 'p1'))).to.equal('changed');
    expect(o.get('uid-a')).to.deep.equal(seen('n2', 'p1'));
  });

  it('forgetting a namespace drops its observations only, and notes none until the claims are listed again', function () {
    const { o, listClaims } = observations();
    o.note('uid-a', 'tenant', seen('n1', 'p1'));
    o.note('uid-b', 'other', seen('n1', 'p2'));
    expect(o.forgetNamespaces(new Set(['tenant']))).to.equal(1);
    expect(o.get('uid-a')).to.equal(undefined);
    expect(o.get('uid-b'), "another namespace's observation stays").to.deep.equal(seen('n1', 'p2'));
    expect(o.note('uid-a', 'tenant', seen('n1', 'p1')), 'a claim state listed before the forgetting').to.equal('notYet');
    expect(o.note('uid-c', 'other', seen('n1', 'p3')), 'another namespace: observed meanwhile').to.equal('changed');
    expect(o.get('uid-a')).to.equal(undefined);
    listClaims();
    expect(o.note('uid-a', 'tenant', seen('n1', 'p1'))).to.equal('changed');
  });

  it('each namespace waits for a list asked for after its own forgetting', function () {
    const { o, listClaims } = observations();
    o.forgetNamespaces(new Set(['first']));
    listClaims();
    o.forgetNamespaces(new Set(['second']));
    expect(o.note('uid-a', 'first', seen('n1', 'p1')), 'listed since its forgetting').to.equal('changed');
    expect(o.note('uid-b', 'second', seen('n1', 'p2')), 'not listed since').to.equal('notYet');
    listClaims();
    expect(o.note('uid-b', 'second', seen('n1', 'p2'))).to.equal('changed');
  });
});
