import { expect } from 'chai';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AuditLogTail } from '../../src/audit-log.js';

const event = (id: string): string => JSON.stringify({ auditID: id, stage: 'ResponseComplete', verb: 'get', requestURI: '/', user: { username: 'u' } });

describe('testing: the audit log tail reads only what was appended', function () {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'audit-tail-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('skips what was there when it opened, and keeps a half-written line for the next read', function () {
    const file = path.join(dir, 'audit.log');
    writeFileSync(file, `${event('old')}\n`);
    const tail = new AuditLogTail(file);
    expect(tail.events()).to.deep.equal([]);
    const second = event('b');
    appendFileSync(file, `${event('a')}\n${second.slice(0, 10)}`);
    expect(tail.events().map((e) => e.auditID)).to.deep.equal(['a']);
    appendFileSync(file, `${second.slice(10)}\n`);
    expect(tail.events().map((e) => e.auditID)).to.deep.equal(['a', 'b']);
    expect(tail.events()).to.have.length(2);
  });

  it('waits for a log that does not exist yet', function () {
    const file = path.join(dir, 'later.log');
    const tail = new AuditLogTail(file);
    expect(tail.events()).to.deep.equal([]);
    writeFileSync(file, `${event('first')}\n`);
    expect(tail.events().map((e) => e.auditID)).to.deep.equal(['first']);
  });
});
