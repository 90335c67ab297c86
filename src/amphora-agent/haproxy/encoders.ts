/**
 * One encoder per grammar for every value that reaches haproxy.cfg from outside the renderer.
 * Each checks its value against the grammar it may have — the grammars of src/domain/grammar,
 * the very ones the API refuses values with — and returns the text to place, already quoted for
 * HAProxy's line parser; anything else is a RenderError naming the field. The API refused these
 * values first: this is the second wall, so a row written before a validator got stricter (or by
 * a bug) cannot start a new directive — Octavia's 2022 and 2026 injection bugs.
 *
 * HAProxy's line parser (configuration.txt §2.2): words split on spaces, `#` starts a comment,
 * `'…'` quotes strongly, `"…"` weakly (backslash escapes and `$VAR` expansion still apply), and
 * keyword arguments in parentheses are parsed a second time with the same quoting rules.
 */
import { bigIntToIp, ipToBigInt, ipVersion, parseCidr } from '../../domain/net.js';
import { regexProblem } from '../../domain/grammar/pcre-regex.js';
import { unprintableProblem } from '../../domain/grammar/printable.js';
import { parseCipherList, type CipherList } from '../../domain/grammar/tls.js';

export class RenderError extends Error {
  constructor(
    readonly field: string,
    readonly value: unknown,
    readonly reason: string,
  ) {
    super(`cannot render ${field} ${JSON.stringify(value)}: ${reason}`);
    this.name = 'RenderError';
  }
}

function printable(field: string, value: string): string {
  if (typeof value !== 'string') throw new RenderError(field, value, 'not a string');
  const problem = unprintableProblem(value);
  if (problem) throw new RenderError(field, value, problem);
  return value;
}

// Characters that mean nothing to the line parser; any other word is double-quoted.
const BARE_WORD = /^[A-Za-z0-9._/:@+=,~\-]+$/;

/**
 * A printable string as exactly one word. Inside double quotes only `\`, `"` and `$` are
 * special, so escaping those three makes every other character literal.
 */
export function word(field: string, value: string): string {
  printable(field, value);
  if (value === '') return '""';
  if (BARE_WORD.test(value)) return value;
  return `"${value.replace(/[\\"$]/g, '\\$&')}"`;
}

/** An ACL pattern: one word (the renderer puts `--` before it so `-i` stays a pattern). */
export function pattern(field: string, value: string): string {
  return word(field, value);
}

/** A regular expression of the subset both the API's JavaScript and HAProxy's PCRE2 compile. */
export function regex(field: string, value: string): string {
  const problem = regexProblem(printable(field, value));
  if (problem) throw new RenderError(field, value, `is not a regular expression HAProxy compiles: ${problem}`);
  return word(field, value);
}

/**
 * A value placed where HAProxy reads a log-format string (redirect targets): `%` would start a
 * sample fetch such as `%[src]`, so every `%` is doubled into a literal one.
 */
export function logFormatLiteral(field: string, value: string): string {
  return word(field, printable(field, value).replace(/%/g, '%%'));
}

// RFC 7230 tchar: what a header or cookie name may contain.
const HTTP_TOKEN = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/;

export function httpToken(field: string, value: string): string {
  if (!HTTP_TOKEN.test(printable(field, value))) throw new RenderError(field, value, 'is not an HTTP token');
  return value;
}

// X.509 attribute names as Octavia accepts them for SSL_DN_FIELD keys.
const DN_FIELD = /^[A-Za-z][A-Za-z0-9-]*$/;

export function dnField(field: string, value: string): string {
  if (!DN_FIELD.test(printable(field, value))) throw new RenderError(field, value, 'is not a distinguished-name field');
  return value;
}

/**
 * `<fetch>(<argument>)` as one word. The argument is parsed a second time inside the
 * parentheses, where quotes and backslashes are special again (a token may hold `'`), so it
 * is escaped for that level before the whole word is quoted for the first.
 */
export function fetchWithArgument(field: string, fetch: string, argument: string): string {
  return word(field, `${fetch}(${argument.replace(/[\\'"]/g, '\\$&')})`);
}

// Labels of letters, digits, `-` and `_` (Octavia's DOMAIN_NAME allows `_`), optional final dot.
const DOMAIN_NAME = /^(?=.{1,253}\.?$)[A-Za-z0-9_-]{1,63}(?:\.[A-Za-z0-9_-]{1,63})*\.?$/;

export function domainName(field: string, value: string): string {
  if (!DOMAIN_NAME.test(printable(field, value))) throw new RenderError(field, value, 'is not a domain name');
  return value;
}

const CODE_ITEM = /^(\d{3})(?:-(\d{3}))?$/;

/**
 * Octavia's expected_codes (`200`, `200,202`, `200-204`; spaces around commas allowed) as
 * HAProxy's `http-check expect status` list, rebuilt from the numbers it parsed.
 */
export function expectedCodes(field: string, value: string): string {
  const items = printable(field, value)
    .split(',')
    .map((item) => CODE_ITEM.exec(item.replace(/^ +| +$/g, '')));
  const parsed = items.map((m) => {
    if (!m) throw new RenderError(field, value, 'is not a list of status codes or one range');
    const low = Number(m[1]);
    const high = m[2] === undefined ? low : Number(m[2]);
    if (high < low) throw new RenderError(field, value, 'has a range whose end is below its start');
    return low === high ? String(low) : `${low}-${high}`;
  });
  return parsed.join(',');
}

/** An IP address, parsed and written back canonically (IPv6 compressed as RFC 5952 asks). */
export function ipAddress(field: string, value: string): string {
  const version = ipVersion(printable(field, value));
  if (version === 0) throw new RenderError(field, value, 'is not an IP address');
  return bigIntToIp(ipToBigInt(value), version);
}

/** `<ip>:<port>`, with IPv6 in brackets as HAProxy's address parser wants them. */
export function socketAddress(addressField: string, address: string, portField: string, port: number): string {
  return `${hostAddress(addressField, address)}:${integer(portField, port, 1, 65535)}`;
}

/** An address alone where HAProxy also accepts a port (`addr`): IPv6 in brackets. */
export function hostAddress(field: string, address: string): string {
  const ip = ipAddress(field, address);
  return ipVersion(ip) === 6 ? `[${ip}]` : ip;
}

/** A CIDR, parsed and written back with its host bits cleared. */
export function cidr(field: string, value: string): string {
  const parsed = parseCidr(printable(field, value));
  if (!parsed) throw new RenderError(field, value, 'is not a CIDR');
  return `${bigIntToIp(parsed.network, parsed.version)}/${parsed.prefix}`;
}

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** An object id as the API stores it: proxy, server and ACL names are ids, never user names. */
export function uuid(field: string, value: string): string {
  if (typeof value !== 'string' || !CANONICAL_UUID.test(value)) throw new RenderError(field, value, 'is not a lowercase UUID');
  return value;
}

export function integer(field: string, value: number, min: number, max: number): string {
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new RenderError(field, value, `is not an integer in [${min}, ${max}]`);
  return String(value);
}

/** One of a fixed list (enumerations the schema already restricts). */
export function oneOf<T extends string | number>(field: string, value: T, allowed: readonly T[]): T {
  if (!allowed.includes(value)) throw new RenderError(field, value, `is not one of ${allowed.join(', ')}`);
  return value;
}

/** An OpenSSL cipher list (whose alphabet holds no character HAProxy's parser reads), split as HAProxy takes it. */
export function cipherList(field: string, value: string): CipherList {
  const parsed = parseCipherList(printable(field, value));
  if ('problem' in parsed) throw new RenderError(field, value, `is not an OpenSSL cipher list: ${parsed.problem}`);
  return parsed.ok;
}

/** An absolute file path of the amphora's own directory (socket, state and pid files). */
export function absolutePath(field: string, value: string): string {
  if (!printable(field, value).startsWith('/')) throw new RenderError(field, value, 'is not an absolute path');
  return word(field, value);
}
