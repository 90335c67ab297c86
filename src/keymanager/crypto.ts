/**
 * Encryption at rest: every payload is sealed with AES-256-GCM under the current key, with a
 * fresh 96-bit nonce, and bound to its secret's id (additional data) so a ciphertext copied
 * onto another row does not decrypt. Each sealed payload names its key by a fingerprint, so
 * the key can rotate: new payloads use the new key, old ones still open with a previous key.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export interface Sealed {
  keyId: string;
  nonce: string;
  ciphertext: string;
  tag: string;
}

export class KeyUnavailableError extends Error {}

const KEY_BYTES = 32;
const NONCE_BYTES = 12;

/** Not secret: the first 16 hex digits of the key's SHA-256 tell rows which key sealed them. */
export function keyId(key: Buffer): string {
  return createHash('sha256').update('ostia-key-manager:').update(key).digest('hex').slice(0, 16);
}

function decodeKey(base64: string): Buffer {
  const key = Buffer.from(base64, 'base64');
  if (key.length !== KEY_BYTES) throw new KeyUnavailableError('a key manager encryption key is not the base64 of 32 bytes');
  return key;
}

export class PayloadCipher {
  private readonly current: { id: string; key: Buffer } | null;
  private readonly keys = new Map<string, Buffer>();

  /** `current` empty: this process can neither seal nor open (it was given no key). */
  constructor(current: string, previous: readonly string[] = []) {
    for (const encoded of previous) {
      const key = decodeKey(encoded);
      this.keys.set(keyId(key), key);
    }
    const key = current ? decodeKey(current) : null;
    this.current = key ? { id: keyId(key), key } : null;
    if (this.current) this.keys.set(this.current.id, this.current.key);
  }

  seal(plaintext: Buffer, boundTo: string): Sealed {
    if (!this.current) throw new KeyUnavailableError('no key manager encryption key is configured (keyManager.encryptionKey)');
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, nonce);
    cipher.setAAD(Buffer.from(boundTo, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return { keyId: this.current.id, nonce: nonce.toString('base64'), ciphertext: ciphertext.toString('base64'), tag: cipher.getAuthTag().toString('base64') };
  }

  open(sealed: Sealed, boundTo: string): Buffer {
    const key = this.keys.get(sealed.keyId);
    if (!key)
      throw new KeyUnavailableError(
        `a secret is sealed with key ${sealed.keyId}, which this process does not have: set keyManager.encryptionKey (or previousEncryptionKeys) to the key the api uses`,
      );
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.nonce, 'base64'));
    decipher.setAAD(Buffer.from(boundTo, 'utf8'));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, 'base64')), decipher.final()]);
  }
}
