import { createHash } from 'node:crypto';

/**
 * A UUID in version 5 layout derived from `name` (SHA-256, not SHA-1): the same name always
 * gives the same id, so a resumed job or a repeated look-up finds what the first one made.
 */
export function nameBasedUuid(name: string): string {
  const h = createHash('sha256').update(name).digest('hex');
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
