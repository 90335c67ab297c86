import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentConnectionError, AgentHttpError } from '../../amphora-client/client.js';
import { failoverOwnerReason, failureKind, ownerFailureReason, refusedChangeCause, refusedChangeReason } from './failures.js';
import { CertificateError } from '../../tls/certificates.js';

test('only a configuration the agent refused is a failure on configuration', () => {
  const refused = new AgentHttpError(400, 'haproxy refused the configuration', "[ALERT] parsing [/var/lib/x/haproxy.cfg:12] : 'ssl-default-bind-ciphers' : unknown cipher", 'PUT /1.0/config');
  assert.equal(failureKind('push-config', refused), 'configuration');
  assert.equal(failureKind('push-config', new AgentHttpError(500, 'reload failed', null, 'PUT /1.0/config')), 'infrastructure');
  assert.equal(failureKind('push-config', new AgentConnectionError('connect ECONNREFUSED 127.80.0.10:9443', 'ECONNREFUSED', true)), 'infrastructure');
  assert.equal(failureKind('wait-for-agent', refused), 'infrastructure');
  assert.equal(failureKind('boot-compute', new Error('spawn failed')), 'infrastructure');
});

test("the owner's reason names no address, path or id", () => {
  for (const kind of ['configuration', 'infrastructure'] as const) {
    const text = failoverOwnerReason(kind);
    assert.doesNotMatch(text, /\d+\.\d+\.\d+\.\d+|\/|[0-9a-f]{8}-[0-9a-f]{4}/);
    assert.match(text, /failover/);
  }
});

test('a change failed without touching the data plane only when the agent answered, or nothing was sent', () => {
  const haproxyC = new AgentHttpError(400, 'haproxy refused the configuration', '[ALERT] parsing [/var/lib/ostia/amphorae/x/haproxy.cfg:12]', 'PUT /1.0/config');
  const reload = new AgentHttpError(500, 'haproxy could not load the configuration', 'cannot bind socket [127.0.0.1:5432]', 'PUT /1.0/config');
  for (const refused of [haproxyC, reload]) {
    const cause = refusedChangeCause('push-config', refused);
    assert.ok(cause);
    assert.doesNotMatch(cause, /\/var|127\.0\.0\.1|ALERT/, 'nothing of the agent\'s detail reaches the owner');
  }
  assert.match(refusedChangeCause('push-config', new CertificateError('https://kms/v1/secrets/1', 'it has expired')) ?? '', /it has expired/);
  assert.equal(refusedChangeCause('push-config', new AgentConnectionError('connect ECONNREFUSED 127.80.0.10:9443', 'ECONNREFUSED', true)), null);
  assert.equal(refusedChangeCause('push-config', new AgentHttpError(409, 'older version', null, 'PUT /1.0/config')), null);
  assert.equal(refusedChangeCause('settle', new Error('database gone')), null);
  assert.ok(refusedChangeCause('verify-certificates', new Error('203.0.113.5:443 served abc, expected def')));
});

test("a failed load balancer's reason names the step and what it means, not the agent's address", () => {
  const unreachable = new AgentConnectionError('connect ECONNREFUSED 127.80.0.10:9443', 'ECONNREFUSED', true);
  const text = ownerFailureReason('push-config', unreachable);
  assert.match(text, /^push-config failed: /);
  assert.doesNotMatch(text, /127\.80|9443/);
  assert.match(ownerFailureReason('boot-compute', new Error('spawn /usr/sbin/haproxy ENOENT')), /could not be started/);
  assert.doesNotMatch(ownerFailureReason('mystery-step', new Error('/etc/secret')), /\/etc/);
});

test('only a change that never reached HAProxy is said to leave the previous configuration serving', () => {
  const refused = new AgentHttpError(400, 'haproxy refused the configuration', null, 'PUT /1.0/config');
  assert.match(refusedChangeReason('push-config', refused) ?? '', /still serves its previous configuration$/);
  const applied = refusedChangeReason('verify-certificates', new Error('203.0.113.5:443 served abc, expected def')) ?? '';
  assert.match(applied, /does not serve its certificates/);
  assert.doesNotMatch(applied, /previous configuration/);
  assert.equal(refusedChangeReason('push-config', new AgentConnectionError('connect ECONNREFUSED 127.80.0.10:9443', 'ECONNREFUSED', true)), null);
});
