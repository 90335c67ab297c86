/**
 * Certificates in the harness's embedded key manager, stored through its Barbican API as a
 * project's member would: PKCS#12 and PEM secrets, certificate containers, read ACLs, and
 * the consumers a listener or pool registers.
 */
import assert from 'node:assert/strict';
import { TEST_KEY } from './keymanager-harness.js';
import type { Caller, Harness } from './harness.js';

/** startHarness overrides: the embedded key manager needs an encryption key. */
export const WITH_KEY_MANAGER = { keyManager: { encryptionKey: TEST_KEY } } as const;

const pathOf = (ref: string) => new URL(ref).pathname;

/** A binary payload (a PKCS#12 bundle, a DER certificate or CRL) or PEM text. */
export async function storeSecret(h: Harness, as: Caller, payload: Buffer | string, name = 'tls'): Promise<string> {
  const body = Buffer.isBuffer(payload)
    ? { name, payload: payload.toString('base64'), payload_content_type: 'application/octet-stream', payload_content_encoding: 'base64' }
    : { name, payload, payload_content_type: 'text/plain' };
  const res = await h.request('POST', '/key-manager/v1/secrets', { as, body });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().secret_ref;
}

/** A certificate container of PEM parts (certificate, private_key, intermediates, private_key_passphrase). */
export async function storeContainer(h: Harness, as: Caller, parts: Record<string, string>): Promise<string> {
  const secretRefs = await Promise.all(Object.entries(parts).map(async ([name, pem]) => ({ name, secret_ref: await storeSecret(h, as, pem, name) })));
  const res = await h.request('POST', '/key-manager/v1/containers', { as, body: { type: 'certificate', name: 'tls', secret_refs: secretRefs } });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().container_ref;
}

/** The secret refs of a container, by part name. */
export async function containerParts(h: Harness, as: Caller, ref: string): Promise<Record<string, string>> {
  const res = await h.request('GET', pathOf(ref), { as });
  assert.equal(res.statusCode, 200, res.body);
  return Object.fromEntries((res.json().secret_refs as Array<{ name: string; secret_ref: string }>).map((s) => [s.name, s.secret_ref]));
}

export async function grantRead(h: Harness, as: Caller, ref: string, users: string[]): Promise<void> {
  const res = await h.request('PUT', `${pathOf(ref)}/acl`, { as, body: { read: { users } } });
  assert.equal(res.statusCode, 200, res.body);
}

export async function deleteSecret(h: Harness, as: Caller, ref: string): Promise<void> {
  const res = await h.request('DELETE', pathOf(ref), { as });
  assert.equal(res.statusCode, 204, res.body);
}

/** Who consumes `ref`, as `<service> <resource type>/<resource id>` (containers record the pair as name and URL). */
export async function consumersOf(h: Harness, as: Caller, ref: string): Promise<string[]> {
  const res = await h.request('GET', `${pathOf(ref)}/consumers`, { as });
  assert.equal(res.statusCode, 200, res.body);
  return (res.json().consumers as Array<Record<string, string>>).map((c) => (c.service ? `${c.service} ${c.resource_type}/${c.resource_id}` : `${c.name} ${c.URL}`)).sort();
}
