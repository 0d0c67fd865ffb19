import { expect } from 'chai';
import { parsePrometheusText } from '../../src/prometheus-text.js';

describe('testing: Prometheus text format', function () {
  it('reads samples with and without labels, escaped values and timestamps, skipping comments', function () {
    const text = [
      '# HELP pv_collector_total_pv_count Gauge measuring total number of persistent volumes',
      '# TYPE pv_collector_total_pv_count gauge',
      'pv_collector_total_pv_count{plugin_name="N/A",volume_mode="Filesystem"} 3',
      'retroactive_storageclass_total 0',
      'x{a="say \\"hi\\"",b="back\\\\slash",c="two\\nlines",} 1.5 1700000000000',
      'h_bucket{le="+Inf"} +Inf',
      '',
    ].join('\n');
    expect(parsePrometheusText(text)).to.deep.equal([
      { name: 'pv_collector_total_pv_count', labels: { plugin_name: 'N/A', volume_mode: 'Filesystem' }, value: 3 },
      { name: 'retroactive_storageclass_total', labels: {}, value: 0 },
      { name: 'x', labels: { a: 'say "hi"', b: 'back\\slash', c: 'two\nlines' }, value: 1.5 },
      { name: 'h_bucket', labels: { le: '+Inf' }, value: Infinity },
    ]);
  });

  it('refuses a line it cannot read, so that a format change is not taken for "no series"', function () {
    expect(() => parsePrometheusText('not a sample line at all {')).to.throw(/not a Prometheus sample/);
    expect(() => parsePrometheusText('m{a=unquoted} 1')).to.throw(/unreadable labels/);
  });
});
