import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { keyId, KeyUnavailableError, PayloadCipher } from './crypto.js';

const key = () => randomBytes(32).toString('base64');

test('a sealed payload opens to the same bytes, with a fresh nonce each time', () => {
  const cipher = new PayloadCipher(key());
  const plain = Buffer.from('-----BEGIN PRIVATE KEY-----\nMIIE…');
  const a = cipher.seal(plain, 'id-1');
  const b = cipher.seal(plain, 'id-1');
  assert.notEqual(a.nonce, b.nonce);
  assert.notEqual(a.ciphertext, b.ciphertext);
  assert.equal(Buffer.from(a.nonce, 'base64').length, 12);
  assert.equal(Buffer.from(a.tag, 'base64').length, 16);
  assert.ok(!Buffer.from(a.ciphertext, 'base64').includes(plain.subarray(0, 16)));
  assert.deepEqual(cipher.open(a, 'id-1'), plain);
});

test('a ciphertext is bound to its secret id and its tag: moved or altered, it does not open', () => {
  const cipher = new PayloadCipher(key());
  const sealed = cipher.seal(Buffer.from('secret'), 'id-1');
  assert.throws(() => cipher.open(sealed, 'id-2'), /unable to authenticate/);
  const flipped = Buffer.from(sealed.ciphertext, 'base64');
  flipped[0]! ^= 1;
  assert.throws(() => cipher.open({ ...sealed, ciphertext: flipped.toString('base64') }, 'id-1'), /unable to authenticate/);
});

test('keys rotate: the new key seals, a previous key still opens what it sealed', () => {
  const [oldKey, newKey] = [key(), key()];
  const before = new PayloadCipher(oldKey).seal(Buffer.from('old'), 'id');
  const rotated = new PayloadCipher(newKey, [oldKey]);
  assert.deepEqual(rotated.open(before, 'id'), Buffer.from('old'));
  const after = rotated.seal(Buffer.from('new'), 'id');
  assert.equal(after.keyId, keyId(Buffer.from(newKey, 'base64')));
  assert.notEqual(after.keyId, before.keyId);
});

test('without the key that sealed it, or any key, the error names the setting and no key material', () => {
  const k = key();
  const sealed = new PayloadCipher(k).seal(Buffer.from('x'), 'id');
  assert.throws(
    () => new PayloadCipher(key()).open(sealed, 'id'),
    (e: Error) => e instanceof KeyUnavailableError && e.message.includes(sealed.keyId) && e.message.includes('keyManager.encryptionKey') && !e.message.includes(k),
  );
  assert.throws(() => new PayloadCipher('').seal(Buffer.from('x'), 'id'), (e: Error) => e instanceof KeyUnavailableError && /keyManager.encryptionKey/.test(e.message));
  assert.throws(() => new PayloadCipher(Buffer.alloc(16).toString('base64')), /not the base64 of 32 bytes/);
});
