import type { ProviderChecks } from '../../provider-contract/provider.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isApiError } from '../../domain/errors.js';
import { ovnCapabilities, ovnChecks } from './capabilities.js';

const { rows: OvnCapabilities, requireSupported, unsupported } = ovnCapabilities;

/** The 501 and its faultstring, as the API answers them. */
function refusal(run: () => void): { status: number; message: string } {
  try {
    run();
  } catch (e) {
    if (isApiError(e)) return { status: e.status, message: e.message };
    throw e;
  }
  assert.fail('accepted');
}

const OPTION = "Provider 'ovn' does not support a requested option: ";
const ACTION = "Provider 'ovn' does not support a requested action: ";

const V4_LB = { vip_address: '10.0.0.100', additional_vips: [] };


/** The checks called with only the fields each reads, as these cases give them. */
const checks = ovnChecks as unknown as Record<keyof ProviderChecks, (...args: unknown[]) => void>;

test('L4 protocols, SOURCE_IP_PORT and SOURCE_IP, SOURCE_IP persistence, TCP and UDP-CONNECT monitors pass', () => {
  for (const protocol of ['TCP', 'UDP', 'SCTP']) {
    checks.listener!({ protocol, allowed_cidrs: null });
    for (const lb_algorithm of ['SOURCE_IP_PORT', 'SOURCE_IP']) checks.pool!({ protocol, lb_algorithm, session_persistence: { type: 'SOURCE_IP' } });
  }
  checks.listener!({ protocol: 'TCP', allowed_cidrs: [] });
  for (const type of ['TCP', 'UDP-CONNECT']) checks.healthMonitor!({ type }, {});
  checks.member!({ address: '10.0.0.5', monitor_address: null, monitor_port: null }, V4_LB);
  checks.member!({ address: 'fd00::5' }, { vip_address: '10.0.0.100', additional_vips: [{ ip_address: 'fd00::100' }] });
  checks.memberBatch!([{ address: '10.0.0.5', monitor_address: null, monitor_port: null }]);
  for (const op of ['loadbalancer.create', 'member.batch', 'healthmonitor.delete'] as const) checks.operation!(op);
});

test('the rest is refused with the upstream provider\'s words: options and actions, both 501', () => {
  assert.deepEqual(refusal(() => checks.pool!({ protocol: 'TCP', lb_algorithm: 'ROUND_ROBIN' })), { status: 501, message: `${OPTION}OVN provider does not support ROUND_ROBIN algorithm` });
  assert.deepEqual(refusal(() => checks.listener!({ protocol: 'HTTP' })), { status: 501, message: `${OPTION}OVN provider does not support HTTP protocol` });
  assert.equal(refusal(() => checks.pool!({ protocol: 'PROXY', lb_algorithm: 'SOURCE_IP_PORT' })).message, `${OPTION}OVN provider does not support PROXY protocol`);
  assert.equal(
    refusal(() => checks.pool!({ protocol: 'TCP', lb_algorithm: 'SOURCE_IP_PORT', session_persistence: { type: 'HTTP_COOKIE' } })).message,
    `${OPTION}OVN provider does not support HTTP_COOKIE session persistence. Only SOURCE_IP type is supported.`,
  );
  assert.equal(refusal(() => checks.listener!({ protocol: 'TCP', allowed_cidrs: ['10.0.0.0/8'] })).message, `${OPTION}OVN provider does not support allowed_cidrs option`);
  assert.equal(refusal(() => checks.member!({ address: '10.0.0.5', monitor_port: 9000 }, V4_LB)).message, `${OPTION}OVN Load Balancer does not support different member monitor address or port.`);
  assert.equal(refusal(() => checks.memberBatch!([{ address: '10.0.0.5' }, { address: '10.0.0.6', monitor_address: '10.0.0.7' }])).message, `${OPTION}OVN provider does not support monitor options`);
  assert.equal(
    refusal(() => checks.member!({ address: 'fd00::5' }, V4_LB)).message,
    `${OPTION}OVN provider does not support mixing IPv4/IPv6 configuration within the same Load Balancer.`,
  );
  assert.equal(refusal(() => checks.healthMonitor!({ type: 'HTTP' }, {})).message, `${OPTION}OVN provider does not support HTTP health monitor type. Supported types: UDP-CONNECT, TCP`);
  assert.equal(refusal(() => checks.operation!('loadbalancer.failover')).message, `${OPTION}OVN provider does not support loadbalancer failover`);
  assert.deepEqual(refusal(() => checks.operation!('l7rule.update')), { status: 501, message: `${ACTION}This provider does not support updating l7rules.` });
  assert.equal(refusal(() => checks.l7policy!({}, { protocol: 'TCP' })).message, `${ACTION}This provider does not support creating l7policies.`);
  assert.equal(refusal(() => requireSupported('flavor', 'capabilities')).message, `${ACTION}This provider does not support getting the supported flavor metadata.`);
  assert.equal(refusal(() => requireSupported('availability_zone', 'validate')).message, `${ACTION}This provider does not support validating availability zones.`);
});

test('the skip list a conformance suite reads comes from the same table: every refused value, with its text', () => {
  const list = unsupported();
  assert.ok(list.some((u) => u.feature === 'pool.lb_algorithm' && u.value === 'LEAST_CONNECTIONS' && u.reason === 'OVN provider does not support LEAST_CONNECTIONS algorithm'));
  assert.ok(!list.some((u) => u.feature === 'pool.lb_algorithm' && u.value === 'SOURCE_IP_PORT'));
  assert.equal(list.filter((u) => u.feature === 'healthmonitor.type').length, 5);
  // Every supported value is one the API knows: the table cannot drift from the domain enums.
  for (const c of OvnCapabilities) for (const v of c.supported) assert.ok(c.values.includes(v), `${c.feature} ${v}`);
  assert.throws(() => requireSupported('no.such.feature', 'x'), /no OVN capability no\.such\.feature/);
});
