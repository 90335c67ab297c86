/**
 * Configuration injection through the real API: every string and number field of every
 * resource of an amphora load balancer, set to hostile values. Each attempt must end one of two
 * ways: refused with a 400 in Octavia's words that names the field, with no row changed; or
 * accepted, and then the HAProxy file the amphora provider would push (built from the stored rows
 * by buildAmphoraConfig, rendered by renderHaproxyConfig) holds the value as data only — the same
 * directives and words as with a benign value, the value decoding back exactly where the benign
 * one sat — and `haproxy -c` accepts it.
 *
 * The amphora provider runs with compute.driver noop: its API rules and flows are the real ones,
 * nothing is booted, so an attempt costs a request and, when accepted, one render.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LightMyRequestResponse } from 'fastify';
import { VIP_SUBNET_ID } from '../../src/config.js';
import { L7RuleCompareType, L7RuleType } from '../../src/domain/enums.js';
import type { AmphoraConfig } from '../../src/domain/amphora-config.js';
import { renderHaproxyConfig, type HaproxyPaths } from '../../src/amphora-agent/haproxy/render.js';
import { RenderError } from '../../src/amphora-agent/haproxy/encoders.js';
import { tlsFiles, type TlsFileKind } from '../../src/amphora-agent/haproxy/tls-files.js';
import { fetchArgument, parseConfig, WordsError } from '../support/haproxy-words.js';
import { buildAmphoraConfig } from '../../src/providers/amphora/config-builder.js';
import { createTestPki } from '../support/test-pki.js';
import { startHarness, memberA, type Harness } from '../support/harness.js';
import { storeContainer, storeSecret, WITH_KEY_MANAGER } from '../support/tls-secrets.js';
import { notOctaviaError, rowsSnapshot, TREE_TABLES } from './rows.js';
import type { Tally } from './tally.js';
import { scratchPaths } from '../support/render-fixtures.js';

const HAPROXY = '/usr/sbin/haproxy';
const AREA = 'injection';
const MARKER = 'zqmarkerzq';
const MAXCONN = 8000;

/** Spliced into a field's template where the benign value holds MARKER. */
const HOSTILE_UNITS: readonly string[] = [
  ...Array.from({ length: 32 }, (_, c) => String.fromCharCode(c)),
  '\r\n', '\x7f', '\u0085', '\u2028', '\u2029', '\ud800', '\udfff',
  "'", '"', '\\', '#', ' ', '%[src]', '%{+Q}o', '$HOME', '${X}', '{', '}', '(', ')', ',', '-i', '--',
  'x\n    server evil 6.6.6.6:80', 'x\r\nuse_backend evil', '"; http-request deny', 'a b c', '-m reg .*', 'x if TRUE', '} || { always_true',
];
/**
 * A representative share of the units: for the rarer L7 rule combinations, and for every field on
 * PostgreSQL, where an attempt costs three times as much and what differs is storage (NUL, sizes).
 */
const SAMPLE_UNITS = ['\n', '\r\n', '\t', '\0', '\x1b', '\x7f', '\u0085', '\u2028', '"', "'", '\\', '#', ' ', '%[src]', '$HOME', '${X}', 'x if TRUE', '\ud800'];
const UNITS = process.env.OSTIA_TEST_DATABASE_URL ? SAMPLE_UNITS : HOSTILE_UNITS;

/** Whole values of numeric fields, and of the fields that hold a number as text. */
const HOSTILE_NUMBERS: readonly unknown[] = [2 ** 31, 2 ** 31 - 1, 2 ** 53, 1e308, -1, 0, 1.5, 65536, '8', 'NaN', 'Infinity', '-Infinity', '0x10', '1e3', '', true, null];

type Json = Record<string, unknown>;

/** One field of one object: how to set it, a value it accepts, the values to try. */
interface Field {
  readonly name: string;
  /** Words a refusal's faultstring must contain one of. */
  readonly names: readonly string[];
  readonly set: (value: unknown) => Promise<LightMyRequestResponse>;
  /** With MARKER in it when the value lands in the config as text; `hostile` splices each unit there. */
  readonly benign: unknown;
  readonly hostile: readonly Attempt[];
  /** Takes back what an accepted request changed, so the next attempt starts from the same tree. */
  readonly undo: (res: LightMyRequestResponse, benign: unknown) => Promise<void>;
  /** A value may switch lines off (an inserted header set to false). */
  readonly mayRemove?: boolean;
  /** A combination of settings (an L7 rule's type and compare type) the API may refuse as a whole. */
  readonly combination?: boolean;
}

interface Attempt {
  readonly value: unknown;
  /** The text spliced in for MARKER, which must decode back from the rendered file. */
  readonly unit?: string;
}

const splice = (template: string, unit: string): Attempt => ({ value: template.replace(MARKER, unit), unit });

/** Values for a text field: each unit at MARKER, whole replacements, lengths at and over `maxLength`. */
function textAttempts(template: string, maxLength: number, whole: readonly string[] = []): Attempt[] {
  const fill = (n: number) => splice(template, 'a'.repeat(Math.max(0, n - template.length + MARKER.length)));
  return [...UNITS.map((unit) => splice(template, unit)), ...whole.map((value) => ({ value })), fill(maxLength), fill(maxLength + 1), fill(65_536)];
}
const numberAttempts = (): Attempt[] => HOSTILE_NUMBERS.map((value) => ({ value }));
/** Values for a list field: the hostile text alone and after a valid entry. */
const listAttempts = (valid: string): Attempt[] => UNITS.flatMap((unit) => [{ value: [unit] }, { value: [valid, unit] }]);

/** The tree the fields belong to, all of project A. */
interface Tree {
  lb: string;
  http: string;
  tls: string;
  pool: string;
  tlsPool: string;
  member: string;
  monitor: string;
  urlPolicy: string;
  prefixPolicy: string;
  rulePolicy: string;
  rule: string;
}

class Api {
  constructor(readonly h: Harness) {}

  async ok(method: string, url: string, body?: unknown): Promise<Json> {
    const res = await this.h.request(method, url, { body, as: memberA });
    assert.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.body ? (res.json() as Json) : {};
  }

  async created(url: string, root: string, body: Json, lb: string): Promise<string> {
    const id = ((await this.ok('POST', url, { [root]: body }))[root] as Json).id as string;
    assert.equal(await this.h.settled(lb), 'ACTIVE', `after creating ${root}`);
    return id;
  }
}

async function buildTree(api: Api): Promise<Tree> {
  const pki = createTestPki();
  try {
    const leaf = pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'], key: 'ec-p256' });
    const container = await storeContainer(api.h, memberA, { certificate: leaf.certPem, private_key: leaf.keyPem, intermediates: pki.intermediate.certPem });
    const ca = await storeSecret(api.h, memberA, pki.intermediate.certPem + pki.root.certPem, 'ca');
    const lbBody = { vip_subnet_id: VIP_SUBNET_ID, provider: 'amphora', name: 'injection' };
    const lb = ((await api.ok('POST', '/v2/lbaas/loadbalancers', { loadbalancer: lbBody })).loadbalancer as Json).id as string;
    assert.equal(await api.h.settled(lb), 'ACTIVE');
    const http = await api.created('/v2/lbaas/listeners', 'listener', { loadbalancer_id: lb, protocol: 'HTTP', protocol_port: 80 }, lb);
    const tls = await api.created('/v2/lbaas/listeners', 'listener', { loadbalancer_id: lb, protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: container, client_ca_tls_container_ref: ca, client_authentication: 'OPTIONAL', hsts_max_age: 3600 }, lb);
    const pool = await api.created('/v2/lbaas/pools', 'pool', { listener_id: http, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', session_persistence: { type: 'APP_COOKIE', cookie_name: 'SRVID' } }, lb);
    const tlsPool = await api.created('/v2/lbaas/pools', 'pool', { listener_id: tls, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', tls_enabled: true, ca_tls_container_ref: ca }, lb);
    await api.created(`/v2/lbaas/pools/${tlsPool}/members`, 'member', { address: '127.32.0.7', protocol_port: 8443 }, lb);
    const member = await api.created(`/v2/lbaas/pools/${pool}/members`, 'member', { address: '127.32.0.5', protocol_port: 8080, monitor_address: '127.32.0.6', monitor_port: 9000 }, lb);
    const monitor = await api.created('/v2/lbaas/healthmonitors', 'healthmonitor', { pool_id: pool, type: 'HTTP', delay: 5, timeout: 3, max_retries: 2, http_method: 'GET', http_version: 1.1, url_path: '/', domain_name: 'app.example.com', expected_codes: '200' }, lb);
    const urlPolicy = await api.created('/v2/lbaas/l7policies', 'l7policy', { listener_id: http, action: 'REDIRECT_TO_URL', redirect_url: 'https://new.example.com/', rules: [{ type: 'PATH', compare_type: 'STARTS_WITH', value: '/old' }] }, lb);
    const prefixPolicy = await api.created('/v2/lbaas/l7policies', 'l7policy', { listener_id: http, action: 'REDIRECT_PREFIX', redirect_prefix: 'https://static.example.com', rules: [{ type: 'FILE_TYPE', compare_type: 'EQUAL_TO', value: 'jpg' }] }, lb);
    const rulePolicy = await api.created('/v2/lbaas/l7policies', 'l7policy', { listener_id: tls, action: 'REJECT' }, lb);
    const rule = await api.created(`/v2/lbaas/l7policies/${rulePolicy}/rules`, 'rule', { type: 'PATH', compare_type: 'STARTS_WITH', value: '/admin' }, lb);
    return { lb, http, tls, pool, tlsPool, member, monitor, urlPolicy, prefixPolicy, rulePolicy, rule };
  } finally {
    pki.remove();
  }
}

/** Material HAProxy can load in place of the certificates the config names. */
function tlsMaterial(): Record<TlsFileKind, string> {
  const pki = createTestPki();
  try {
    const leaf = pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'], key: 'ec-p256' });
    return { cert: leaf.certPem + pki.intermediate.certPem + leaf.keyPem, 'ca-file': pki.intermediate.certPem + pki.root.certPem, 'crl-file': pki.crl(pki.intermediate).toString() };
  } finally {
    pki.remove();
  }
}

/** `haproxy -c` on rendered files, once per distinct text (most accepted values render the same file). */
class HaproxyCheck {
  private readonly dir = mkdtempSync(join(tmpdir(), 'ostia-security-'));
  private readonly verdicts = new Map<string, Promise<string | null>>();
  private readonly material = tlsMaterial();
  readonly paths: HaproxyPaths = scratchPaths(this.dir);
  private runs = 0;

  constructor() {
    writeFileSync(this.paths.stateFile, '1\n');
    mkdirSync(this.paths.tlsDir);
  }

  /** HAProxy's refusal, or null when it accepts the file. */
  refusal(text: string, config: AmphoraConfig): Promise<string | null> {
    let verdict = this.verdicts.get(text);
    if (!verdict) {
      verdict = this.run(text, config);
      this.verdicts.set(text, verdict);
    }
    return verdict;
  }

  private async run(text: string, config: AmphoraConfig): Promise<string | null> {
    for (const file of tlsFiles(config)) writeFileSync(join(this.paths.tlsDir, file.name), this.material[file.kind]);
    const cfg = join(this.dir, `haproxy-${this.runs++}.cfg`);
    writeFileSync(cfg, text);
    try {
      await promisify(execFile)(HAPROXY, ['-c', '-f', cfg], { encoding: 'utf8', timeout: 60_000 });
      return null;
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string; message: string };
      return `${err.stdout ?? ''}${err.stderr ?? err.message}`.trim().split('\n').filter((l) => /ALERT|error/i.test(l)).join(' | ').slice(0, 400);
    } finally {
      rmSync(cfg, { force: true });
    }
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Starts the reason of a value that kept the file's shape but is not in it as it was sent. */
const ALTERED = 'altered: ';

/** `line i is [...]` for the messages. */
const lineText = (i: number, words: readonly string[]) => `line ${i} ${JSON.stringify(words).slice(0, 200)}`;

/** How often each directive keyword appears. */
function keywordCounts(lines: readonly string[][]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const words of lines) counts.set(words[0]!, (counts.get(words[0]!) ?? 0) + 1);
  return counts;
}

/**
 * Why the hostile render is not the benign one with the value as data, or null. With a spliced
 * unit: word for word the same file, the unit decoding back exactly where the field's marker
 * sat; where `mayRemove`, lines may disappear instead (a header switched off) but none changes.
 * With a whole value (a number, a list, a replacement) the file may differ, but no directive
 * appears more often than with the benign value.
 */
function notAsData(hostile: string[][], benign: string[][], marker: string, unit: string | undefined, mayRemove: boolean): string | null {
  if (unit === undefined) {
    const allowed = keywordCounts(benign);
    for (const [keyword, n] of keywordCounts(hostile)) if (n > (allowed.get(keyword) ?? 0)) return `${n} × ${keyword}, ${allowed.get(keyword) ?? 0} with the benign value`;
    return null;
  }
  if (mayRemove && hostile.length < benign.length) {
    const left = benign.map((w) => JSON.stringify(w));
    for (const [i, words] of hostile.entries()) {
      const at = left.indexOf(JSON.stringify(words));
      if (at < 0) return `${lineText(i, words)} is not a line of the benign file`;
      left.splice(at, 1);
    }
    return null;
  }
  if (hostile.length !== benign.length) return `${hostile.length} directive lines, ${benign.length} with the benign value`;
  for (const [i, words] of hostile.entries()) {
    const before = benign[i]!;
    if (words.length !== before.length || words[0] !== before[0]) return `${lineText(i, words)}, was ${JSON.stringify(before).slice(0, 200)}`;
    const logFormat = words[0] === 'http-request' && words[1] === 'redirect';
    for (const [j, got] of words.entries()) {
      const was = before[j]!;
      const ok = was.includes(marker) ? placedExactly(got, was, marker, unit, logFormat) : got === was;
      if (!ok) return `${ALTERED}line ${i} word ${j} is ${JSON.stringify(got).slice(0, 120)}, expected ${JSON.stringify(unit).slice(0, 60)} as data in ${JSON.stringify(was)}`;
    }
  }
  return null;
}

function placedExactly(got: string, was: string, marker: string, unit: string, logFormat: boolean): boolean {
  if (logFormat) return got === was.replace(marker, unit.replace(/%/g, '%%'));
  if (got === was.replace(marker, unit)) return true;
  // A fetch argument is parsed a second time inside its parentheses.
  try {
    return fetchArgument(got).argument === fetchArgument(was).argument.replace(marker, unit);
  } catch (e) {
    if (e instanceof WordsError) return false;
    throw e;
  }
}

interface Outcome {
  outcome: string;
  failure?: string;
}

class Injector {
  private readonly check = new HaproxyCheck();
  private fields = 0;
  readonly failures: string[] = [];

  constructor(
    private readonly h: Harness,
    private readonly tally: Tally,
    private readonly lb: string,
  ) {}

  /** The file the amphora provider would push now, rendered from the stored rows. */
  private async render(): Promise<{ text: string; config: AmphoraConfig }> {
    const config = await buildAmphoraConfig(this.h.runtime.db.kysely, this.h.runtime.keyManager, this.lb, '0a0a0a0a-0000-4000-8000-000000000001', 1);
    return { text: renderHaproxyConfig(config, this.check.paths, { maxconn: MAXCONN }), config };
  }

  private async parsedRender(): Promise<string[][]> {
    return parseConfig((await this.render()).text);
  }

  async field(f: Field): Promise<void> {
    // A marker of this field alone: earlier fields leave theirs in the tree.
    const marker = `zq${this.fields++}zq`;
    const marked = <T>(v: T): T => JSON.parse(JSON.stringify(v).replaceAll(MARKER, marker)) as T;
    const benignValue = marked(f.benign);
    const benignRes = await f.set(benignValue);
    if (f.combination && benignRes.statusCode === 400) return this.tally.record(AREA, 'refused 400');
    assert.ok(benignRes.statusCode < 300, `${f.name}: the benign value ${JSON.stringify(benignValue)} is refused: ${benignRes.body}`);
    assert.equal(await this.h.settled(this.lb), 'ACTIVE', `${f.name}: the benign value`);
    const benign = { words: await this.parsedRender(), marker, value: benignValue };
    await f.undo(benignRes, benignValue);
    for (const attempt of f.hostile) {
      const { outcome, failure } = await this.attempt(f, attempt, benign);
      this.tally.record(AREA, outcome);
      if (failure) this.failures.push(`${f.name} = ${JSON.stringify(attempt.value).slice(0, 60)}: ${failure}`);
    }
  }

  private async attempt(f: Field, attempt: Attempt, benign: { words: string[][]; marker: string; value: unknown }): Promise<Outcome> {
    const before = await rowsSnapshot(this.h, TREE_TABLES);
    const res = await f.set(attempt.value);
    if (res.statusCode === 400) {
      const notOctavia = notOctaviaError(res);
      if (notOctavia) return { outcome: 'refused 400 without Octavia’s body', failure: `refused with ${notOctavia}` };
      const faultstring = res.json().faultstring as string;
      if (!f.names.some((n) => faultstring.includes(n))) return { outcome: 'refused 400 without naming the field', failure: `refused, but the faultstring names none of ${f.names.join(', ')}: ${faultstring.slice(0, 160)}` };
      if ((await rowsSnapshot(this.h, TREE_TABLES)) !== before) return { outcome: 'refused 400 after writing', failure: 'refused, and rows changed' };
      return { outcome: 'refused 400' };
    }
    if (res.statusCode >= 300) return { outcome: `answered ${res.statusCode}`, failure: `answered ${res.statusCode} ${res.body.slice(0, 160)}` };
    try {
      const status = await this.h.settled(this.lb);
      if (status !== 'ACTIVE') return { outcome: 'accepted, provider failed', failure: `accepted, and the load balancer went ${status}` };
      let rendered: { text: string; config: AmphoraConfig };
      try {
        rendered = await this.render();
      } catch (e) {
        if (e instanceof RenderError) return { outcome: 'accepted, renderer refused', failure: `accepted by the API, refused by the renderer: ${e.message.slice(0, 160)}` };
        throw e;
      }
      let words: string[][];
      try {
        words = parseConfig(rendered.text);
      } catch (e) {
        if (e instanceof WordsError) return { outcome: 'accepted, injected', failure: `accepted, and the file does not parse: ${e.message.slice(0, 160)}` };
        throw e;
      }
      const injected = notAsData(words, benign.words, benign.marker, attempt.unit, f.mayRemove ?? false);
      if (injected?.startsWith(ALTERED)) return { outcome: 'accepted, not rendered as sent', failure: `accepted, and ${injected.slice(ALTERED.length)}` };
      if (injected) return { outcome: 'accepted, injected', failure: `accepted, and ${injected}` };
      const refusal = await this.check.refusal(rendered.text, rendered.config);
      if (refusal) return { outcome: 'accepted, haproxy -c refused', failure: `accepted, rendered as data, and haproxy -c refuses it: ${refusal}` };
      return { outcome: 'accepted, rendered as data, haproxy -c passed' };
    } finally {
      await f.undo(res, benign.value);
    }
  }

  close(): void {
    this.check.remove();
  }
}

/** Fields set by PUT on an existing object (`root` its body's envelope). */
function putField(api: Api, lb: string, name: string, url: string, root: string, wrap: (v: unknown) => Json, benign: unknown, hostile: Attempt[], names?: string[]): Field {
  const set = async (value: unknown) => {
    const res = await api.h.request('PUT', url, { body: { [root]: wrap(value) }, as: memberA });
    if (res.statusCode < 300) await api.h.settled(lb);
    return res;
  };
  return {
    name,
    names: names ?? [name.split(' ')[1]!],
    benign,
    hostile,
    set,
    undo: async (res, value) => {
      if (res.statusCode >= 300) return;
      const back = await set(value);
      assert.ok(back.statusCode < 300, `${name}: cannot set the benign value back: ${back.body}`);
    },
  };
}

/** Fields only a create sets: each accepted attempt's object is deleted again. */
function createField(api: Api, lb: string, name: string, url: string, root: string, deleteUrl: (id: string) => string, body: (v: unknown) => Json, benign: unknown, hostile: Attempt[], names: string[]): Field {
  return {
    name,
    names,
    benign,
    hostile,
    set: async (value) => {
      const res = await api.h.request('POST', url, { body: { [root]: body(value) }, as: memberA });
      if (res.statusCode < 300) await api.h.settled(lb);
      return res;
    },
    undo: async (res) => {
      if (res.statusCode >= 300) return;
      await api.ok('DELETE', deleteUrl((res.json()[root] as Json).id as string));
      assert.equal(await api.h.settled(lb), 'ACTIVE');
    },
  };
}

const STR_MAX = 255;
const one = (key: string) => (v: unknown) => ({ [key]: v });

/** Name, description and tags of an object: never in the file, so the file must not change at all. */
function labels(api: Api, lb: string, what: string, url: string, root: string, description = true): Field[] {
  const fields = [putField(api, lb, `${what} name`, url, root, one('name'), MARKER, textAttempts(MARKER, STR_MAX))];
  if (description) fields.push(putField(api, lb, `${what} description`, url, root, one('description'), MARKER, textAttempts(MARKER, STR_MAX)));
  fields.push(putField(api, lb, `${what} tags`, url, root, (v) => ({ tags: [v] }), MARKER, textAttempts(MARKER, STR_MAX)));
  return fields;
}

function fields(api: Api, t: Tree): Field[] {
  const lb = t.lb;
  const put = (name: string, url: string, root: string, wrap: (v: unknown) => Json, benign: unknown, hostile: Attempt[], names?: string[]) => putField(api, lb, name, url, root, wrap, benign, hostile, names);
  const listener = (id: string) => `/v2/lbaas/listeners/${id}`;
  const pool = (id: string) => `/v2/lbaas/pools/${id}`;
  const member = `/v2/lbaas/pools/${t.pool}/members/${t.member}`;
  const monitor = `/v2/lbaas/healthmonitors/${t.monitor}`;
  const policy = (id: string) => `/v2/lbaas/l7policies/${id}`;
  const rule = `/v2/lbaas/l7policies/${t.rulePolicy}/rules/${t.rule}`;
  const ciphers = 'ECDHE-ECDSA-AES256-GCM-SHA384';
  // Whole lists: a cipher list holds cipher names only (domain/grammar/tls.ts), so no marker can sit in a benign one.
  const cipherAttempts = [
    ...['TLS_FOO', 'ALL', 'eNULL', '!ALL', 'A'.repeat(2048), `${ciphers}:${'A'.repeat(2048)}`].map((value) => ({ value })),
    ...UNITS.flatMap((unit) => [{ value: unit }, { value: `${ciphers}:${unit}` }]),
  ];
  const timeouts = ['timeout_client_data', 'timeout_member_connect', 'timeout_member_data', 'timeout_tcp_inspect'];
  const listenerNumbers = ['connection_limit', ...timeouts].map((key) => put(`listener ${key}`, listener(t.http), 'listener', one(key), 1000, numberAttempts()));
  const monitorNumbers = ['delay', 'timeout', 'max_retries', 'max_retries_down'].map((key) => put(`healthmonitor ${key}`, monitor, 'healthmonitor', one(key), 3, numberAttempts()));
  return [
    ...labels(api, lb, 'loadbalancer', `/v2/lbaas/loadbalancers/${lb}`, 'loadbalancer'),
    ...labels(api, lb, 'listener', listener(t.http), 'listener'),
    put('listener insert_headers key', listener(t.http), 'listener', (v) => ({ insert_headers: { [String(v)]: 'true' } }), 'X-Forwarded-For', textAttempts(`X-Forwarded-${MARKER}`, STR_MAX), ['insert_headers']),
    { ...put('listener insert_headers value', listener(t.http), 'listener', (v) => ({ insert_headers: { 'X-Forwarded-For': v } }), 'true', textAttempts(`true${MARKER}`, STR_MAX, ['True', 'TRUE', '1', 'yes', 'false']), ['insert_headers']), mayRemove: true },
    put('listener allowed_cidrs', listener(t.http), 'listener', (v) => ({ allowed_cidrs: v }), ['10.0.0.0/8'], [...listAttempts('10.0.0.0/8'), { value: ['10.0.0.0/33'] }, { value: ['fe80::/10%eth0'] }, { value: ['10.0.0.1/8'] }]),
    ...listenerNumbers,
    put('listener hsts_max_age', listener(t.tls), 'listener', one('hsts_max_age'), 3600, numberAttempts()),
    put('listener tls_ciphers', listener(t.tls), 'listener', one('tls_ciphers'), ciphers, cipherAttempts),
    put('listener tls_versions', listener(t.tls), 'listener', one('tls_versions'), ['TLSv1.2'], [...listAttempts('TLSv1.2'), { value: ['SSLv3'] }, { value: ['tlsv1.2'] }], ['TLS versions', 'tls_versions']),
    put('listener alpn_protocols', listener(t.tls), 'listener', one('alpn_protocols'), ['h2'], [...listAttempts('h2'), { value: ['h3'] }, { value: ['spdy/3'] }], ['ALPN protocol', 'alpn_protocols']),
    createField(api, lb, 'listener protocol_port', '/v2/lbaas/listeners', 'listener', listener, (v) => ({ loadbalancer_id: lb, protocol: 'HTTP', protocol_port: v }), 8080, numberAttempts(), ['protocol_port']),
    ...labels(api, lb, 'pool', pool(t.pool), 'pool'),
    put('pool session_persistence cookie_name', pool(t.pool), 'pool', (v) => ({ session_persistence: { type: 'APP_COOKIE', cookie_name: v } }), MARKER, textAttempts(MARKER, STR_MAX), ['cookie_name', 'session_persistence']),
    put('pool lb_algorithm', pool(t.pool), 'pool', one('lb_algorithm'), 'ROUND_ROBIN', textAttempts(`ROUND_ROBIN${MARKER}`, STR_MAX), ['lb_algorithm']),
    put('pool tls_ciphers', pool(t.tlsPool), 'pool', one('tls_ciphers'), ciphers, cipherAttempts),
    put('pool tls_versions', pool(t.tlsPool), 'pool', one('tls_versions'), ['TLSv1.2'], [...listAttempts('TLSv1.2'), { value: ['SSLv3'] }], ['TLS versions', 'tls_versions']),
    put('pool alpn_protocols', pool(t.tlsPool), 'pool', one('alpn_protocols'), ['h2'], [...listAttempts('http/1.1'), { value: ['h3'] }], ['ALPN protocol', 'alpn_protocols']),
    put('member name', member, 'member', one('name'), MARKER, textAttempts(MARKER, STR_MAX)),
    put('member tags', member, 'member', (v) => ({ tags: [v] }), MARKER, textAttempts(MARKER, STR_MAX)),
    put('member weight', member, 'member', one('weight'), 1, numberAttempts()),
    put('member monitor_port', member, 'member', one('monitor_port'), 9000, numberAttempts()),
    put('member monitor_address', member, 'member', one('monitor_address'), '127.32.0.6', textAttempts(`127.32.0.6${MARKER}`, STR_MAX, ['fe80::1%eth0', '[::1]', '127.0.0.1:80', '::ffff:127.0.0.1', '1.2.3', '0x7f.0.0.1'])),
    createField(api, lb, 'member address', `/v2/lbaas/pools/${t.pool}/members`, 'member', (id) => `/v2/lbaas/pools/${t.pool}/members/${id}`, (v) => ({ address: v, protocol_port: 8081 }), '127.32.0.9', textAttempts(`127.32.0.9${MARKER}`, STR_MAX, ['fe80::1%eth0', '[::1]', '127.0.0.1:80', '::ffff:127.0.0.1', '1.2.3', '0x7f.0.0.1']), ['address']),
    createField(api, lb, 'member protocol_port', `/v2/lbaas/pools/${t.pool}/members`, 'member', (id) => `/v2/lbaas/pools/${t.pool}/members/${id}`, (v) => ({ address: '127.32.0.10', protocol_port: v }), 8082, numberAttempts(), ['protocol_port']),
    put('healthmonitor name', monitor, 'healthmonitor', one('name'), MARKER, textAttempts(MARKER, STR_MAX)),
    put('healthmonitor tags', monitor, 'healthmonitor', (v) => ({ tags: [v] }), MARKER, textAttempts(MARKER, STR_MAX)),
    put('healthmonitor url_path', monitor, 'healthmonitor', one('url_path'), `/${MARKER}`, textAttempts(`/${MARKER}`, 2048, ['', 'relative', '//x', '/ok HTTP/1.1\r\nHost: evil'])),
    put('healthmonitor domain_name', monitor, 'healthmonitor', one('domain_name'), `${MARKER}.example`, textAttempts(`${MARKER}.example`, 255, ['', '-a.example', 'a..b'])),
    put('healthmonitor expected_codes', monitor, 'healthmonitor', one('expected_codes'), '200', textAttempts(`200${MARKER}`, 64, ['200-100', '200, 202', '99', '2000', '200-'])),
    put('healthmonitor http_method', monitor, 'healthmonitor', one('http_method'), 'GET', textAttempts(`GET${MARKER}`, STR_MAX, ['get', 'BREW'])),
    put('healthmonitor http_version', monitor, 'healthmonitor', one('http_version'), 1.1, [...numberAttempts(), { value: 2 }, { value: '1.1' }, { value: 1.10000001 }]),
    ...monitorNumbers,
    ...labels(api, lb, 'l7policy', policy(t.urlPolicy), 'l7policy'),
    put('l7policy redirect_url', policy(t.urlPolicy), 'l7policy', one('redirect_url'), `https://a.example/${MARKER}`, textAttempts(`https://a.example/${MARKER}`, 2048, ['javascript:alert(1)', 'https://', '//x', 'https://a.example:99999/', 'https://a b.example/']), ['redirect_url']),
    put('l7policy redirect_prefix', policy(t.prefixPolicy), 'l7policy', one('redirect_prefix'), `https://${MARKER}.example`, textAttempts(`https://${MARKER}.example`, 2048), ['redirect_prefix']),
    put('l7policy redirect_http_code', policy(t.urlPolicy), 'l7policy', one('redirect_http_code'), 301, [...numberAttempts(), { value: 300 }, { value: 399 }], ['redirect_http_code']),
    put('l7policy position', policy(t.prefixPolicy), 'l7policy', one('position'), 2, numberAttempts(), ['position']),
    put('l7rule tags', rule, 'rule', (v) => ({ tags: [v] }), MARKER, textAttempts(MARKER, STR_MAX)),
    ...ruleFields(api, lb, rule),
  ];
}

/** Types whose value is text a request carries; the others take a fixed grammar. */
const RULE_VALUE: Readonly<Record<(typeof L7RuleType)[number], string>> = {
  HOST_NAME: `${MARKER}.example.com`,
  PATH: `/${MARKER}`,
  FILE_TYPE: MARKER,
  HEADER: MARKER,
  COOKIE: MARKER,
  SSL_CONN_HAS_CERT: 'True',
  SSL_VERIFY_RESULT: '0',
  SSL_DN_FIELD: MARKER,
};
const KEYED = new Set(['HEADER', 'COOKIE', 'SSL_DN_FIELD']);

function ruleFields(api: Api, lb: string, url: string): Field[] {
  const out: Field[] = [];
  for (const type of L7RuleType)
    for (const compare of L7RuleCompareType) {
      const value = RULE_VALUE[type];
      const key = KEYED.has(type) ? (type === 'SSL_DN_FIELD' ? 'CN' : 'X-Zq') : null;
      const full = compare === 'EQUAL_TO';
      const units = full ? UNITS : SAMPLE_UNITS;
      const spliced = (template: string) => units.map((unit) => (template.includes(MARKER) ? splice(template, unit) : { value: unit }));
      const valueAttempts = full ? [...spliced(value), splice(value, 'a'.repeat(255 - value.length + MARKER.length)), splice(value, 'a'.repeat(256 - value.length + MARKER.length))] : spliced(value);
      const base = { type, compare_type: compare, key, value };
      const name = `l7rule ${type} ${compare}`;
      out.push({ ...putField(api, lb, `${name} value`, url, 'rule', (v) => ({ ...base, value: v }), value, valueAttempts, ['value', 'L7Rule', 'rule']), combination: true });
      if (key !== null) {
        const keyTemplate = `${key}${MARKER}`;
        out.push({ ...putField(api, lb, `${name} key`, url, 'rule', (v) => ({ ...base, key: v }), keyTemplate, spliced(keyTemplate), ['key', 'L7Rule', 'rule']), combination: true });
      }
    }
  return out;
}

/**
 * Runs every field; returns the failures (empty when every attempt ended as it must). A rule
 * combination the API refuses even with a benign value counts as one refused attempt.
 */
export async function injectionCases(tally: Tally): Promise<string[]> {
  const h = await startHarness({ ...WITH_KEY_MANAGER, api: { enabledProviders: ['noop', 'amphora'], defaultProvider: 'amphora' }, compute: { driver: 'noop' } });
  const api = new Api(h);
  let injector: Injector | undefined;
  try {
    const tree = await buildTree(api);
    injector = new Injector(h, tally, tree.lb);
    for (const f of fields(api, tree)) await injector.field(f);
    return injector.failures;
  } finally {
    injector?.close();
    await h.close();
  }
}
