import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runtimeChanges } from './diff.js';
import { ids, listener, listenerTls, loadBalancer, member, monitor, placeholderPem, pool, poolTls } from '../../test/support/render-fixtures.js';
import type { AmphoraConfig } from '../domain/amphora-config.js';

const memberChanges = (a: AmphoraConfig, b: AmphoraConfig) => runtimeChanges(a, b)?.members ?? null;

function withMembers(members: ReturnType<typeof member>[], overrides: Partial<AmphoraConfig> = {}): AmphoraConfig {
  return loadBalancer(1, {
    listeners: [listener(1, { defaultPoolId: ids.pool(1) })],
    pools: [pool(1, { monitor: monitor(1), members })],
    ...overrides,
  });
}

test('member additions, removals, weights and admin state are runtime changes, removals first', () => {
  const before = withMembers([member(1), member(2), member(3)]);
  const after = { ...withMembers([member(1, { weight: 5 }), member(3, { enabled: false }), member(4)]), version: 2 };
  assert.deepEqual(memberChanges(before, after), [
    { kind: 'remove', poolId: ids.pool(1), memberId: ids.member(2) },
    { kind: 'add', poolId: ids.pool(1), member: member(4) },
    { kind: 'weight', poolId: ids.pool(1), memberId: ids.member(1), weight: 5 },
    { kind: 'enabled', poolId: ids.pool(1), memberId: ids.member(3), enabled: false },
  ]);
});

test('a member whose address, port, backup flag or monitor target changes is replaced', () => {
  for (const change of [{ address: '10.0.9.9' }, { port: 9999 }, { backup: true }, { monitorAddress: '10.0.8.8' }, { monitorPort: 7000 }]) {
    const changes = memberChanges(withMembers([member(1)]), withMembers([member(1, change)]));
    assert.deepEqual(changes, [
      { kind: 'remove', poolId: ids.pool(1), memberId: ids.member(1) },
      { kind: 'add', poolId: ids.pool(1), member: member(1, change) },
    ], JSON.stringify(change));
  }
});

test('a new version with the same members is an empty runtime change', () => {
  assert.deepEqual(memberChanges(withMembers([member(1)]), { ...withMembers([member(1)]), version: 7 }), []);
});

test('anything but members and the content of listeners\' TLS files needs a reload', () => {
  const base = withMembers([member(1)]);
  assert.equal(memberChanges(base, withMembers([member(1)], { listeners: [listener(1, { port: 81, defaultPoolId: ids.pool(1) })] })), null);
  assert.equal(memberChanges(base, withMembers([member(1)], { pools: [pool(1, { monitor: monitor(1, { delay: 9 }), members: [member(1)] })] })), null);
  assert.equal(memberChanges(base, withMembers([member(1)], { vip: { address: '203.0.113.11', additional: [] } })), null);
  assert.equal(memberChanges(base, withMembers([member(1)], { pools: [pool(1, { monitor: monitor(1), members: [member(1)] }), pool(2)] })), null);
});

const pem = (n: number) => placeholderPem(`CERTIFICATE ${n}`) + placeholderPem('PRIVATE KEY');

function https(tls: Parameters<typeof listenerTls>[0], pools = [pool(1, { members: [member(1)] })]): AmphoraConfig {
  return loadBalancer(1, { listeners: [listener(1, { protocol: 'TERMINATED_HTTPS', port: 443, defaultPoolId: ids.pool(1), tls: listenerTls(tls) })], pools });
}

test('a renewed certificate, CA bundle or CRL in the same slot is swapped at runtime, with members changing alongside', () => {
  const before = https({ certificates: [pem(1), pem(2)], clientAuthentication: 'OPTIONAL', clientCa: pem(3), clientCrl: null });
  const after = https({ certificates: [pem(1), pem(4)], clientAuthentication: 'OPTIONAL', clientCa: pem(5), clientCrl: null }, [pool(1, { members: [member(1), member(2)] })]);
  const changes = runtimeChanges(before, after);
  assert.deepEqual(changes?.tlsFiles.map((f) => [f.name, f.kind, f.pem]), [
    [`${ids.listener(1)}.crt1.pem`, 'cert', pem(4)],
    [`${ids.listener(1)}.client-ca.pem`, 'ca-file', pem(5)],
  ]);
  assert.deepEqual(changes?.members, [{ kind: 'add', poolId: ids.pool(1), member: member(2) }]);
});

test('another number of certificates, a CA where there was none, or a pool\'s TLS material needs a reload', () => {
  const base = https({ certificates: [pem(1)] });
  assert.equal(runtimeChanges(base, https({ certificates: [pem(1), pem(2)] })), null);
  assert.equal(runtimeChanges(base, https({ certificates: [pem(1)], clientAuthentication: 'OPTIONAL', clientCa: pem(3) })), null);
  assert.equal(runtimeChanges(base, https({ certificates: [pem(1)], versions: ['TLSv1.3'] })), null);
  const reencrypting = (certificate: string) => https({ certificates: [pem(1)] }, [pool(1, { tls: poolTls({ certificate }), members: [member(1)] })]);
  assert.equal(runtimeChanges(reencrypting(pem(6)), reencrypting(pem(7))), null);
  assert.deepEqual(runtimeChanges(reencrypting(pem(6)), reencrypting(pem(6))), { members: [], tlsFiles: [] });
});
