/**
 * The TLS settings HAProxy can be given: cipher lists in OpenSSL's cipher-string language, checked
 * against the vocabulary of the OpenSSL HAProxy links (./openssl-ciphers.ts), and protocol versions
 * as the one range HAProxy enables.
 *
 * Why a measured table rather than Node's `tls.getCiphers()`: Node bundles its own OpenSSL, which
 * lists only its default-enabled ciphers, in lowercase (62 names here against the 155 ciphers and
 * 5 TLS 1.3 suites Debian's libssl gives HAProxy), and knows none of the aliases. The table is
 * regenerated from the amphora image's `openssl` and a test fails when it drifts.
 */
import { CipherAliases, DefaultCiphers, LegacyCiphers, OpenSslVersion, Tls13Suites } from './openssl-ciphers.js';

/** Octavia's alphabet for cipher strings, with its error text (WSME prints the pattern). */
export const TLS_CIPHERS_PATTERN = '^[A-Za-z0-9\\-+!:@=_.]*$';
const ALPHABET = new RegExp(TLS_CIPHERS_PATTERN);

const OPENSSL = /OpenSSL \S+/.exec(OpenSslVersion)?.[0] ?? 'OpenSSL';
const CIPHER_BIT = new Map(LegacyCiphers.map((name, i) => [name, 1n << BigInt(i)]));

/** A cipher list as HAProxy takes it: TLS 1.2-and-below ciphers (`ciphers`) and TLS 1.3 suites (`ciphersuites`). */
export interface CipherList {
  readonly legacy: readonly string[];
  readonly tls13: readonly string[];
}

export type Parsed<T> = { readonly ok: T } | { readonly problem: string };

/** The ciphers one `+`-joined selector names (OpenSSL intersects them), or why it names none. */
function selection(selector: string): Parsed<bigint> {
  let selected = -1n;
  for (const name of selector.split('+')) {
    const bits = CIPHER_BIT.get(name) ?? CipherAliases.get(name);
    if (bits === undefined) return { problem: `${name || selector} is not a cipher, cipher alias or TLS 1.3 suite of ${OPENSSL}, which HAProxy uses` };
    selected &= bits;
  }
  return { ok: selected };
}

/**
 * One element of the TLS 1.2-and-below list applied to the ciphers selected so far, as
 * OpenSSL's rule processing does: a bare selector adds, `-` removes, `!` removes for good,
 * `+` only reorders, `@STRENGTH` sorts and `@SECLEVEL=n` sets the security level.
 */
function applyElement(element: string, first: boolean, state: { selected: bigint; killed: bigint }): string | null {
  if (element === 'DEFAULT') {
    if (!first) return 'DEFAULT can only be the first element of a cipher list';
    state.selected = DefaultCiphers;
    return null;
  }
  if (element.startsWith('@')) return element === '@STRENGTH' || /^@SECLEVEL=[0-5]$/.test(element) ? null : `${element} is not an OpenSSL command (@STRENGTH, @SECLEVEL=0 to 5)`;
  const op = '!-+'.includes(element[0]!) ? element[0] : '';
  const s = selection(element.slice(op.length));
  if ('problem' in s) return s.problem;
  if (op === '') state.selected |= s.ok & ~state.killed;
  else if (op === '-' || op === '!') state.selected &= ~s.ok;
  if (op === '!') state.killed |= s.ok;
  return null;
}

/**
 * A cipher list of the API (one colon-separated list, TLS 1.3 suites among the others) checked
 * and split the way HAProxy is given it. Every name must be one OpenSSL knows (it would ignore
 * an unknown one silently), and the TLS 1.2-and-below part, when present, must select at least
 * one cipher (else HAProxy refuses the config).
 */
export function parseCipherList(value: string): Parsed<CipherList> {
  if (!ALPHABET.test(value)) return { problem: 'has characters outside A-Z a-z 0-9 - + ! : @ = _ .' };
  const legacy: string[] = [];
  const tls13: string[] = [];
  const state = { selected: 0n, killed: 0n };
  for (const element of value.split(':').filter((e) => e !== '')) {
    if (Tls13Suites.includes(element)) {
      tls13.push(element);
      continue;
    }
    const problem = applyElement(element, legacy.length === 0, state);
    if (problem) return { problem };
    legacy.push(element);
  }
  if (legacy.length > 0 && state.selected === 0n) return { problem: `${legacy.join(':')} selects no cipher of ${OPENSSL}` };
  return { ok: { legacy, tls13 } };
}

/**
 * The protocol versions HAProxy's OpenSSL speaks (`haproxy -vv`: TLSv1.0 to TLSv1.3), lowest
 * first, by the API's name with HAProxy's spelling. Octavia also lists SSLv3, which OpenSSL 3
 * cannot speak: HAProxy refuses a bind or server left with no version.
 */
export const HaproxyTlsVersions: ReadonlyMap<string, string> = new Map([
  ['TLSv1', 'TLSv1.0'],
  ['TLSv1.1', 'TLSv1.1'],
  ['TLSv1.2', 'TLSv1.2'],
  ['TLSv1.3', 'TLSv1.3'],
]);
const VERSION_ORDER = [...HaproxyTlsVersions.keys()];

/** Why HAProxy cannot be given `versions`: one it cannot speak; or null. */
export function unsupportedTlsVersions(versions: readonly string[]): string | null {
  const unsupported = versions.filter((v) => !HaproxyTlsVersions.has(v));
  return unsupported.length ? `${unsupported.join(', ')} is not spoken by ${OPENSSL}, which HAProxy uses (${VERSION_ORDER.join(', ')})` : null;
}

/**
 * The versions as HAProxy's `ssl-min-ver` and `ssl-max-ver`, or null when they are not one
 * range HAProxy can speak: HAProxy enables versions by minimum and maximum only, so a gap
 * (TLSv1 and TLSv1.2 without TLSv1.1) cannot be configured.
 */
export function tlsVersionRange(versions: readonly string[]): { min: string; max: string } | null {
  const indexes = [...new Set(versions.map((v) => VERSION_ORDER.indexOf(v)))].sort((a, b) => a - b);
  if (!indexes.length || indexes[0]! < 0) return null;
  const [low, high] = [indexes[0]!, indexes[indexes.length - 1]!];
  if (indexes.length !== high - low + 1) return null;
  return { min: HaproxyTlsVersions.get(VERSION_ORDER[low]!)!, max: HaproxyTlsVersions.get(VERSION_ORDER[high]!)! };
}
