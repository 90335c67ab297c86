import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentConnectionError, AgentHttpError } from '../amphora/client.js';
import { failureKind, ownerReason } from './failover-memory.js';

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
    const text = ownerReason(kind);
    assert.doesNotMatch(text, /\d+\.\d+\.\d+\.\d+|\/|[0-9a-f]{8}-[0-9a-f]{4}/);
    assert.match(text, /failover/);
  }
});
